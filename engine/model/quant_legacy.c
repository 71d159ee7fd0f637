/* quant_legacy.c — Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 (quant_legacy.h), operation for
 * operation as ggml's dequantize_row_* and quantize_row_*_ref, so that Ember reads
 * llama.cpp's files to the bit and writes the bytes llama.cpp writes.
 *
 * Layouts (ggml-common.h), 32 values per block, little-endian f16 fields:
 *   Q4_0 {d; qs[16]}            value j = (nibble j - 8) * d
 *   Q4_1 {d; m; qs[16]}         value j = nibble j * d + m
 *   Q5_0 {d; qh[4]; qs[16]}     value j = (nibble j | bit j of qh << 4) - 16) * d
 *   Q5_1 {d; m; qh[4]; qs[16]}  value j = (nibble j | bit j of qh << 4) * d + m
 *   Q8_0 {d; qs[32]}            value j = (int8) qs[j] * d
 * where nibble j is the low half of qs[j] for j < 16 and the high half of qs[j - 16]
 * after. */
#include "quant_legacy.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "floats.h"

#define QK 32

/* ---- the values of a block's 4-bit and 5-bit codes --------------------------------- */

/* Codes j and j + 16 of a block: the two nibbles of qs[j], and bit j and j + 16 of qh
 * as their fifth bits (qh = 0 for the 4-bit types). */
static void codes(const uint8_t *qs, uint32_t qh, int *c)
{
    for (int j = 0; j < QK / 2; j++) {
        c[j] = (qs[j] & 0x0f) | (int)(((qh >> j) << 4) & 0x10);
        c[j + QK / 2] = (qs[j] >> 4) | (int)((qh >> (j + 12)) & 0x10);
    }
}

static uint32_t le32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* value = (code - offset) * d, or code * d + m when has_m: two roundings, as ggml. */
static void decode(const uint8_t *qs, uint32_t qh, float d, float m, int offset, int has_m, float *dst)
{
    int c[QK];
    codes(qs, qh, c);
    for (int j = 0; j < QK; j++) dst[j] = has_m ? (float)c[j] * d + m : (float)(c[j] - offset) * d;
}

void ember_q4_0_to_float(const void *src, float *dst, size_t n)
{
    for (const uint8_t *b = src; n--; b += 18, dst += QK) decode(b + 2, 0, ember_f16_to_f32(ember_le16(b)), 0, 8, 0, dst);
}

void ember_q4_1_to_float(const void *src, float *dst, size_t n)
{
    for (const uint8_t *b = src; n--; b += 20, dst += QK)
        decode(b + 4, 0, ember_f16_to_f32(ember_le16(b)), ember_f16_to_f32(ember_le16(b + 2)), 0, 1, dst);
}

void ember_q5_0_to_float(const void *src, float *dst, size_t n)
{
    for (const uint8_t *b = src; n--; b += 22, dst += QK)
        decode(b + 6, le32(b + 2), ember_f16_to_f32(ember_le16(b)), 0, 16, 0, dst);
}

void ember_q5_1_to_float(const void *src, float *dst, size_t n)
{
    for (const uint8_t *b = src; n--; b += 24, dst += QK)
        decode(b + 8, le32(b + 4), ember_f16_to_f32(ember_le16(b)), ember_f16_to_f32(ember_le16(b + 2)), 0, 1, dst);
}

void ember_q8_0_to_float(const void *src, float *dst, size_t n)
{
    for (const uint8_t *b = src; n--; b += EMBER_Q8_0_BYTES, dst += QK) {
        float d = ember_f16_to_f32(ember_le16(b));
        for (int j = 0; j < QK; j++) dst[j] = (float)(int8_t)b[2 + j] * d;
    }
}

/* ---- encoding ----------------------------------------------------------------------- */

/* The value of largest magnitude, sign kept (the first of equals). */
static float signed_absmax(const float *x)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK; j++)
        if (amax < fabsf(x[j])) amax = fabsf(x[j]), max = x[j];
    return max;
}

