#version 450
// embed.comp — x[t] = row tokens[t] of one part of the embedding table, as f32. One
// dispatch per part; a workgroup per token writes only when the token's row lies in the
// part. The dtype is a push constant: this shader is cheap and one pipeline serves all.
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint cols, n_tok, row0, n_rows;
    uint dtype, wgx;  // dtype: ggml numbering (0 F32, 1 F16, 8 Q8_0)
} pc;

layout(std430, binding = 0) readonly buffer T { uint tokens[]; };
layout(std430, binding = 1) writeonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer D { uint data[]; };    // floats, halves or int8
layout(std430, binding = 3) readonly buffer S { uint scales[]; };  // Q8_0 f16 scales

#include "q8_scales.glsl"

float half_at(uint h) { return unpackHalf2x16(data[h >> 1])[h & 1u]; }
float scale_at(uint h) { return unpackHalf2x16(scales[h >> 1])[h & 1u]; }

float elem(uint r, uint c)
{
    uint e = r * pc.cols + c;
    if (pc.dtype == 0u) return uintBitsToFloat(data[e]);
    if (pc.dtype == 1u) return half_at(e);
    int q = int(data[e >> 2] << (24u - 8u * (e & 3u))) >> 24;
    return float(q) * scale_at(q8_scale_half(r, c / 32u, pc.cols));
}

void main()
{
    uint t = gl_WorkGroupID.y * pc.wgx + gl_WorkGroupID.x;
    if (t >= pc.n_tok) return;
    uint id = tokens[t];
    if (id < pc.row0 || id - pc.row0 >= pc.n_rows) return;
    uint r = id - pc.row0;
    for (uint c = gl_LocalInvocationID.x; c < pc.cols; c += gl_WorkGroupSize.x)
        x[t * pc.cols + c] = elem(r, c);
}
