// iq4_nl.glsl — IQ4_NL {f16 d; qs[16]}, 32 values: d * LEVEL[nibble j], one rounding,
// nibbles as Q4_0's (engine/model/quant_iq.c, whose LEVELS these are).
#ifndef IQ4_NL_GLSL
#define IQ4_NL_GLSL
#include "../blocks.glsl"
const uint BV_IQ4_NL = 32u, BB_IQ4_NL = 18u;
const float IQ4_LEVELS[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0,
                                       38.0, 53.0, 69.0, 89.0, 113.0);

vec4 iq4_levels(uvec4 n) { return vec4(IQ4_LEVELS[n.x], IQ4_LEVELS[n.y], IQ4_LEVELS[n.z], IQ4_LEVELS[n.w]); }

// The levels of the 32 codes in the 16 bytes at off (any even offset; IQ4_XS's too).
void iq4_codes(bool hi, uint off, out vec4 q[8])
{
    for (uint k = 0u; k < 4u; k++) {
        uint w = blk_u32(hi, off + 4u * k);
        q[k] = iq4_levels(field4(w, 0u, 15u));
        q[k + 4u] = iq4_levels(field4(w, 4u, 15u));
    }
}

void cq_iq4_nl(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    uint b = row + u * BB_IQ4_NL;
    iq4_codes(hi, b + 2u, q);
    a = vec2(blk_f16(hi, b)), c = vec2(-0.0);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_IQ4_NL): the names it calls.
#ifdef BLK_IQ4_NL
#define BLK_CODES cq_iq4_nl
#define BLK_V BV_IQ4_NL
#define BLK_B BB_IQ4_NL
#endif
#endif
