// q3_k.glsl — Q3_K {hmask[32]; qs[64]; scales[12]; f16 d}, 256 values, sub-blocks of 16:
// value v = (d * (sc - 32)) * (q - 4), q = the 2 bits of v in qs (as Q2_K's) | the bit of
// v in hmask (bit v / 32 of byte v % 32) << 2, sc the 6-bit scale of v / 16: its low 4
// bits in byte j % 8 (high half for j >= 8), its top 2 in byte 8 + j % 4 at 2 * (j / 4)
// (engine/model/quant_k.c).
#ifndef Q3_K_GLSL
#define Q3_K_GLSL
#include "../blocks.glsl"
const uint BV_Q3_K = 256u, BB_Q3_K = 110u;

void dq_q3_k(bool hi, uint row, uint u, out float w[32])
{
    uint b = row + (u >> 3u) * BB_Q3_K, s = u & 7u;
    float d = blk_f16(hi, b + 108u);
    uint qoff = b + 32u + 32u * (s >> 2u), shift = 2u * (s & 3u);
    for (uint h = 0u; h < 2u; h++) {
        uint j = 2u * s + h;
        uint sc = ((blk_u8(hi, b + 96u + j % 8u) >> (j < 8u ? 0u : 4u)) & 15u) |
                  (((blk_u8(hi, b + 104u + j % 4u) >> (2u * (j / 4u))) & 3u) << 4u);
        precise float dl = d * float(int(sc) - 32);
        for (uint k = 0u; k < 4u; k++) {
            uint q = blk_u32(hi, qoff + 16u * h + 4u * k), m = blk_u32(hi, b + 16u * h + 4u * k);
            for (uint i = 0u; i < 4u; i++) {
                uint c = ((q >> (8u * i + shift)) & 3u) | (((m >> (8u * i + s)) & 1u) << 2u);
                precise float y = dl * float(int(c) - 4);
                w[16u * h + 4u * k + i] = y;
            }
        }
    }
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q3_K): the names it calls.
#ifdef BLK_Q3_K
#define BLK_DQ dq_q3_k
#define BLK_V BV_Q3_K
#define BLK_B BB_Q3_K
#endif
#endif
