// q6_k.glsl — Q6_K {ql[128]; qh[64]; int8 scales[16]; f16 d}, 256 values, sub-blocks of
// 16: value v = (d * sc) * (q - 32), q = the nibble of v in ql (byte 64 * (v / 128) +
// v % 64, the high half for v / 64 odd) | the 2 bits of v in qh (byte 128 + 32 * (v / 128)
// + v % 32, bits 2 * (v / 32 % 4)) << 4 (engine/model/quant_k.c).
#ifndef Q6_K_GLSL
#define Q6_K_GLSL
#include "../blocks.glsl"
const uint BV_Q6_K = 256u, BB_Q6_K = 210u;

void dq_q6_k(bool hi, uint row, uint u, out float w[32])
{
    uint b = row + (u >> 3u) * BB_Q6_K, s = u & 7u;
    float d = blk_f16(hi, b + 208u);
    uint loff = b + 64u * (s >> 2u) + 32u * (s & 1u), lshift = 4u * ((s >> 1u) & 1u);
    uint hoff = b + 128u + 32u * (s >> 2u), hshift = 2u * (s & 3u);
    for (uint h = 0u; h < 2u; h++) {
        precise float dl = d * float(int(blk_u8(hi, b + 192u + 2u * s + h) << 24u) >> 24);
        for (uint k = 0u; k < 4u; k++) {
            uint q = blk_u32(hi, loff + 16u * h + 4u * k), p = blk_u32(hi, hoff + 16u * h + 4u * k);
            for (uint i = 0u; i < 4u; i++) {
                uint c = ((q >> (8u * i + lshift)) & 15u) | (((p >> (8u * i + hshift)) & 3u) << 4u);
                precise float y = dl * float(int(c) - 32);
                w[16u * h + 4u * k + i] = y;
            }
        }
    }
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q6_K): the names it calls.
#ifdef BLK_Q6_K
#define BLK_DQ dq_q6_k
#define BLK_V BV_Q6_K
#define BLK_B BB_Q6_K
#endif
#endif
