// mxfp4.glsl — MXFP4 as laid out at upload (engine/gpu/gpu_block.c): 18 bytes {e; 0;
// qs[16]}, the file's 17 with a zero byte after the scale, so that blocks lie at even
// offsets and read as IQ4_NL's; 32 values LEVEL[nibble j] * d with d = 2^(e - 128), the
// E8M0 scale halved and the E2M1 levels doubled (engine/model/quant_fp4.c), one exact
// product as ggml's.
#ifndef MXFP4_GLSL
#define MXFP4_GLSL
#include "../blocks.glsl"
const uint BV_MXFP4 = 32u, BB_MXFP4 = 18u;
// The levels 0, 1, 2, 3, 4, 6, 8, 12, then the same negated (code 8: 0), as int8 four to
// a word (blocks.glsl's blk_levels).
const uvec4 MXFP4_LEVELS = uvec4(0x03020100u, 0x0c080604u, 0xfdfeff00u, 0xf4f8fafcu);

// ggml's GGML_E8M0_TO_FP32_HALF: e 0 and 1 are the subnormals 2^-128 and 2^-127 (a
// device may flush them to zero: only an all-zero block has them, and its values are 0
// either way).
float mxfp4_scale(uint e) { return uintBitsToFloat(e < 2u ? 0x00200000u << e : (e - 1u) << 23); }

void cq_mxfp4(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    uint b = row + u * BB_MXFP4, R[7], sh = b & 2u;
    blk_span(hi, b, BB_MXFP4, 2u, R);
    blk_level_codes(uvec4(span_u32(R, sh, 2u), span_u32(R, sh, 6u), span_u32(R, sh, 10u), span_u32(R, sh, 14u)),
                    MXFP4_LEVELS, q);
    a = vec2(mxfp4_scale(span_u32(R, sh, 0u) & 0xffu)), c = vec2(-0.0);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_MXFP4): the names it calls.
#ifdef BLK_MXFP4
#define BLK_CODES cq_mxfp4
#define BLK_V BV_MXFP4
#define BLK_B BB_MXFP4
#endif
#endif
