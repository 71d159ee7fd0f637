// iq4_xs.glsl — IQ4_XS {f16 d; u16 scales_h; scales_l[4]; qs[128]}, 256 values in eight
// sub-blocks of 32; unit u is sub-block u % 8 of block u / 8: d * (s - 32), rounded, then
// times LEVEL[nibble] (engine/model/quant_iq.c).
#ifndef IQ4_XS_GLSL
#define IQ4_XS_GLSL
#include "iq4_nl.glsl"
const uint BV_IQ4_XS = 256u, BB_IQ4_XS = 136u;

// Blocks of 136 bytes start 8-aligned: the 8 header bytes lie in one 16-byte element and
// a sub-block's 16 code bytes in one or two. The 8 lanes of a group read one block, so
// the branch of blk_v4_8 is the same for all of them.
void cq_iq4_xs(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    uint b = row + (u >> 3u) * BB_IQ4_XS, i = u & 7u;
    uvec4 e = blk_v4(hi, b & ~15u);
    uvec2 h = (b & 8u) != 0u ? e.zw : e.xy;  // d | scales_h << 16, scales_l
    uint lo = (h.y >> (4u * i)) & 15u, up = (h.x >> (16u + 2u * i)) & 3u;
    precise float dl = unpackHalf2x16(h.x).x * float(int(lo | (up << 4u)) - 32);
    blk_level_codes(blk_v4_8(hi, b + 8u + 16u * i), IQ4_LEVELS, q);
    a = vec2(dl), c = vec2(-0.0);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_IQ4_XS): the names it calls.
#ifdef BLK_IQ4_XS
#define BLK_CODES cq_iq4_xs
#define BLK_V BV_IQ4_XS
#define BLK_B BB_IQ4_XS
#endif
#endif
