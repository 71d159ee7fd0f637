// q5_k.glsl — Q5_K {f16 d; f16 dmin; scales[12]; qh[32]; qs[128]}: Q4_K with a fifth bit
// per value, bit v / 32 of qh[v % 32] (engine/model/quant_k.c).
#ifndef Q5_K_GLSL
#define Q5_K_GLSL
#include "q4_k.glsl"
const uint BV_Q5_K = 256u, BB_Q5_K = 176u;

void dq_q5_k(bool hi, uint row, uint u, out float w[32])
{
    k4_sub(hi, row + (u >> 3u) * BB_Q5_K, u & 7u, 48u, 16u, w);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q5_K): the names it calls.
#ifdef BLK_Q5_K
#define BLK_DQ dq_q5_k
#define BLK_V BV_Q5_K
#define BLK_B BB_Q5_K
#endif
#endif
