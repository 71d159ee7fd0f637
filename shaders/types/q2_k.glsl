// q2_k.glsl — Q2_K {scales[16]; qs[64]; f16 d; f16 dmin}, 256 values, sub-blocks of 16:
// value v = (d * sc) * q - dmin * m, with sc | m << 4 = scales[v / 16] and q the 2 bits of
// v in qs (byte 32 * (v / 128) + v % 32, bits 2 * (v / 32 % 4)) (engine/model/quant_k.c).
// 84-byte blocks: whole words.
#ifndef Q2_K_GLSL
#define Q2_K_GLSL
#include "../blocks.glsl"
const uint BV_Q2_K = 256u, BB_Q2_K = 84u;

void cq_q2_k(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    uint b = row + (u >> 3u) * BB_Q2_K, s = u & 7u;
    vec2 dd = unpackHalf2x16(blk_w(hi, b + 80u));
    uint sc = blk_u16(hi, b + 2u * s);
    precise float d0 = dd.x * float(sc & 15u), d1 = dd.x * float((sc >> 8u) & 15u);
    precise float m0 = dd.y * float((sc >> 4u) & 15u), m1 = dd.y * float(sc >> 12u);
    a = vec2(d0, d1), c = vec2(-m0, -m1);
    uint qoff = b + 16u + 32u * (s >> 2u), shift = 2u * (s & 3u);
    for (uint k = 0u; k < 8u; k++) q[k] = vec4(field4(blk_w(hi, qoff + 4u * k), shift, 3u));
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q2_K): the names it calls.
#ifdef BLK_Q2_K
#define BLK_CODES cq_q2_k
#define BLK_V BV_Q2_K
#define BLK_B BB_Q2_K
#endif
#endif
