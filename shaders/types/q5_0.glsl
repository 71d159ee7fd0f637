// q5_0.glsl — Q5_0 {f16 d; u32 qh; qs[16]}, 32 values: (code - 16) * d (legacy.glsl: the
// 5-bit codes).
#ifndef Q5_0_GLSL
#define Q5_0_GLSL
#include "legacy.glsl"
const uint BV_Q5_0 = 32u, BB_Q5_0 = 22u;

// Block u of the row at byte row in codes form (blocks.glsl).
void cq_q5_0(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    vec2 dm;
    legacy_block(hi, row + u * BB_Q5_0, BB_Q5_0, 2u, 6u, 2u, 16, q, dm);
    a = vec2(dm.x), c = vec2(-0.0);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q5_0): the names it calls.
#ifdef BLK_Q5_0
#define BLK_CODES cq_q5_0
#define BLK_V BV_Q5_0
#define BLK_B BB_Q5_0
#endif
#endif
