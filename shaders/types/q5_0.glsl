// q5_0.glsl — Q5_0 {f16 d; u32 qh; qs[16]}, 32 values: (code - 16) * d, one rounding
// (legacy.glsl: the 5-bit codes).
#ifndef Q5_0_GLSL
#define Q5_0_GLSL
#include "legacy.glsl"
const uint BV_Q5_0 = 32u, BB_Q5_0 = 22u;

// The 32 values of block u of the row at byte row, bit for bit as ggml's dequantize.
void dq_q5_0(bool hi, uint row, uint u, out float w[32])
{
    uint b = row + u * BB_Q5_0, c[32];
    float d = blk_f16(hi, b);
    legacy_codes(hi, b + 6u, blk_u32(hi, b + 2u), c);
    for (uint j = 0u; j < 32u; j++) {
        precise float y = float(int(c[j]) - 16) * d;
        w[j] = y;
    }
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q5_0): the names it calls.
#ifdef BLK_Q5_0
#define BLK_DQ dq_q5_0
#define BLK_V BV_Q5_0
#define BLK_B BB_Q5_0
#endif
#endif
