// q5_1.glsl — Q5_1 {f16 d; f16 m; u32 qh; qs[16]}, 32 values: code * d + m (legacy.glsl:
// the 5-bit codes).
#ifndef Q5_1_GLSL
#define Q5_1_GLSL
#include "legacy.glsl"
const uint BV_Q5_1 = 32u, BB_Q5_1 = 24u;

// Block u of the row at byte row in codes form (blocks.glsl).
void cq_q5_1(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    vec2 dm;
    legacy_block(hi, row + u * BB_Q5_1, BB_Q5_1, 8u, 8u, 4u, 0, q, dm);
    a = vec2(dm.x), c = vec2(dm.y);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q5_1): the names it calls.
#ifdef BLK_Q5_1
#define BLK_CODES cq_q5_1
#define BLK_V BV_Q5_1
#define BLK_B BB_Q5_1
#endif
#endif
