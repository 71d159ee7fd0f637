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
 *         (byte k, bit 2 i + h: the value whose low four bits lie in byte k of code
 *         word i, h = 0 its low nibble, 1 its high); its low four bits as Q4_K's at
 *         48 + 16 s.
 *   Q6_K  210 -> 224: unit s's low four bits as Q4_K's at 16 s; its top two bits at
 *         128 + 8 s, as two words T0, T1 whose bytes hold four 2-bit fields each: field
 *         f of Tn, byte k = the top bits of value 4 (2n + f / 2) + k + 16 (f % 2), i.e.
 *         of the value whose low four bits lie in byte k of word 2n + f / 2 of the
 *         unit's low plane (f even: the low nibble, odd: the high), so that the decoder
 *         ORs a word's nibbles and their top bits in place (q6_k.glsl); then d and
 *         scales 0-7 at 192, d and scales 8-15 at 208 (zeros after each).
 *   MXFP4 17 -> 18 bytes: the scale byte, a zero byte, the 16 code bytes: 17-byte blocks
 *         lie at odd offsets, where the decoders' 16-byte reads (blk_span) cannot take
 *         them; 6% more bytes read than the file's (llama.cpp's shaders read single bytes
 *         instead: to be measured on a GPU).
 * The other types lie as in the file. shaders/types/NAME.glsl reads these layouts. */
#include "gpu_block.h"

#include <string.h>


uint32_t ember_gpu_block_bytes(ember_dtype t)
{
    switch (t) {
    case EMBER_DTYPE_Q3_K: return 112;
    case EMBER_DTYPE_Q6_K: return 224;
    case EMBER_DTYPE_MXFP4: return 18;
    default: return ember_dtype_find(t)->bytes;
    }
}

bool ember_gpu_block_as_file(ember_dtype t)
{
    return t != EMBER_DTYPE_Q3_K && t != EMBER_DTYPE_Q4_K && t != EMBER_DTYPE_Q5_K && t != EMBER_DTYPE_Q6_K &&
           t != EMBER_DTYPE_MXFP4;
}

/* 32 bytes of a 4-bit plane holding two units' codes, value i of each in byte i (unit a
 * in the low nibbles, b in the high; quant_k.c's planes), as the GPU's 16 bytes a unit:
 * byte i = code i | code i + 16 << 4. Words are moved with memcpy and worked on as a
 * little-endian host and the GPU see them. */
static void split_nibbles(const uint8_t *src, uint8_t *a, uint8_t *b)
{
    const uint64_t lo = 0x0f0f0f0f0f0f0f0full;
    for (int h = 0; h < 16; h += 8) {
        uint64_t x, y; /* values h .. h + 7 and h + 16 .. h + 23 */
        memcpy(&x, src + h, 8);
        memcpy(&y, src + 16 + h, 8);
        uint64_t ua = (x & lo) | (y & lo) << 4, ub = (x >> 4 & lo) | (y & ~lo);
        memcpy(a + h, &ua, 8);
        memcpy(b + h, &ub, 8);
    }
}

static void put_q4_k(const uint8_t *src, uint8_t *dst, bool q5)
{
    const uint8_t *qs = src + (q5 ? 48 : 16);
    uint8_t *codes = dst + (q5 ? 48 : 16);
    memcpy(dst, src, 16);
    for (int p = 0; p < 4; p++) split_nibbles(qs + 32 * p, codes + 32 * p, codes + 32 * p + 16);
    if (!q5) return;
    /* the fifth bit of value v of unit s: bit s of qh[v]; on the GPU in word s, at bit
     * 2 i + h of byte k for the value whose low bits lie in byte k of code word i (h = 0:
     * the low nibble, 1: the high), so that it ORs in place (q5_k.glsl). */
    for (int s = 0; s < 8; s++) {
        uint32_t w = 0;
        for (int v = 0; v < 32; v++)
            w |= (uint32_t)(src[16 + v] >> s & 1) << (8 * (v % 4) + 2 * (v % 16 / 4) + v / 16);
        memcpy(dst + 16 + 4 * s, &w, 4);
    }
}

static void put_q6_k(const uint8_t *src, uint8_t *dst)
{
    /* ql: half h's 64 bytes hold units 4h + t (low nibbles of bytes 32t ..) and 4h + t + 2
     * (their high nibbles); qh: byte j of half h holds value j of its four units, unit
     * 4h + t at bit 2t. */
    for (int h = 0; h < 2; h++)
        for (int t = 0; t < 2; t++)
            split_nibbles(src + 64 * h + 32 * t, dst + 16 * (4 * h + t), dst + 16 * (4 * h + t + 2));
    for (int s = 0; s < 8; s++) {
        const uint8_t *qh = src + 128 + 32 * (s / 4);
        uint8_t *t = dst + 128 + 8 * s;
        memset(t, 0, 8);
        for (int v = 0; v < 32; v++) { /* value v of unit s: word v % 16 / 4, byte v % 4 */
            int w = v % 16 / 4, f = 2 * (w % 2) + v / 16, k = v % 4;
            t[4 * (w / 2) + k] |= (uint8_t)((qh[v] >> (2 * (s % 4)) & 3) << (2 * f));
        }
    }
    for (int h = 0; h < 2; h++) {
        uint8_t *e = dst + 192 + 16 * h;
        memcpy(e, src + 208, 2);
        memcpy(e + 2, src + 192 + 8 * h, 8);
        memset(e + 10, 0, 6);
    }
}

void ember_gpu_block_put(ember_dtype t, const uint8_t *src, uint8_t *dst)
{
    uint32_t fb = ember_dtype_find(t)->bytes;
    switch (t) {
    case EMBER_DTYPE_Q4_K: put_q4_k(src, dst, false); break;
    case EMBER_DTYPE_Q5_K: put_q4_k(src, dst, true); break;
    case EMBER_DTYPE_Q6_K: put_q6_k(src, dst); break;
    case EMBER_DTYPE_MXFP4: /* a zero byte after the scale: codes at even offsets */
        dst[0] = src[0], dst[1] = 0;
        memcpy(dst + 2, src + 1, 16);
        break;
    default:
        memcpy(dst, src, fb);
        memset(dst + fb, 0, ember_gpu_block_bytes(t) - fb);
    }
}
