// q3_k.glsl — Q3_K {hmask[32]; qs[64]; scales[12]; f16 d}, 256 values, sub-blocks of 16:
// value v = (d * (sc - 32)) * (q - 4), q = the 2 bits of v in qs (byte 32 * (v / 128) +
// v % 32, bits 2 * (v / 32 % 4)) | the bit of v in hmask (bit v / 32 of byte v % 32) << 2,
// sc the 6-bit scale of v / 16: its low 4 bits in byte j % 8 (the high half for j >= 8),
// its top 2 in byte 8 + j % 4 at bit 2 * (j / 4) (engine/model/quant_k.c). On the GPU a
// block takes 112 bytes, its 110 padded to whole 16-byte elements (gpu_weight.c).
#ifndef Q3_K_GLSL
#define Q3_K_GLSL
#include "../blocks.glsl"
const uint BV_Q3_K = 256u, BB_Q3_K = 112u;

// Scale j of the 16 bytes at 96 (the 12 scale bytes, then d).
int q3_scale(uvec4 t, uint j)
{
    uint lo = (t[(j & 7u) >> 2u] >> (8u * (j & 3u) + (j < 8u ? 0u : 4u))) & 15u;
    uint up = (t[2] >> (8u * (j & 3u) + 2u * (j >> 2u))) & 3u;
    return int(lo | (up << 4u)) - 32;
}

// A run is four units; its header the 16 bytes of scales and d, and the block's hmask
// (32 bytes, the same for every unit).
struct q3_k_head {
    uvec4 t;
    uvec4 m[2];
};

q3_k_head hd_q3_k(bool hi, uint row, uint u, uint n)
{
    uint b = row + (u >> 3u) * BB_Q3_K;
    q3_k_head h;
    h.t = blk_v4(hi, b + 96u);
    h.m[0] = blk_v4(hi, b);
    h.m[1] = blk_v4(hi, b + 16u);
    return h;
}

// Unit u given its run's header h.
void cqh_q3_k(bool hi, uint row, uint u, q3_k_head h, out vec4 q[8], out vec2 a, out vec2 c)
{
    uint b = row + (u >> 3u) * BB_Q3_K, s = u & 7u;
    float d = unpackHalf2x16(h.t.w).x;
    precise float d0 = d * float(q3_scale(h.t, 2u * s)), d1 = d * float(q3_scale(h.t, 2u * s + 1u));
    a = vec2(d0, d1), c = vec2(-0.0);
    uint qoff = b + 32u + 32u * (s >> 2u), shift = 2u * (s & 3u);
    for (uint half_ = 0u; half_ < 2u; half_++) {
        uvec4 w = blk_v4(hi, qoff + 16u * half_), m = half_ == 0u ? h.m[0] : h.m[1];
        for (uint i = 0u; i < 4u; i++)
            q[4u * half_ + i] = vec4(ivec4(field4(w[i], shift, 3u) | (field4(m[i], s, 1u) << 2u)) - 4);
    }
}

void cq_q3_k(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    cqh_q3_k(hi, row, u, hd_q3_k(hi, row, u, 1u), q, a, c);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q3_K): the names it calls.
#ifdef BLK_Q3_K
#define BLK_CODES cq_q3_k
#define BLK_RUN 4u
#define BLK_HEAD_T q3_k_head
#define BLK_HEAD hd_q3_k
#define BLK_CODES_H cqh_q3_k
#define BLK_V BV_Q3_K
#define BLK_B BB_Q3_K
#endif
#endif
