// q5_k.glsl — Q5_K {f16 d; f16 dmin; scales[12]; qh[32]; qs[128]}: Q4_K with a fifth bit
// per value (engine/model/quant_k.c). On the GPU (engine/gpu/gpu_block.c) the 16 header
// bytes lie as in the file, then unit s's fifth bits in word s at 16 (bit i: value i),
// then its low four bits as Q4_K's at 48 + 16 s.
#ifndef Q5_K_GLSL
#define Q5_K_GLSL
#include "q4_k.glsl"
const uint BV_Q5_K = 256u, BB_Q5_K = 176u;

// The header of units u .. u + n - 1 of a run: their block's first 16 bytes.
uvec4 hd_q5_k(bool hi, uint row, uint u, uint n) { return blk_v4(hi, row + (u >> 3u) * BB_Q5_K); }

// Unit u given its run's header h.
void cqh_q5_k(bool hi, uint row, uint u, uvec4 h, out vec4 q[8], out vec2 a, out vec2 c)
{
    k4_codes_h(hi, row + (u >> 3u) * BB_Q5_K, u & 7u, h, 48u, 16u, q, a, c);
}

void cq_q5_k(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    cqh_q5_k(hi, row, u, hd_q5_k(hi, row, u, 1u), q, a, c);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q5_K): the names it calls.
#ifdef BLK_Q5_K
#define BLK_CODES cq_q5_k
#define BLK_RUN 4u
#define BLK_HEAD_T uvec4
#define BLK_HEAD hd_q5_k
#define BLK_CODES_H cqh_q5_k
#define BLK_V BV_Q5_K
#define BLK_B BB_Q5_K
#endif
#endif
