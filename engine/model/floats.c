/* floats.c — see floats.h. Bit-exact with ggml where ggml defines the result (half and
 * bfloat16 conversion): shipped GGUF files are compared byte for byte. */
#include "floats.h"

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

/* ---- bfloat16 ----------------------------------------------------------------- */

float ember_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t ember_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 64); /* NaN: keep it quiet */
    return (uint16_t)((x + (0x7fff + ((x >> 16) & 1))) >> 16);           /* nearest, ties to even */
}

/* ---- the float types as codecs --------------------------------------------------- */

void ember_f32_to_float(const void *src, float *dst, size_t n) { memcpy(dst, src, n * sizeof *dst); }
void ember_f32_from_float(const float *src, void *dst, size_t n) { memcpy(dst, src, n * sizeof *src); }

void ember_f16_to_float(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++) dst[i] = ember_f16_to_f32(ember_le16(b + 2 * i));
}

void ember_f16_from_float(const float *src, void *dst, size_t n)
{
    uint8_t *b = dst;
    for (size_t i = 0; i < n; i++) ember_put_le16(b + 2 * i, ember_f32_to_f16(src[i]));
}

void ember_bf16_to_float(const void *src, float *dst, size_t n)
{
    const uint8_t *b = src;
    for (size_t i = 0; i < n; i++) dst[i] = ember_bf16_to_f32(ember_le16(b + 2 * i));
}

void ember_bf16_from_float(const float *src, void *dst, size_t n)
{
    uint8_t *b = dst;
    for (size_t i = 0; i < n; i++) ember_put_le16(b + 2 * i, ember_f32_to_bf16(src[i]));
}

