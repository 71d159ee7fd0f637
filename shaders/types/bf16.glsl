// bf16.glsl — BF16 rows read 32 values (64 bytes) at a time, each the top half of an
// f32: in codes form the values themselves, a = 1 (exact) and b = -0.0 (adds nothing).
#ifndef BF16_GLSL
#define BF16_GLSL
#include "../blocks.glsl"
const uint BV_BF16 = 32u, BB_BF16 = 64u;

void cq_bf16(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    uint b = row + u * BB_BF16;
    for (uint k = 0u; k < 8u; k++) {
        uint w0 = blk_w(hi, b + 8u * k), w1 = blk_w(hi, b + 8u * k + 4u);
        q[k] = uintBitsToFloat(uvec4(w0 << 16u, w0 & 0xffff0000u, w1 << 16u, w1 & 0xffff0000u));
    }
    a = vec2(1.0), c = vec2(-0.0);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_BF16): the names it calls.
#ifdef BLK_BF16
#define BLK_CODES cq_bf16
#define BLK_V BV_BF16
#define BLK_B BB_BF16
#endif
#endif
