// q5_1.glsl — Q5_1 {f16 d; f16 m; u32 qh; qs[16]}, 32 values: code * d + m (legacy.glsl:
// the 5-bit codes).
#ifndef Q5_1_GLSL
#define Q5_1_GLSL
#include "legacy.glsl"
const uint BV_Q5_1 = 32u, BB_Q5_1 = 24u;

// Block u of the row at byte row in codes form (blocks.glsl).
void cq_q5_1(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    uint b = row + u * BB_Q5_1;
    legacy_codes(hi, b + 8u, blk_w(hi, b + 4u), 0, q);
    a = vec2(blk_f16(hi, b));
    c = vec2(blk_f16(hi, b + 2u));
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q5_1): the names it calls.
#ifdef BLK_Q5_1
#define BLK_CODES cq_q5_1
#define BLK_V BV_Q5_1
#define BLK_B BB_Q5_1
#endif
#endif
