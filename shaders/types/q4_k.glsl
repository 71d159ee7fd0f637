// q4_k.glsl — Q4_K {f16 d; f16 dmin; scales[12]; qs[128]}, 256 values, sub-blocks of 32:
// value v = (d * sc) * q - dmin * m, q the nibble of v in qs (byte 32 * (v / 64) + v % 32,
// the high half for v / 32 odd), sc and m the 6-bit pair of v / 32 (k4_scale_min); unit u
// is sub-block u % 8 of block u / 8 (engine/model/quant_k.c).
#ifndef Q4_K_GLSL
#define Q4_K_GLSL
#include "../blocks.glsl"
const uint BV_Q4_K = 256u, BB_Q4_K = 144u;

// Sub-block j's 6-bit scale and min from the 12 bytes at off (ggml's get_scale_min_k4).
uvec2 k4_scale_min(bool hi, uint off, uint j)
{
    if (j < 4u) return uvec2(blk_u8(hi, off + j) & 63u, blk_u8(hi, off + j + 4u) & 63u);
    uint c = blk_u8(hi, off + j + 4u);
    return uvec2((c & 15u) | ((blk_u8(hi, off + j - 4u) >> 6u) << 4u), (c >> 4u) | ((blk_u8(hi, off + j) >> 6u) << 4u));
}

// The 32 values of sub-block s of the Q4_K/Q5_K block at b: qs at qs_off, the fifth
// bits (Q5_K) at qh_off (bit s of byte v % 32), or none when qh_off is 0.
void k4_sub(bool hi, uint b, uint s, uint qs_off, uint qh_off, out float w[32])
{
    uvec2 sm = k4_scale_min(hi, b + 4u, s);
    precise float dl = blk_f16(hi, b) * float(sm.x), ml = blk_f16(hi, b + 2u) * float(sm.y);
    uint qoff = b + qs_off + 32u * (s >> 1u), shift = 4u * (s & 1u);
    for (uint k = 0u; k < 8u; k++) {
        uint q = blk_u32(hi, qoff + 4u * k), h = qh_off != 0u ? blk_u32(hi, b + qh_off + 4u * k) : 0u;
        for (uint i = 0u; i < 4u; i++) {
            uint c = ((q >> (8u * i + shift)) & 15u) | (((h >> (8u * i + s)) & 1u) << 4u);
            precise float y = dl * float(c) - ml;
            w[4u * k + i] = y;
        }
    }
}

void dq_q4_k(bool hi, uint row, uint u, out float w[32])
{
    k4_sub(hi, row + (u >> 3u) * BB_Q4_K, u & 7u, 16u, 0u, w);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q4_K): the names it calls.
#ifdef BLK_Q4_K
#define BLK_DQ dq_q4_k
#define BLK_V BV_Q4_K
#define BLK_B BB_Q4_K
#endif
#endif
