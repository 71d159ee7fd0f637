/* quant.c — element formats on the host: IEEE half floats, Q8_0 blocks, and the plain
 * mat-vec product the reference forward pass and the tests are built on.
 *
 * Everything here must be bit-exact with ggml where ggml defines the result (half
 * conversion, Q8_0 quantization): shipped GGUF files are compared byte for byte. */
#include "quant.h"

#include <math.h>
#include <string.h>

/* ---- half floats ------------------------------------------------------------- */

float ember_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    float f;

    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);           /* inf, NaN (payload kept) */
    } else if (exp == 0) {
        /* zero or subnormal: mant * 2^-24 is exact in f32 */
        f = (float)mant * 0x1p-24f;
        return sign ? -f : f;
    } else {
        bits = sign | ((exp + 112) << 23) | (mant << 13);   /* rebias 15 -> 127 */
    }
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Rounds the integer m >> shift to nearest, ties to even. */
static uint32_t shift_round_even(uint32_t m, unsigned shift)
{
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return q;
}

uint16_t ember_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    int exp = (int)((x >> 23) & 0xff);
    uint32_t mant = x & 0x7fffff;

    if (exp == 0xff) /* inf stays inf; NaN stays a (quiet) NaN with its top payload bits */
        return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));

    int e = exp - 127 + 15; /* the f16 biased exponent */
    if (e >= 31)
        return sign | 0x7c00;
    if (e <= 0) {
        /* f16 subnormal: value = m * 2^-24. Below 2^-25 everything rounds to zero
         * (f32 subnormals included). */
        if (e < -10)
            return sign;
        return (uint16_t)(sign | shift_round_even(mant | 0x800000, (unsigned)(14 - e)));
    }
    /* A carry out of the mantissa bumps the exponent, and 0x7bff + 1 is inf: the
     * overflow-by-rounding case needs no special code. */
    return (uint16_t)(sign | shift_round_even(((uint32_t)e << 23) | mant, 13));
}

/* ---- rows ---------------------------------------------------------------------- */

static uint16_t load_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static void store_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v & 0xff);
    p[1] = (uint8_t)(v >> 8);
}

void ember_dequantize_span(ember_dtype type, const void *base, uint64_t first, size_t n,
                           float *dst)
{
    const uint8_t *b = base;
    switch (type) {
    case EMBER_DTYPE_F32:
        memcpy(dst, b + first * 4, n * sizeof *dst);
        break;
    case EMBER_DTYPE_F16:
        for (size_t i = 0; i < n; i++)
            dst[i] = ember_f16_to_f32(load_u16(b + (first + i) * 2));
        break;
    case EMBER_DTYPE_Q8_0:
        for (size_t i = 0; i < n; i++) {
            uint64_t k = first + i;
            const uint8_t *blk = b + (k / EMBER_Q8_0_BLOCK) * EMBER_Q8_0_BYTES;
            float d = ember_f16_to_f32(load_u16(blk));
            dst[i] = d * (float)(int8_t)blk[2 + k % EMBER_Q8_0_BLOCK];
        }
        break;
    }
}

void ember_dequantize_row(ember_dtype type, const void *src, float *dst, size_t n)
{
    ember_dequantize_span(type, src, 0, n, dst);
}

void ember_quantize_row_q8_0(const float *src, void *dst, size_t n)
{
    uint8_t *out = dst;
    for (size_t b = 0; b < n / EMBER_Q8_0_BLOCK; b++) {
        const float *x = src + b * EMBER_Q8_0_BLOCK;
        uint8_t *blk = out + b * EMBER_Q8_0_BYTES;
        float amax = 0.0f;
        for (int j = 0; j < EMBER_Q8_0_BLOCK; j++)
            amax = fmaxf(amax, fabsf(x[j]));
        /* ggml's quantize_row_q8_0_ref, operation for operation: the quants use the f32
         * scale, only the stored scale is rounded to f16. */
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_u16(blk, ember_f32_to_f16(d));
        for (int j = 0; j < EMBER_Q8_0_BLOCK; j++)
            blk[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
    }
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