static void min_max(const float *x, float *lo, float *hi)
{
    *lo = FLT_MAX, *hi = -FLT_MAX;
    for (int j = 0; j < QK; j++) {
        if (x[j] < *lo) *lo = x[j];
        if (x[j] > *hi) *hi = x[j];
    }
}

/* Packs codes: low nibbles into qs, fifth bits into *qh (5-bit types). */
static void pack(const int *c, uint8_t *qs, uint8_t *qh)
{
    uint32_t h = 0;
    for (int j = 0; j < QK / 2; j++) {
        qs[j] = (uint8_t)((c[j] & 0x0f) | ((c[j + QK / 2] & 0x0f) << 4));
        h |= (uint32_t)((c[j] & 0x10) >> 4) << j;
        h |= (uint32_t)((c[j + QK / 2] & 0x10) >> 4) << (j + QK / 2);
    }
    if (qh)
        for (int k = 0; k < 4; k++) qh[k] = (uint8_t)(h >> (8 * k));
}

/* Symmetric types: d = max / -half (the largest value lands on code 0), codes
 * min(top, trunc(x / d + half + 0.5)). */
static void encode_symmetric(const float *x, uint8_t *b, int half, int top, uint8_t *qs, uint8_t *qh)
{
    float d = signed_absmax(x) / (float)-half, id = d != 0.0f ? 1.0f / d : 0.0f;
    ember_put_le16(b, ember_f32_to_f16(d));
    int c[QK];
    for (int j = 0; j < QK; j++) {
        int q = (int)(x[j] * id + ((float)half + 0.5f));
        c[j] = q < top ? q : top;
    }
    pack(c, qs, qh);
}

/* Types with a minimum: d = (max - min) / top, codes trunc((x - min) / d + 0.5),
 * capped at top where ggml caps them (Q4_1). */
static void encode_with_min(const float *x, uint8_t *b, int top, int cap, uint8_t *qs, uint8_t *qh)
{
    float lo, hi;
    min_max(x, &lo, &hi);
    float d = (hi - lo) / (float)top, id = d != 0.0f ? 1.0f / d : 0.0f;
    ember_put_le16(b, ember_f32_to_f16(d));
    ember_put_le16(b + 2, ember_f32_to_f16(lo));
    int c[QK];
    for (int j = 0; j < QK; j++) {
        int q = (int)((x[j] - lo) * id + 0.5f);
        c[j] = cap && q > top ? top : q;
    }
    pack(c, qs, qh);
}

void ember_q4_0_from_float(const float *src, void *dst, size_t n)
{
    for (uint8_t *b = dst; n--; b += 18, src += QK) encode_symmetric(src, b, 8, 15, b + 2, NULL);
}

void ember_q4_1_from_float(const float *src, void *dst, size_t n)
{
    for (uint8_t *b = dst; n--; b += 20, src += QK) encode_with_min(src, b, 15, 1, b + 4, NULL);
}

void ember_q5_0_from_float(const float *src, void *dst, size_t n)
{
    for (uint8_t *b = dst; n--; b += 22, src += QK) encode_symmetric(src, b, 16, 31, b + 6, b + 2);
}

void ember_q5_1_from_float(const float *src, void *dst, size_t n)
{
    for (uint8_t *b = dst; n--; b += 24, src += QK) encode_with_min(src, b, 31, 0, b + 8, b + 4);
}

void ember_q8_0_from_float(const float *src, void *dst, size_t n)
{
    for (uint8_t *b = dst; n--; b += EMBER_Q8_0_BYTES, src += QK) {
        float amax = 0.0f;
        for (int j = 0; j < QK; j++) amax = fmaxf(amax, fabsf(src[j]));
        /* the quants use the f32 scale, only the stored scale is rounded to f16 */
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        ember_put_le16(b, ember_f32_to_f16(d));
        for (int j = 0; j < QK; j++) b[2 + j] = (uint8_t)(int8_t)roundf(src[j] * id);
    }
}
