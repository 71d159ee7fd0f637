/* quant_iq.c — IQ4_NL and IQ4_XS (quant_iq.h), operation for operation as ggml's
 * dequantize_row_iq4_* and quantize_iq4_* without an importance matrix (what
 * ggml_quantize_chunk, and so llama_model_quantize, calls), so that Ember reads
 * llama.cpp's files to the bit and writes the bytes llama.cpp writes.
 *
 * Layouts (ggml-common.h), little-endian fields:
 *   IQ4_NL {d; qs[16]}, 32 values              value j = d * LEVELS[nibble j]
 *   IQ4_XS {d; scales_h; scales_l[4]; qs[128]}, 256 values in 8 sub-blocks of 32:
 *          sub-block i has the 6-bit scale s = nibble i of scales_l | bits 2i, 2i+1 of
 *          scales_h << 4, and its value j = (d * (s - 32)) * LEVELS[nibble j of its qs[16]]
 * where nibble j of a 16-byte qs is the low half of qs[j] for j < 16 and the high half of
 * qs[j - 16] after, and nibble i of scales_l the low half of scales_l[i / 2] for even i,
 * the high half for odd. */
#include "quant_iq.h"

#include <math.h>
#include <string.h>

#include "floats.h"

#define QK 32          /* values per IQ4_NL block and per IQ4_XS sub-block */
#define QK_XS 256      /* values per IQ4_XS block */
#define NL_BYTES 18
#define XS_BYTES 136
#define EMPTY 1e-15f   /* ggml's GROUP_MAX_EPS: a sub-block below it gets scale 0 */

/* The 16 levels a code stands for (ggml's kvalues_iq4nl), ascending. */
static const int8_t LEVELS[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* ggml's search width for each quantizer (its ntry): 7 for both in quantize_iq4_nl and
 * quantize_iq4_xs. (quantize_row_iq4_nl_ref passes -1, no search, and then packs codes it
 * never set for an empty first block: its bytes depend on the stack, so it is not the
 * reference; llama.cpp's files come from quantize_iq4_nl.) */
#define NL_TRIES 7
#define XS_TRIES 7

/* ---- decoding ----------------------------------------------------------------------- */

/* 32 values at scale d from 16 bytes of codes: d * level, one rounding, as ggml. */
static void decode(const uint8_t *qs, float d, float *dst)
{
    for (int j = 0; j < QK / 2; j++) {
        dst[j] = d * (float)LEVELS[qs[j] & 0x0f];
        dst[j + QK / 2] = d * (float)LEVELS[qs[j] >> 4];
    }
}

/* Sub-block i's 6-bit scale of an IQ4_XS block, as stored (0..63, meaning s - 32). */
static int xs_scale(const uint8_t *b, int i)
{
    int lo = (b[4 + i / 2] >> (4 * (i % 2))) & 0x0f, hi = (ember_le16(b + 2) >> (2 * i)) & 3;
    return lo | hi << 4;
}

void ember_iq4_nl_to_float(const void *src, float *dst, size_t n)
{
    for (const uint8_t *b = src; n--; b += NL_BYTES, dst += QK) decode(b + 2, ember_f16_to_f32(ember_le16(b)), dst);
}

void ember_iq4_xs_to_float(const void *src, float *dst, size_t n)
{
    for (const uint8_t *b = src; n--; b += XS_BYTES) {
        const float d = ember_f16_to_f32(ember_le16(b));
        /* the sub-block's scale is rounded to f32 before it meets the levels, as ggml */
        for (int i = 0; i < QK_XS / QK; i++, dst += QK) decode(b + 8 + 16 * i, d * (float)(xs_scale(b, i) - 32), dst);
    }
}

/* ---- encoding ----------------------------------------------------------------------- */

/* The code whose level is nearest x (ggml's best_index_int8): bisection, then the lower
 * of the two neighbours only when strictly nearer, so ties go up. */
static int nearest_code(float x)
{
    if (x <= LEVELS[0]) return 0;
    if (x >= LEVELS[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (x < LEVELS[mid]) hi = mid;
        else lo = mid;
    }
    return x - LEVELS[lo] < LEVELS[hi] - x ? lo : hi;
}

/* Codes the 32 values of x at inverse scale id (into codes, when given) and sums, with
 * ggml's default weight x * x, w * q * x and w * q * q over their levels q: the terms of
 * the least-squares scale sum(wqx) / sum(wqq). */
static void fit(const float *x, float id, uint8_t *codes, float *sqx, float *sqq)
{
    float sumqx = 0.0f, sumq2 = 0.0f;
    for (int j = 0; j < QK; j++) {
        int l = nearest_code(id * x[j]);
        if (codes) codes[j] = (uint8_t)l;
        const float q = (float)LEVELS[l], w = x[j] * x[j];
        sumqx += w * q * x[j];
        sumq2 += w * q * q;
    }
    *sqx = sumqx, *sqq = sumq2;
}

/* The scale of 32 values (0 when all are below EMPTY, codes then left as they were). Codes
 * are chosen at the scale that puts the value of largest magnitude on the end level
 * (-127 without a search, +127 with one, where it clips to 113), and the scale is their
 * least-squares fit. With tries > 0, the inverse scales (t - 127) / max for |t| <= tries
 * are tried too and the best fit wins: the largest sum(wqx)^2 / sum(wqq), compared
 * without dividing, as ggml. */
static float subblock_scale(const float *x, int tries, uint8_t *codes)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK; j++)
        if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j];
    if (amax < EMPTY) return 0.0f;
    float d = tries > 0 ? -max / (float)LEVELS[0] : max / (float)LEVELS[0], sqx, sqq;
    fit(x, 1.0f / d, codes, &sqx, &sqq);
    d = sqq > 0.0f ? sqx / sqq : 0.0f;
    float best = d * sqx;
    for (int t = -tries; t <= tries; t++) {
        fit(x, (float)(t + LEVELS[0]) / max, NULL, &sqx, &sqq);
        if (sqq > 0.0f && sqx * sqx > best * sqq) d = sqx / sqq, best = d * sqx;
    }
    return d;
}

