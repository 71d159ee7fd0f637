// q4_1.glsl — Q4_1 {f16 d; f16 m; qs[16]}, 32 values: code * d + m (legacy.glsl).
#ifndef Q4_1_GLSL
#define Q4_1_GLSL
#include "legacy.glsl"
const uint BV_Q4_1 = 32u, BB_Q4_1 = 20u;

// Block u of the row at byte row in codes form (blocks.glsl).
void cq_q4_1(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    vec2 dm;
    legacy_block(hi, row + u * BB_Q4_1, BB_Q4_1, 4u, 4u, 0u, 0, q, dm);
    a = vec2(dm.x), c = vec2(dm.y);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q4_1): the names it calls.
#ifdef BLK_Q4_1
#define BLK_CODES cq_q4_1
#define BLK_V BV_Q4_1
#define BLK_B BB_Q4_1
#endif
#endif
