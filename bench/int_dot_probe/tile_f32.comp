#version 450
// tile_f32.comp — linear.comp's Q8_0 decode unit as it is: int8 weights to floats, f32 x.
#include "tile.glsl"
vec4 i8x4(uint v) { return vec4(ivec4(int(v << 24), int(v << 16), int(v << 8), int(v)) >> 24); }
float dot4(vec4 a, vec4 b, float s)
{
    precise float r = s + a.x * b.x;
    r = r + a.y * b.y;
    r = r + a.z * b.z;
    r = r + a.w * b.w;
    return r;
}
void main()
{
    uint p = gl_LocalInvocationID.x, r0 = gl_WorkGroupID.x * TN, nb = pc.cols / 32u;
    float acc[TN];
    for (uint r = 0; r < TN; r++) acc[r] = 0.0;
    for (uint b = p; b < nb; b += 8u) {
        vec4 xv[8];
        for (uint v = 0; v < 8u; v++) xv[v] = x[b * 8u + v];
        [[dont_unroll]] for (uint r = 0; r < TN; r++) {
            uint row = min(r0 + r, pc.rows - 1u);
            uvec4 q0 = w[(row * nb + b) * 2u], q1 = w[(row * nb + b) * 2u + 1u];
            float s = 0.0;
            s = dot4(i8x4(q0.x), xv[0], s); s = dot4(i8x4(q0.y), xv[1], s);
            s = dot4(i8x4(q0.z), xv[2], s); s = dot4(i8x4(q0.w), xv[3], s);
            s = dot4(i8x4(q1.x), xv[4], s); s = dot4(i8x4(q1.y), xv[5], s);
            s = dot4(i8x4(q1.z), xv[6], s); s = dot4(i8x4(q1.w), xv[7], s);
            precise float a = acc[r] + ws[row * nb + b] * s;
            acc[r] = a;
        }
    }
    store_rows(r0, p, acc);
}
