// q4_k.glsl — Q4_K {f16 d; f16 dmin; scales[12]; qs[128]}, 256 values, sub-blocks of 32:
// value v = (d * sc) * q - dmin * m, q the 4-bit code of v, sc and m the 6-bit pair of
// v / 32 (ggml's get_scale_min_k4); unit u is sub-block u % 8 of block u / 8
// (engine/model/quant_k.c). On the GPU (engine/gpu/gpu_block.c) the 16 header bytes lie
// as in the file, then unit s's codes in 16 bytes at 16 + 16 s, byte i = code i | code
// i + 16 << 4: a unit is two 16-byte loads. linear.comp reads a header once a run of
// four units (blocks.glsl).
#ifndef Q4_K_GLSL
#define Q4_K_GLSL
#include "../blocks.glsl"
const uint BV_Q4_K = 256u, BB_Q4_K = 144u;

// The scale and offset (d * sc, -(dmin * m)) of sub-block s from its block's 16 header
// bytes h (d | dmin << 16, then the 12 bytes of 6-bit scales and mins). Without a branch:
// the sub-block may differ between the lanes of a group.
void k4_scale(uvec4 h, uint s, out vec2 a, out vec2 c)
{
    uint k = 8u * (s & 3u), y = h.y >> k, z = h.z >> k, t = h.w >> k;
    uint sc = s < 4u ? y & 63u : (t & 15u) | ((y >> 2u) & 48u);
    uint m = s < 4u ? z & 63u : ((t >> 4u) & 15u) | ((z >> 2u) & 48u);
    vec2 dd = unpackHalf2x16(h.x);
    precise float dl = dd.x * float(sc), ml = dd.y * float(m);
    a = vec2(dl), c = vec2(-ml);
}

// Code word i of a unit (w: its low four bits, byte k = code k | code k + 16 << 4, as
// laid out here) and the unit's fifth bits f (Q5_K's layout, gpu_block.c; 0 for Q4_K):
// the codes of w's low nibbles (lo) and high nibbles (up), code k in byte k.
void k5_planes(uint w, uint f, uint i, out uint lo, out uint up)
{
    uint a = i == 0u ? f << 4u : i == 1u ? f << 2u : i == 2u ? f : f >> 2u;
    uint b = i == 0u ? f << 3u : i == 1u ? f << 1u : i == 2u ? f >> 1u : f >> 3u;
    lo = (w & 0x0f0f0f0fu) | (a & 0x10101010u);
    up = ((w >> 4u) & 0x0f0f0f0fu) | (b & 0x10101010u);
}

// Sub-block s of the Q4_K/Q5_K block at b (16-aligned) in codes form, h its header: the
// low four bits at qs_off + 16 s, fifth its fifth bits (Q5_K; 0 for Q4_K).
void k4_codes_h(bool hi, uint b, uint s, uvec4 h, uint qs_off, uint fifth, out vec4 q[8], out vec2 a, out vec2 c)
{
    k4_scale(h, s, a, c);
    uvec4 w = blk_v4(hi, b + qs_off + 16u * s);
    for (uint i = 0u; i < 4u; i++) {
        uint lo, up;
        k5_planes(w[i], fifth, i, lo, up);
        q[i] = vec4(field4(lo, 0u, 31u)), q[4u + i] = vec4(field4(up, 0u, 31u));
    }
}

// The header of units u .. u + n - 1 of a run: their block's first 16 bytes.
uvec4 hd_q4_k(bool hi, uint row, uint u, uint n) { return blk_v4(hi, row + (u >> 3u) * BB_Q4_K); }

void cq_q4_k(bool hi, uint row, uint u, out vec4 q[8], out vec2 a, out vec2 c)
{
    k4_codes_h(hi, row + (u >> 3u) * BB_Q4_K, u & 7u, hd_q4_k(hi, row, u, 1u), 16u, 0u, q, a, c);
}

// Unit u for linear.comp given its run's header h, the codes in place (blocks.glsl):
// byte k's nibbles times 2^(8k).
void cqx_q4_k(bool hi, uint row, uint u, uvec4 h, out vec4 q[8], out vec2 a, out vec2 c)
{
    k4_scale(h, u & 7u, a, c);
    uvec4 w = blk_v4(hi, row + (u >> 3u) * BB_Q4_K + 16u + 16u * (u & 7u));
    for (uint i = 0u; i < 4u; i++) q[i] = nibbles_in_place(w[i]), q[4u + i] = nibbles_in_place(w[i] >> 4u);
}

// Selected by a kernel variant (linear.comp's DT_BLOCK BLK_Q4_K): the names it calls.
#ifdef BLK_Q4_K
#define BLK_CODES cq_q4_k
#define BLK_RUN 4u
#define BLK_HEAD_T uvec4
#define BLK_HEAD hd_q4_k
#define BLK_CODES_H cqx_q4_k
#define BLK_IN_PLACE
#define BLK_V BV_Q4_K
#define BLK_B BB_Q4_K
#endif
#endif
