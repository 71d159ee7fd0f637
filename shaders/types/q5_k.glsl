// q5_k.glsl — Q5_K {f16 d; f16 dmin; scales[12]; qh[32]; qs[128]}: Q4_K with a fifth bit
// per value (engine/model/quant_k.c). On the GPU (engine/gpu/gpu_block.c) the 16 header
// bytes lie as in the file, then unit s's fifth bits in word s at 16 (laid out to OR
// into its low four bits in place), then its low four bits as Q4_K's at 48 + 16 s.
#ifndef Q5_K_GLSL
#define Q5_K_GLSL
#include "q4_k.glsl"
const uint BV_Q5_K = 256u, BB_Q5_K = 176u;

// A run is four units (half a block); its header the block's first 16 bytes and the
// fifth bits of the run's units (word s % 4 of the 16 bytes at 16 + 16 (s / 4)).
struct q5_k_head {
    uvec4 h;
    uvec4 f;
};

q5_k_head hd_q5_k(bool hi, uint row, uint u, uint n)
{
    uint b = row + (u >> 3u) * BB_Q5_K;
    q5_k_head h;
    h.h = blk_v4(hi, b);
    h.f = blk_v4(hi, b + 16u + 4u * (u & 4u));
    return h;
}

void cq_q5_k(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    q5_k_head h = hd_q5_k(hi, row, u, 1u);
    k4_codes_h(hi, row + (u >> 3u) * BB_Q5_K, u & 7u, h.h, 48u, h.f[u & 3u], q, a, c);
}

// Unit u for linear.comp given its run's header h, the codes in place (blocks.glsl):
// byte k's 5-bit codes times 2^(8k).
void cqx_q5_k(bool hi, uint row, uint u, q5_k_head h, out vec4 q[8], out vec2 a, out vec2 c)
{
    k4_scale(h.h, u & 7u, a, c);
    uvec4 w = blk_v4(hi, row + (u >> 3u) * BB_Q5_K + 48u + 16u * (u & 7u));
    for (uint i = 0u; i < 4u; i++) {
        uint lo, up;
        k5_planes(w[i], h.f[u & 3u], i, lo, up);
        q[i] = bytes_in_place(lo, 31u), q[4u + i] = bytes_in_place(up, 31u);
    }
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q5_K): the names it calls.
#ifdef BLK_Q5_K
#define BLK_CODES cq_q5_k
#define BLK_RUN 4u
#define BLK_HEAD_T q5_k_head
#define BLK_HEAD hd_q5_k
#define BLK_CODES_H cqx_q5_k
#define BLK_IN_PLACE
#define BLK_V BV_Q5_K
#define BLK_B BB_Q5_K
#endif
#endif
