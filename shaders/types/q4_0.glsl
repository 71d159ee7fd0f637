// q4_0.glsl — Q4_0 {f16 d; qs[16]}, 32 values: (code - 8) * d (legacy.glsl: the codes).
#ifndef Q4_0_GLSL
#define Q4_0_GLSL
#include "legacy.glsl"
const uint BV_Q4_0 = 32u, BB_Q4_0 = 18u;

// Block u of the row at byte row in codes form (blocks.glsl).
void cq_q4_0(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    vec2 dm;
    legacy_block(hi, row + u * BB_Q4_0, BB_Q4_0, 2u, 2u, 0u, 8, q, dm);
    a = vec2(dm.x), c = vec2(-0.0);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q4_0): the names it calls.
#ifdef BLK_Q4_0
#define BLK_CODES cq_q4_0
#define BLK_V BV_Q4_0
#define BLK_B BB_Q4_0
#endif
#endif
