/* quant.c — rows of any element type through dtype.h's codecs, and the plain mat-vec
 * product the reference forward pass and the tests are built on. */
#include "quant.h"

#include <math.h>
#include <string.h>

/* ---- rows ---------------------------------------------------------------------- */

void ember_dequantize_span(ember_dtype type, const void *base, uint64_t first, size_t n, float *dst)
{
    const ember_dtype_info *t = ember_dtype_find(type);
    const uint8_t *b = base;
    if (t->block == 1) {
        t->to_float(b + first * t->bytes, dst, n);
        return;
    }
    /* Whole blocks where the span covers them; a block cut by either end goes through a
     * buffer. */
    float buf[EMBER_DTYPE_MAX_BLOCK];
    while (n > 0) {
        uint64_t blk = first / t->block;
        size_t at = (size_t)(first % t->block), take = t->block - at < n ? t->block - at : n;
        if (at == 0 && take == t->block) {
            size_t whole = n / t->block;
            t->to_float(b + blk * t->bytes, dst, whole);
            take = whole * t->block;
        } else {
            t->to_float(b + blk * t->bytes, buf, 1);
            memcpy(dst, buf + at, take * sizeof *dst);
        }
        first += take, dst += take, n -= take;
    }
}

void ember_dequantize_row(ember_dtype type, const void *src, float *dst, size_t n)
{
    ember_dequantize_span(type, src, 0, n, dst);
}

void ember_quantize_row(ember_dtype type, const float *src, void *dst, size_t n)
{
    const ember_dtype_info *t = ember_dtype_find(type);
    t->from_float(src, dst, n / t->block);
}

/* ---- mat-vec ------------------------------------------------------------------- */

/* dot(elements first..first+n-1 of w, x), accumulated in double: this is the oracle's
 * arithmetic, so it favours accuracy over speed. Works through a small stack buffer so
 * that any element offset (even a Q8_0 row that straddles blocks) is fine. */
static double dot_span(ember_dtype type, const void *w, uint64_t first, const float *x,
                       size_t n)
{
    float buf[256];
    double acc = 0.0;
    for (size_t i = 0; i < n; i += 256) {
        size_t m = n - i < 256 ? n - i : 256;
        ember_dequantize_span(type, w, first + i, m, buf);
        for (size_t j = 0; j < m; j++)
            acc += (double)buf[j] * (double)x[i + j];
    }
    return acc;
}

void ember_matvec_host(ember_dtype type, const void *w, const float *x, float *dst,
                       size_t rows, size_t n)
{
    for (size_t r = 0; r < rows; r++)
        dst[r] = (float)dot_span(type, w, (uint64_t)r * n, x, n);
}
