#version 450
// moe_combine.comp — a mixture's output into the residual stream: for token t and column
// i, x[t][i] += scale * sum_j w[t k + j] * o[t k + j][i], the k experts' outputs (the down
// products of linear.comp's MOE, one row per pair) summed in slot order, as the CPU
// reference sums them: batch invariant. scale: the family's residual scale (0: 1).
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint n_tok, dim, k, wgx;
    float scale;
} pc;

layout(std430, binding = 0) readonly buffer O { float o[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) buffer X { float x[]; };

void main()
{
    uint i = (gl_WorkGroupID.y * pc.wgx + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i >= pc.n_tok * pc.dim) return;
    uint t = i / pc.dim, c = i % pc.dim;
    precise float acc = 0.0;
    for (uint j = 0u; j < pc.k; j++) {
        uint p = t * pc.k + j;
        acc = acc + w[p] * o[p * pc.dim + c];
    }
    precise float r = x[i] + (pc.scale > 0.0 ? pc.scale * acc : acc);
    x[i] = r;
}
