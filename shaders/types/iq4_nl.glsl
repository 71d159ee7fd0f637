// iq4_nl.glsl — IQ4_NL {f16 d; qs[16]}, 32 values: d * LEVEL[nibble j], one rounding,
// nibbles as Q4_0's (engine/model/quant_iq.c, whose LEVELS these are).
#ifndef IQ4_NL_GLSL
#define IQ4_NL_GLSL
#include "../blocks.glsl"
const uint BV_IQ4_NL = 32u, BB_IQ4_NL = 18u;
const float IQ4_LEVELS[16] = float[16](-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0,
                                       38.0, 53.0, 69.0, 89.0, 113.0);

// 32 values at scale d from the 16 bytes of codes at off (IQ4_XS's sub-blocks too).
void iq4_codes(bool hi, uint off, float d, out float w[32])
{
    for (uint k = 0u; k < 4u; k++) {
        uint q = blk_u32(hi, off + 4u * k);
        for (uint i = 0u; i < 4u; i++) {
            precise float lo = d * IQ4_LEVELS[nib(q, 2u * i)], up = d * IQ4_LEVELS[nib(q, 2u * i + 1u)];
            w[4u * k + i] = lo;
            w[16u + 4u * k + i] = up;
        }
    }
}

void dq_iq4_nl(bool hi, uint row, uint u, out float w[32])
{
    uint b = row + u * BB_IQ4_NL;
    iq4_codes(hi, b + 2u, blk_f16(hi, b), w);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_IQ4_NL): the names it calls.
#ifdef BLK_IQ4_NL
#define BLK_DQ dq_iq4_nl
#define BLK_V BV_IQ4_NL
#define BLK_B BB_IQ4_NL
#endif
#endif
