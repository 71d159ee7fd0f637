#version 450
// tile_q4k_f32.comp — the 4-bit unit as Q4_K's decoder gives it to linear.comp today (types/
// q4_k.glsl): per row and unit the super-block's 16-byte header loaded (d, dmin, 12 bytes of
// 6-bit scales and mins) and this sub-block's pair unpacked without a branch, the codes in
// a second 16-byte load, two halves each a * s + c * sx. Beside tile_q4_f32.comp (one scale,
// one offset a block) it measures what the K-quant header costs per row and unit.
#include "tile.glsl"
layout(std430, binding = 4) readonly buffer W4 { uvec4 w4[]; };   // rows x cols/2 bytes (codes)
layout(std430, binding = 5) readonly buffer HD { uvec4 hd[]; };   // rows x cols/256 headers
float dot4(vec4 a, vec4 b, float s)
{
    precise float r = s + a.x * b.x;
    r = r + a.y * b.y;
    r = r + a.z * b.z;
    r = r + a.w * b.w;
    return r;
}
vec4 nib4(uint v, uint shift) { return vec4(uvec4(v >> shift, v >> (shift + 8u), v >> (shift + 16u), v >> (shift + 24u)) & 15u); }
void main()
{
    uint p = gl_LocalInvocationID.x, r0 = gl_WorkGroupID.x * TN, nb = pc.cols / 32u;
    float acc[TN];
    for (uint r = 0; r < TN; r++) acc[r] = 0.0;
    for (uint b = p; b < nb; b += 8u) {
        vec4 xv[8];
        float sx0 = 0.0, sx1 = 0.0;
        for (uint v = 0; v < 4u; v++) xv[v] = x[b * 8u + v], sx0 = dot4(vec4(1.0), xv[v], sx0);
        for (uint v = 4; v < 8u; v++) xv[v] = x[b * 8u + v], sx1 = dot4(vec4(1.0), xv[v], sx1);
        uint s = b & 7u;
        [[dont_unroll]] for (uint r = 0; r < TN; r++) {
            uint row = min(r0 + r, pc.rows - 1u);
            uvec4 h = hd[row * (nb / 8u) + b / 8u];
            uint k = 8u * (s & 3u), y = h.y >> k, z = h.z >> k, t = h.w >> k;
            uint sc = s < 4u ? y & 63u : (t & 15u) | ((y >> 2u) & 48u);
            uint m = s < 4u ? z & 63u : ((t >> 4u) & 15u) | ((z >> 2u) & 48u);
            vec2 dd = unpackHalf2x16(h.x);
            precise float a = dd.x * float(sc), c = -(dd.y * float(m));
            uvec4 q = w4[row * nb + b];
            float s0 = 0.0, s1 = 0.0;
            s0 = dot4(nib4(q.x, 0u), xv[0], s0); s0 = dot4(nib4(q.y, 0u), xv[1], s0);
            s0 = dot4(nib4(q.z, 0u), xv[2], s0); s0 = dot4(nib4(q.w, 0u), xv[3], s0);
            s1 = dot4(nib4(q.x, 4u), xv[4], s1); s1 = dot4(nib4(q.y, 4u), xv[5], s1);
            s1 = dot4(nib4(q.z, 4u), xv[6], s1); s1 = dot4(nib4(q.w, 4u), xv[7], s1);
            precise float v0 = a * s0 + c * sx0, v1 = a * s1 + c * sx1;
            precise float ra = acc[r] + (v0 + v1);
            acc[r] = ra;
        }
    }
    store_rows(r0, p, acc);
}
