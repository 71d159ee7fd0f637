// iq4_nl.glsl — IQ4_NL {f16 d; qs[16]}, 32 values: d * LEVEL[nibble j], one rounding,
// nibbles as Q4_0's (engine/model/quant_iq.c, whose LEVELS these are).
#ifndef IQ4_NL_GLSL
#define IQ4_NL_GLSL
#include "../blocks.glsl"
const uint BV_IQ4_NL = 32u, BB_IQ4_NL = 18u;
// The 16 levels (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89,
// 113) as int8, four to a word, and picked with selects: an array indexed per lane
// became a gather from memory on lavapipe and made IQ4 products ten times slower.
const uint IQ4_L0 = 0xbfad9881u, IQ4_L1 = 0xf6eaddcfu, IQ4_L2 = 0x26190d01u, IQ4_L3 = 0x71594535u;

vec4 iq4_levels(uvec4 n)
{
    uvec4 lo = mix(uvec4(IQ4_L0), uvec4(IQ4_L1), greaterThan(n, uvec4(3u)));
    uvec4 up = mix(uvec4(IQ4_L2), uvec4(IQ4_L3), greaterThan(n, uvec4(11u)));
    uvec4 w = mix(lo, up, greaterThan(n, uvec4(7u)));
    return vec4(ivec4(w << (24u - 8u * (n & 3u))) >> 24);
}

// The levels of the 32 codes of 16 bytes (byte i: code i | code i + 16 << 4).
void iq4_codes(uvec4 w, out vec4 q[8])
{
    for (uint k = 0u; k < 4u; k++) {
        q[k] = iq4_levels(field4(w[k], 0u, 15u));
        q[k + 4u] = iq4_levels(field4(w[k], 4u, 15u));
    }
}

void cq_iq4_nl(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    uint b = row + u * BB_IQ4_NL, R[7], sh = b & 2u;
    blk_span(hi, b, BB_IQ4_NL, 2u, R);
    iq4_codes(uvec4(span_u32(R, sh, 2u), span_u32(R, sh, 6u), span_u32(R, sh, 10u), span_u32(R, sh, 14u)), q);
    a = vec2(unpackHalf2x16(span_u32(R, sh, 0u)).x), c = vec2(-0.0);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_IQ4_NL): the names it calls.
#ifdef BLK_IQ4_NL
#define BLK_CODES cq_iq4_nl
#define BLK_V BV_IQ4_NL
#define BLK_B BB_IQ4_NL
#endif
#endif
