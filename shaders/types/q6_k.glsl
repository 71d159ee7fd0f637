// q6_k.glsl — Q6_K {ql[128]; qh[64]; int8 scales[16]; f16 d}, 256 values, sub-blocks of
// 16: value v = (d * sc) * (q - 32), q = the nibble of v in ql (byte 64 * (v / 128) +
// v % 64, the high half for v / 64 odd) | the 2 bits of v in qh (byte 128 + 32 * (v / 128)
// + v % 32, bits 2 * (v / 32 % 4)) << 4 (engine/model/quant_k.c). On the GPU a block
// takes 224 bytes, its 210 padded to whole 16-byte elements (gpu_weight.c).
#ifndef Q6_K_GLSL
#define Q6_K_GLSL
#include "../blocks.glsl"
const uint BV_Q6_K = 256u, BB_Q6_K = 224u;

// Scale j (int8) of the 16 bytes of scales s.
int i8_at(uvec4 s, uint j) { return int(s[j >> 2u] << (24u - 8u * (j & 3u))) >> 24; }

void cq_q6_k(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    uint b = row + (u >> 3u) * BB_Q6_K, s = u & 7u;
    uvec4 sc = blk_v4(hi, b + 192u);
    float d = unpackHalf2x16(blk_v4(hi, b + 208u).x).x;
    precise float d0 = d * float(i8_at(sc, 2u * s)), d1 = d * float(i8_at(sc, 2u * s + 1u));
    a = vec2(d0, d1), c = vec2(-0.0);
    uint loff = b + 64u * (s >> 2u) + 32u * (s & 1u), lshift = 4u * ((s >> 1u) & 1u);
    uint hoff = b + 128u + 32u * (s >> 2u), hshift = 2u * (s & 3u);
    for (uint half_ = 0u; half_ < 2u; half_++) {
        uvec4 lo = blk_v4(hi, loff + 16u * half_), up = blk_v4(hi, hoff + 16u * half_);
        for (uint i = 0u; i < 4u; i++)
            q[4u * half_ + i] = vec4(ivec4(field4(lo[i], lshift, 15u) | (field4(up[i], hshift, 3u) << 4u)) - 32);
    }
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q6_K): the names it calls.
#ifdef BLK_Q6_K
#define BLK_CODES cq_q6_k
#define BLK_V BV_Q6_K
#define BLK_B BB_Q6_K
#endif
#endif
