#version 450
// tile_q4_f32.comp — a 4-bit unit as linear.comp computes Q4_0/Q4_K codes today: nibbles to
// floats, f32 x, products and sums rounded one by one; value = d * (code - 8), the -8 as
// d * -8 * sum(x) (the block's x sum is taken once per lane, shared by the rows).
#include "tile.glsl"
layout(std430, binding = 4) readonly buffer W4 { uvec4 w4[]; };   // rows x cols/2 bytes
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
        float sx = 0.0;
        for (uint v = 0; v < 8u; v++) xv[v] = x[b * 8u + v], sx = dot4(vec4(1.0), xv[v], sx);
        [[dont_unroll]] for (uint r = 0; r < TN; r++) {
            uint row = min(r0 + r, pc.rows - 1u);
            uvec4 q = w4[row * nb + b];
            float s = 0.0;
            s = dot4(nib4(q.x, 0u), xv[0], s); s = dot4(nib4(q.y, 0u), xv[1], s);
            s = dot4(nib4(q.z, 0u), xv[2], s); s = dot4(nib4(q.w, 0u), xv[3], s);
            s = dot4(nib4(q.x, 4u), xv[4], s); s = dot4(nib4(q.y, 4u), xv[5], s);
            s = dot4(nib4(q.z, 4u), xv[6], s); s = dot4(nib4(q.w, 4u), xv[7], s);
            float d = ws[row * nb + b];
            precise float a = acc[r] + (d * s + (d * -8.0) * sx);
            acc[r] = a;
        }
    }
    store_rows(r0, p, acc);
}
