// q5_1.glsl — Q5_1 {f16 d; f16 m; u32 qh; qs[16]}, 32 values: code * d + m, two
// roundings (legacy.glsl: the 5-bit codes).
#ifndef Q5_1_GLSL
#define Q5_1_GLSL
#include "legacy.glsl"
const uint BV_Q5_1 = 32u, BB_Q5_1 = 24u;

// The 32 values of block u of the row at byte row, bit for bit as ggml's dequantize.
void dq_q5_1(bool hi, uint row, uint u, out float w[32])
{
    uint b = row + u * BB_Q5_1, c[32];
    float d = blk_f16(hi, b), m = blk_f16(hi, b + 2u);
    legacy_codes(hi, b + 8u, blk_u32(hi, b + 4u), c);
    for (uint j = 0u; j < 32u; j++) {
        precise float y = float(c[j]) * d + m;
        w[j] = y;
    }
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q5_1): the names it calls.
#ifdef BLK_Q5_1
#define BLK_DQ dq_q5_1
#define BLK_V BV_Q5_1
#define BLK_B BB_Q5_1
#endif
#endif
