#version 450
// rmsnorm.comp — y[i] = x[r] / sqrt(mean(x[r]^2) + eps) * w, r = use_rows ? rows[i] : i;
// add: y[i] += that times scale instead (a post-norm folded into its residual add).
// One workgroup per output row; the indirection lets the final norm gather only the
// rows that need logits. Defines: SUBGROUP.
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint n, dim, use_rows, wgx;
    float eps;
    uint add;     // 1: y += the norm times scale
    float scale;
} pc;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) buffer Y { float y[]; };
layout(std430, binding = 3) readonly buffer R { uint rows[]; };

#include "reduce.glsl"

void main()
{
    uint i = gl_WorkGroupID.y * pc.wgx + gl_WorkGroupID.x;
    if (i >= pc.n) return;  // whole workgroup: no barrier is skipped by part of it
    uint src = (pc.use_rows != 0u ? rows[i] : i) * pc.dim;
    uint dst = i * pc.dim;
    float ss = 0.0;
    for (uint c = gl_LocalInvocationID.x; c < pc.dim; c += gl_WorkGroupSize.x) {
        float v = x[src + c];
        ss += v * v;
    }
    ss = wg_sum(ss);
    float inv = 1.0 / sqrt(ss / float(pc.dim) + pc.eps);
    for (uint c = gl_LocalInvocationID.x; c < pc.dim; c += gl_WorkGroupSize.x) {
        precise float v = x[src + c] * inv * w[c];
        if (pc.add != 0u) {
            precise float r = y[dst + c] + v * pc.scale;
            v = r;
        }
        y[dst + c] = v;
    }
}