/* Codes of 32 values at scale d (the scale the block will decode with). */
static void requantize(const float *x, float d, uint8_t *codes)
{
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < QK; j++) codes[j] = (uint8_t)nearest_code(id * x[j]);
}

/* 32 codes into 16 bytes: codes j and j + 16 share byte j. */
static void pack(const uint8_t *codes, uint8_t *qs)
{
    for (int j = 0; j < QK / 2; j++) qs[j] = (uint8_t)(codes[j] | codes[j + QK / 2] << 4);
}

/* One IQ4_NL block. `codes` carries over from the block before: ggml leaves them as they
 * were for an empty block (its scale 0 makes them decode to zeros anyway), so a row's
 * empty block repeats the codes of the block before it. */
static void encode_nl(const float *x, uint8_t *b, int tries, uint8_t *codes)
{
    const float d = subblock_scale(x, tries, codes);
    ember_put_le16(b, ember_f32_to_f16(d));
    if (tries > 0) requantize(x, d, codes);
    pack(codes, b + 2);
}

/* ggml's nearest_int: round half to even (its float trick and lrintf agree for |x| < 2^22;
 * here |x| is about 32 at most). */
static int round_even(float x) { return (int)lrintf(x); }

/* One IQ4_XS block: a scale per sub-block as IQ4_NL's, then one f16 scale d that puts the
 * largest of them (by magnitude) on -32, each stored as the nearest multiple of d in
 * [-32, 31], and the codes chosen again at the scale the sub-block will decode with.
 * (The multiples come from the f32 d, only the stored d is rounded to f16, as ggml.) */
static void encode_xs(const float *x, uint8_t *b)
{
    float scales[QK_XS / QK], max_scale = 0.0f, amax_scale = 0.0f;
    uint8_t codes[QK];
    for (int i = 0; i < QK_XS / QK; i++) {
        scales[i] = subblock_scale(x + QK * i, XS_TRIES, codes);
        if (fabsf(scales[i]) > amax_scale) amax_scale = fabsf(scales[i]), max_scale = scales[i];
    }
    const float d = -max_scale / 32.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    ember_put_le16(b, ember_f32_to_f16(d));
    uint16_t scales_h = 0;
    memset(b + 4, 0, 4);
    for (int i = 0; i < QK_XS / QK; i++) {
        int l = round_even(id * scales[i]);
        l = l < -32 ? -32 : l > 31 ? 31 : l;
        requantize(x + QK * i, d * (float)l, codes);
        pack(codes, b + 8 + 16 * i);
        l += 32;
        b[4 + i / 2] |= (uint8_t)((l & 0x0f) << (4 * (i % 2)));
        scales_h |= (uint16_t)((l >> 4) << (2 * i));
    }
    ember_put_le16(b + 2, scales_h);
}

void ember_iq4_nl_from_float(const float *src, void *dst, size_t n)
{
    /* before the first block: code 8 (level 1, the nearest to 0), where ggml's reference
     * reads codes it never wrote (see encode_nl) */
    uint8_t codes[QK];
    memset(codes, 8, sizeof codes);
    for (uint8_t *b = dst; n--; b += NL_BYTES, src += QK) encode_nl(src, b, NL_TRIES, codes);
}

void ember_iq4_xs_from_float(const float *src, void *dst, size_t n)
{
    for (uint8_t *b = dst; n--; b += XS_BYTES, src += QK_XS) encode_xs(src, b);
}
