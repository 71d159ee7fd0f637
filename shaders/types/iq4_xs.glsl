// iq4_xs.glsl — IQ4_XS {f16 d; u16 scales_h; scales_l[4]; qs[128]}, 256 values in eight
// sub-blocks of 32; unit u is sub-block u % 8 of block u / 8: d * (s - 32), rounded, then
// times LEVEL[nibble] (engine/model/quant_iq.c).
#ifndef IQ4_XS_GLSL
#define IQ4_XS_GLSL
#include "iq4_nl.glsl"
const uint BV_IQ4_XS = 256u, BB_IQ4_XS = 136u;

void dq_iq4_xs(bool hi, uint row, uint u, out float w[32])
{
    uint b = row + (u >> 3u) * BB_IQ4_XS, i = u & 7u;
    uint lo = (blk_u8(hi, b + 4u + i / 2u) >> (4u * (i & 1u))) & 15u, up = (blk_u16(hi, b + 2u) >> (2u * i)) & 3u;
    precise float dl = blk_f16(hi, b) * float(int(lo | (up << 4u)) - 32);
    iq4_codes(hi, b + 8u + 16u * i, dl, w);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_IQ4_XS): the names it calls.
#ifdef BLK_IQ4_XS
#define BLK_DQ dq_iq4_xs
#define BLK_V BV_IQ4_XS
#define BLK_B BB_IQ4_XS
#endif
#endif
