/* gpu_block.c — how a block type lies in GPU memory, where not as in the file: the
 * decoders of shaders/types read a unit (32 values) of a 256-value block with as few
 * 16-byte loads as they can, and a GPU's loads are the cost that counts (on lavapipe a
 * texel fetch is a gather per lane). In the file (quant_k.c), Q4_K keeps the codes of two
 * units in one 32-byte plane (one in each nibble) and Q6_K's units spread over three
 * planes, so a unit read 32 to 64 bytes for its 16 to 24. At upload:
 *   Q3_K  110 -> 112 bytes: as in the file, padded to whole 16-byte elements.
 *   Q4_K  144: d, dmin and the 12 scale bytes as in the file (bytes 0-15); then unit s's
 *         codes at 16 + 16 s: byte i = code i | code i + 16 << 4 (value i of the unit).
 *   Q5_K  176: bytes 0-15 as in the file; unit s's fifth bits as one word at 16 + 4 s
 *         (bit i: value i); its low four bits as Q4_K's at 48 + 16 s.
 *   Q6_K  210 -> 224: unit s's low four bits as Q4_K's at 16 s; its top two bits at
 *         128 + 8 s (value i at bit 2 (i % 16) of word i / 16); then d and scales 0-7 at
 *         192, d and scales 8-15 at 208 (zeros after each): a unit is three loads.
 * The other types lie as in the file. shaders/types/NAME.glsl reads these layouts. */
#include "gpu_block.h"

#include <string.h>

#include "engine/model/quant_k.h"

#define QK_K 256

uint32_t ember_gpu_block_bytes(ember_dtype t)
{
    return t == EMBER_DTYPE_Q3_K ? 112 : t == EMBER_DTYPE_Q6_K ? 224 : ember_dtype_find(t)->bytes;
}

bool ember_gpu_block_as_file(ember_dtype t)
{
    return t != EMBER_DTYPE_Q3_K && t != EMBER_DTYPE_Q4_K && t != EMBER_DTYPE_Q5_K && t != EMBER_DTYPE_Q6_K;
}

/* The low four bits of each unit's codes, 16 bytes a unit. */
static void put_nibbles(const uint8_t *code, uint8_t *dst)
{
    for (int s = 0; s < 8; s++)
        for (int i = 0; i < 16; i++)
            dst[16 * s + i] = (uint8_t)((code[32 * s + i] & 15) | (code[32 * s + i + 16] & 15) << 4);
}

/* Bits `shift` .. shift + width - 1 of each code, width 1 or 2, a unit's in 32 / (32 /
 * width) words: value i of unit s at bit width * i % 32 of word i * width / 32. */
static void put_high(const uint8_t *code, int shift, int width, uint8_t *dst)
{
    memset(dst, 0, (size_t)(QK_K * width / 8));
    for (int v = 0; v < QK_K; v++) {
        int bit = v * width;
        dst[bit / 8] |= (uint8_t)(((code[v] >> shift) & ((1 << width) - 1)) << (bit % 8));
    }
}

void ember_gpu_block_put(ember_dtype t, const uint8_t *src, uint8_t *dst)
{
    uint8_t code[QK_K];
    uint32_t fb = ember_dtype_find(t)->bytes;
    switch (t) {
    case EMBER_DTYPE_Q4_K:
    case EMBER_DTYPE_Q5_K:
        ember_k_codes(t == EMBER_DTYPE_Q4_K ? 4 : 5, src, code);
        memcpy(dst, src, 16);
        if (t == EMBER_DTYPE_Q5_K) put_high(code, 4, 1, dst + 16);
        put_nibbles(code, dst + (t == EMBER_DTYPE_Q5_K ? 48 : 16));
        break;
    case EMBER_DTYPE_Q6_K:
        ember_k_codes(6, src, code);
        put_nibbles(code, dst);
        put_high(code, 4, 2, dst + 128);
        for (int h = 0; h < 2; h++) {
            uint8_t *e = dst + 192 + 16 * h;
            memcpy(e, src + 208, 2);
            memcpy(e + 2, src + 192 + 8 * h, 8);
            memset(e + 10, 0, 6);
        }
        break;
    default:
        memcpy(dst, src, fb);
        memset(dst + fb, 0, ember_gpu_block_bytes(t) - fb);
    }
}
