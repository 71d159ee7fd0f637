/* quant_fp4.c — MXFP4 (quant_fp4.h), operation for operation as ggml's
 * dequantize_row_mxfp4 and quantize_row_mxfp4_ref (what ggml_quantize_chunk calls for it,
 * with or without an importance matrix), so that Ember reads llama.cpp's files to the bit
 * and writes the bytes llama.cpp writes.
 *
 * Layout (ggml-common.h's block_mxfp4), 17 bytes:
 *   {e; qs[16]}, 32 values      value j = LEVELS[nibble j] * d,  d = 2^(e - 128)
 * with nibble j the low half of qs[j] for j < 16 and the high half of qs[j - 16] after
 * (as Q4_0's), and LEVELS the E2M1 values doubled (ggml's kvalues_mxfp4), so that d is
 * half the E8M0 scale 2^(e - 127). */
#include "quant_fp4.h"

#include <math.h>
#include <string.h>

#define QK 32
#define BYTES 17

/* E2M1's 8 magnitudes (0, 0.5, 1, 1.5, 2, 3, 4, 6) doubled, then the same negated; code 8
 * is -0. */
static const int8_t LEVELS[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

float ember_e8m0_half(uint8_t e)
{
    /* e 0 and 1: the subnormals 2^-128 and 2^-127; else the normal 2^(e - 128) */
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

void ember_mxfp4_to_float(const void *src, float *dst, size_t n)
{
    for (const uint8_t *b = src; n--; b += BYTES, dst += QK) {
        const float d = ember_e8m0_half(b[0]);
        for (int j = 0; j < QK / 2; j++) {
            dst[j] = (float)LEVELS[b[1 + j] & 0x0f] * d;
            dst[j + QK / 2] = (float)LEVELS[b[1 + j] >> 4] * d;
        }
    }
}

/* The code whose level times d is nearest x: the first of the nearest (ggml's
 * best_index_mxfp4 scans in code order and keeps a strictly smaller error), so +0 wins
 * over -0 and a tie goes to the lower code. */
static uint8_t nearest_code(float x, float d)
{
    uint8_t best = 0;
    float best_err = fabsf((float)LEVELS[0] * d - x);
    for (uint8_t i = 1; i < 16; i++) {
        float err = fabsf((float)LEVELS[i] * d - x);
        if (err < best_err) best = i, best_err = err;
    }
    return best;
}

/* The scale byte: the largest magnitude's binary exponent minus 2 (6, E2M1's largest
 * value, is 1.5 * 2^2), through log2f as ggml computes it, so that the bytes agree even
 * where log2f rounds up to the next integer just below a power of two; 0 for an all-zero
 * block. */
static uint8_t scale_byte(const float *x)
{
    float amax = 0.0f;
    for (int j = 0; j < QK; j++)
        if (amax < fabsf(x[j])) amax = fabsf(x[j]);
    return amax > 0.0f ? (uint8_t)(floorf(log2f(amax)) - 2 + 127) : 0;
}

void ember_mxfp4_from_float(const float *src, void *dst, size_t n)
{
    for (uint8_t *b = dst; n--; b += BYTES, src += QK) {
        b[0] = scale_byte(src);
        const float d = ember_e8m0_half(b[0]);
        for (int j = 0; j < QK / 2; j++)
            b[1 + j] = (uint8_t)(nearest_code(src[j], d) | nearest_code(src[j + QK / 2], d) << 4);
    }
}
