// q6_k.glsl — Q6_K {ql[128]; qh[64]; int8 scales[16]; f16 d}, 256 values, sub-blocks of
// 16: value v = (d * sc) * (q - 32), q the 6-bit code of v (engine/model/quant_k.c). On
// the GPU (engine/gpu/gpu_block.c) a block takes 224 bytes: unit s's low four bits as
// Q4_K's at 16 s, its top two bits at 128 + 8 s (two words, laid out so that they OR into
// a word of low bits in place), then 16 bytes of d and scales 0-7 and 16 of d and scales
// 8-15. A run is four units: the scales' 16 bytes and the top bits of its four units.
#ifndef Q6_K_GLSL
#define Q6_K_GLSL
#include "../blocks.glsl"
const uint BV_Q6_K = 256u, BB_Q6_K = 224u;

// The int8 at byte j of the 16 bytes e.
int i8_at(uvec4 e, uint j) { return int(e[j >> 2u] << (24u - 8u * (j & 3u))) >> 24; }

// The run of unit u: its scales (d, then scales 8 (s / 4) ..) and its units' top bits
// (units 2i and 2i + 1 of the run in t[i]).
struct q6_k_head {
    uvec4 e;
    uvec4 t[2];
};

// The header of units u .. u + n - 1 of a run (n a constant: 1 reads only unit u's pair).
q6_k_head hd_q6_k(bool hi, uint row, uint u, uint n)
{
    uint b = row + (u >> 3u) * BB_Q6_K;
    q6_k_head h;
    h.e = blk_v4(hi, b + 192u + 4u * (u & 4u));
    if (n <= 2u) {
        h.t[0] = h.t[1] = blk_v4(hi, b + 128u + 8u * (u & 6u));
    } else {
        h.t[0] = blk_v4(hi, b + 128u + 8u * (u & 4u));
        h.t[1] = blk_v4(hi, b + 144u + 8u * (u & 4u));
    }
    return h;
}

// Unit u's 6-bit codes where they lie: word i of lo and hi2 the values of its low (lo)
// and high (hi2) nibbles, each byte k holding a 6-bit code at bit 0.
void q6_k_planes(q6_k_head h, uint u, uint i, uvec4 lo, out uint lo6, out uint hi6)
{
    uvec4 t4 = (u & 2u) != 0u ? h.t[1] : h.t[0];
    uint w = (u & 1u) != 0u ? t4[2u + (i >> 1u)] : t4[i >> 1u];
    uint a = (i & 1u) != 0u ? w : w << 4u, b = (i & 1u) != 0u ? w >> 2u : w << 2u;
    lo6 = (lo[i] & 0x0f0f0f0fu) | (a & 0x30303030u);
    hi6 = ((lo[i] >> 4u) & 0x0f0f0f0fu) | (b & 0x30303030u);
}

// The scales of unit u's halves.
vec2 q6_k_scales(q6_k_head h, uint u)
{
    float d = unpackHalf2x16(h.e.x).x;
    uint j = 2u + 2u * (u & 3u);
    precise float d0 = d * float(i8_at(h.e, j)), d1 = d * float(i8_at(h.e, j + 1u));
    return vec2(d0, d1);
}

// Unit u in codes form, ggml's q - 32 (h: its run's header).
void cqh_q6_k(bool hi, uint row, uint u, q6_k_head h, out vec4 q[8], out vec2 a, out vec2 c)
{
    a = q6_k_scales(h, u), c = vec2(-0.0);
    uvec4 lo = blk_v4(hi, row + (u >> 3u) * BB_Q6_K + 16u * (u & 7u));
    for (uint i = 0u; i < 4u; i++) {
        uint lo6, hi6;
        q6_k_planes(h, u, i, lo, lo6, hi6);
        q[i] = vec4(ivec4(field4(lo6, 0u, 63u)) - 32);
        q[4u + i] = vec4(ivec4(field4(hi6, 0u, 63u)) - 32);
    }
}

// Unit u for linear.comp, the codes in place (blocks.glsl): q as it lies, byte k's times
// 2^(8k), and the 32 folded into the offset: (d sc) q - 32 (d sc), both products exact
// (an f16 times a 7-bit scale times a 6-bit code fits a float's 24 bits).
void cqx_q6_k(bool hi, uint row, uint u, q6_k_head h, out vec4 q[8], out vec2 a, out vec2 c)
{
    a = q6_k_scales(h, u);
    precise vec2 off = -32.0 * a;
    c = off;
    uvec4 lo = blk_v4(hi, row + (u >> 3u) * BB_Q6_K + 16u * (u & 7u));
    for (uint i = 0u; i < 4u; i++) {
        uint lo6, hi6;
        q6_k_planes(h, u, i, lo, lo6, hi6);
        q[i] = bytes_in_place(lo6, 63u), q[4u + i] = bytes_in_place(hi6, 63u);
    }
}

void cq_q6_k(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    cqh_q6_k(hi, row, u, hd_q6_k(hi, row, u, 1u), q, a, c);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q6_K): the names it calls.
#ifdef BLK_Q6_K
#define BLK_CODES cq_q6_k
#define BLK_RUN 4u
#define BLK_HEAD_T q6_k_head
#define BLK_HEAD hd_q6_k
#define BLK_CODES_H cqx_q6_k
#define BLK_IN_PLACE
#define BLK_V BV_Q6_K
#define BLK_B BB_Q6_K
#endif
#endif
