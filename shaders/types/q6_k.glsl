// q6_k.glsl — Q6_K {ql[128]; qh[64]; int8 scales[16]; f16 d}, 256 values, sub-blocks of
// 16: value v = (d * sc) * (q - 32), q the 6-bit code of v (engine/model/quant_k.c). On
// the GPU (engine/gpu/gpu_block.c) a block takes 224 bytes: unit s's low four bits as
// Q4_K's at 16 s, its top two at 128 + 8 s (value i at bit 2 (i % 16) of word i / 16),
// then 16 bytes of d and scales 0-7 and 16 of d and scales 8-15.
#ifndef Q6_K_GLSL
#define Q6_K_GLSL
#include "../blocks.glsl"
const uint BV_Q6_K = 256u, BB_Q6_K = 224u;

// The int8 at byte j of the 16 bytes e.
int i8_at(uvec4 e, uint j) { return int(e[j >> 2u] << (24u - 8u * (j & 3u))) >> 24; }

void cq_q6_k(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    uint b = row + (u >> 3u) * BB_Q6_K, s = u & 7u;
    uvec4 e = blk_v4(hi, b + 192u + 16u * (s >> 2u));  // d, then scales 8 (s / 4) ..
    float d = unpackHalf2x16(e.x).x;
    uint j = 2u + 2u * (s & 3u);
    precise float d0 = d * float(i8_at(e, j)), d1 = d * float(i8_at(e, j + 1u));
    a = vec2(d0, d1), c = vec2(-0.0);
    uvec4 lo = blk_v4(hi, b + 16u * s), up = blk_v4(hi, b + 128u + 16u * (s >> 1u));
    uvec2 top = (s & 1u) != 0u ? up.zw : up.xy;
    for (uint i = 0u; i < 4u; i++) {
        q[i] = vec4(ivec4(field4(lo[i], 0u, 15u) | (crumbs4(top.x, 8u * i) << 4u)) - 32);
        q[4u + i] = vec4(ivec4(field4(lo[i], 4u, 15u) | (crumbs4(top.y, 8u * i) << 4u)) - 32);
    }
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q6_K): the names it calls.
#ifdef BLK_Q6_K
#define BLK_CODES cq_q6_k
#define BLK_V BV_Q6_K
#define BLK_B BB_Q6_K
#endif
#endif
