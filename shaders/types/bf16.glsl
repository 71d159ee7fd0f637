// bf16.glsl — BF16 rows read 32 values (64 bytes) at a time: each the top half of an f32.
#ifndef BF16_GLSL
#define BF16_GLSL
#include "../blocks.glsl"
const uint BV_BF16 = 32u, BB_BF16 = 64u;

void dq_bf16(bool hi, uint row, uint u, out float w[32])
{
    uint b = row + u * BB_BF16;
    for (uint k = 0u; k < 16u; k++) {
        uint q = blk_u32(hi, b + 4u * k);
        w[2u * k] = uintBitsToFloat(q << 16u);
        w[2u * k + 1u] = uintBitsToFloat(q & 0xffff0000u);
    }
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_BF16): the names it calls.
#ifdef BLK_BF16
#define BLK_DQ dq_bf16
#define BLK_V BV_BF16
#define BLK_B BB_BF16
#endif
#endif
