// q4_k.glsl — Q4_K {f16 d; f16 dmin; scales[12]; qs[128]}, 256 values, sub-blocks of 32:
// value v = (d * sc) * q - dmin * m, q the nibble of v in qs (byte 32 * (v / 64) + v % 32,
// the high half for v / 32 odd), sc and m the 6-bit pair of v / 32 (ggml's
// get_scale_min_k4); unit u is sub-block u % 8 of block u / 8 (engine/model/quant_k.c).
// Blocks are 144 bytes: every field lies in whole 16-byte elements.
#ifndef Q4_K_GLSL
#define Q4_K_GLSL
#include "../blocks.glsl"
const uint BV_Q4_K = 256u, BB_Q4_K = 144u;

// Sub-block s of the Q4_K/Q5_K block at b (16-aligned) in codes form: qs at qs_off, the
// fifth bits (Q5_K: bit s of byte v % 32) at qh_off, none when qh_off is 0.
void k4_codes(bool hi, uint b, uint s, uint qs_off, uint qh_off, out vec4 q[8], out vec2 a, out vec2 c)
{
    uvec4 h = blk_v4(hi, b);  // d | dmin << 16, then the 12 bytes of scales and mins
    uint k = 8u * (s & 3u), sc, m;
    if (s < 4u) {
        sc = (h.y >> k) & 63u, m = (h.z >> k) & 63u;
    } else {
        uint lo = (h.w >> k) & 255u;
        sc = (lo & 15u) | (((h.y >> k) >> 6u & 3u) << 4u), m = (lo >> 4u) | (((h.z >> k) >> 6u & 3u) << 4u);
    }
    vec2 dd = unpackHalf2x16(h.x);
    precise float dl = dd.x * float(sc), ml = dd.y * float(m);
    a = vec2(dl), c = vec2(-ml);
    uint qoff = b + qs_off + 32u * (s >> 1u), shift = 4u * (s & 1u);
    for (uint half_ = 0u; half_ < 2u; half_++) {
        uvec4 w = blk_v4(hi, qoff + 16u * half_), fifth = qh_off != 0u ? blk_v4(hi, b + qh_off + 16u * half_) : uvec4(0u);
        for (uint i = 0u; i < 4u; i++) q[4u * half_ + i] = vec4(field4(w[i], shift, 15u) | (field4(fifth[i], s, 1u) << 4u));
    }
}

void cq_q4_k(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    k4_codes(hi, row + (u >> 3u) * BB_Q4_K, u & 7u, 16u, 0u, q, a, c);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q4_K): the names it calls.
#ifdef BLK_Q4_K
#define BLK_CODES cq_q4_k
#define BLK_V BV_Q4_K
#define BLK_B BB_Q4_K
#endif
#endif
