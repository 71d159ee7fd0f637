// iq4_nl.glsl — IQ4_NL {f16 d; qs[16]}, 32 values: d * LEVEL[nibble j], one rounding,
// nibbles as Q4_0's (engine/model/quant_iq.c, whose LEVELS these are).
#ifndef IQ4_NL_GLSL
#define IQ4_NL_GLSL
#include "../blocks.glsl"
const uint BV_IQ4_NL = 32u, BB_IQ4_NL = 18u;
// The 16 levels (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89,
// 113) as int8, four to a word (blocks.glsl's blk_levels).
const uvec4 IQ4_LEVELS = uvec4(0xbfad9881u, 0xf6eaddcfu, 0x26190d01u, 0x71594535u);

void cq_iq4_nl(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    uint b = row + u * BB_IQ4_NL, R[7], sh = b & 2u;
    blk_span(hi, b, BB_IQ4_NL, 2u, R);
    blk_level_codes(uvec4(span_u32(R, sh, 2u), span_u32(R, sh, 6u), span_u32(R, sh, 10u), span_u32(R, sh, 14u)),
                    IQ4_LEVELS, q);
    a = vec2(unpackHalf2x16(span_u32(R, sh, 0u)).x), c = vec2(-0.0);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_IQ4_NL): the names it calls.
#ifdef BLK_IQ4_NL
#define BLK_CODES cq_iq4_nl
#define BLK_V BV_IQ4_NL
#define BLK_B BB_IQ4_NL
#endif
#endif
