// iq4_xs.glsl — IQ4_XS {f16 d; u16 scales_h; scales_l[4]; qs[128]}, 256 values in eight
// sub-blocks of 32; unit u is sub-block u % 8 of block u / 8: d * (s - 32), rounded, then
// times LEVEL[nibble] (engine/model/quant_iq.c).
#ifndef IQ4_XS_GLSL
#define IQ4_XS_GLSL
#include "iq4_nl.glsl"
const uint BV_IQ4_XS = 256u, BB_IQ4_XS = 136u;

void cq_iq4_xs(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    uint b = row + (u >> 3u) * BB_IQ4_XS, i = u & 7u, h = blk_w(hi, b);
    uint lo = (blk_w(hi, b + 4u) >> (4u * i)) & 15u, up = (h >> (16u + 2u * i)) & 3u;
    precise float dl = unpackHalf2x16(h).x * float(int(lo | (up << 4u)) - 32);
    iq4_codes(hi, b + 8u + 16u * i, q);
    a = vec2(dl), c = vec2(-0.0);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_IQ4_XS): the names it calls.
#ifdef BLK_IQ4_XS
#define BLK_CODES cq_iq4_xs
#define BLK_V BV_IQ4_XS
#define BLK_B BB_IQ4_XS
#endif
#endif
