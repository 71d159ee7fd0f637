// q2_k.glsl — Q2_K {scales[16]; qs[64]; f16 d; f16 dmin}, 256 values, sub-blocks of 16:
// value v = (d * sc) * q - dmin * m, with sc | m << 4 = scales[v / 16] and q the 2 bits of
// v in qs (byte 32 * (v / 128) + v % 32, bits 2 * (v / 32 % 4)). Unit u: values 32 * (u % 8)
// .. of block u / 8 (engine/model/quant_k.c).
#ifndef Q2_K_GLSL
#define Q2_K_GLSL
#include "../blocks.glsl"
const uint BV_Q2_K = 256u, BB_Q2_K = 84u;

void dq_q2_k(bool hi, uint row, uint u, out float w[32])
{
    uint b = row + (u >> 3u) * BB_Q2_K, s = u & 7u;
    float d = blk_f16(hi, b + 80u), dmin = blk_f16(hi, b + 82u);
    uint qoff = b + 16u + 32u * (s >> 2u), shift = 2u * (s & 3u);
    for (uint h = 0u; h < 2u; h++) {  // the unit's two sub-blocks of 16
        uint sc = blk_u8(hi, b + 2u * s + h);
        precise float dl = d * float(sc & 15u), ml = dmin * float(sc >> 4u);
        for (uint k = 0u; k < 4u; k++) {
            uint q = blk_u32(hi, qoff + 16u * h + 4u * k);
            for (uint i = 0u; i < 4u; i++) {
                precise float y = dl * float((q >> (8u * i + shift)) & 3u) - ml;
                w[16u * h + 4u * k + i] = y;
            }
        }
    }
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q2_K): the names it calls.
#ifdef BLK_Q2_K
#define BLK_DQ dq_q2_k
#define BLK_V BV_Q2_K
#define BLK_B BB_Q2_K
#endif
#endif
