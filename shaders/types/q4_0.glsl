// q4_0.glsl — Q4_0 {f16 d; qs[16]}, 32 values: (code - 8) * d, one rounding
// (legacy.glsl: the codes).
#ifndef Q4_0_GLSL
#define Q4_0_GLSL
#include "legacy.glsl"
const uint BV_Q4_0 = 32u, BB_Q4_0 = 18u;

// The 32 values of block u of the row at byte row, bit for bit as ggml's dequantize.
void dq_q4_0(bool hi, uint row, uint u, out float w[32])
{
    uint b = row + u * BB_Q4_0, c[32];
    float d = blk_f16(hi, b);
    legacy_codes(hi, b + 2u, 0u, c);
    for (uint j = 0u; j < 32u; j++) {
        precise float y = float(int(c[j]) - 8) * d;
        w[j] = y;
    }
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q4_0): the names it calls.
#ifdef BLK_Q4_0
#define BLK_DQ dq_q4_0
#define BLK_V BV_Q4_0
#define BLK_B BB_Q4_0
#endif
#endif
