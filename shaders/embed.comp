#version 450
// embed.comp — x[t] = row tokens[t] of one part of the embedding table, as f32, times
// scale (gemma's sqrt(dim), granite's embedding_scale; 1 for the others). One
// dispatch per part; a workgroup per token writes only when the token's row lies in the
// part. The dtype is a push constant: this shader is cheap and one pipeline serves all.
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint cols, n_tok, row0, n_rows;
    uint dtype, wgx;  // dtype: ggml numbering (0 F32, 1 F16, 8 Q8_0, the block types)
    float scale;
} pc;

layout(std430, binding = 0) readonly buffer T { uint tokens[]; };
layout(std430, binding = 1) writeonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer D { uint data[]; };    // floats, halves or int8
layout(std430, binding = 3) readonly buffer S { uint scales[]; };  // Q8_0 f16 scales

#include "q8_scales.glsl"
#define BLK_WORD(i) data[i]
#define BLK_VEC4(i) uvec4(data[4u * (i)], data[4u * (i) + 1u], data[4u * (i) + 2u], data[4u * (i) + 3u])
#include "types/all.glsl"

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

// The block types (shaders/types), by ggml id: a row's bytes and its 32-value unit u.
uint block_row_bytes(uint cols)
{
    switch (pc.dtype) {
    case 2u: return cols / BV_Q4_0 * BB_Q4_0;
    case 3u: return cols / BV_Q4_1 * BB_Q4_1;
    case 6u: return cols / BV_Q5_0 * BB_Q5_0;
    case 7u: return cols / BV_Q5_1 * BB_Q5_1;
    case 10u: return cols / BV_Q2_K * BB_Q2_K;
    case 11u: return cols / BV_Q3_K * BB_Q3_K;
    case 12u: return cols / BV_Q4_K * BB_Q4_K;
    case 13u: return cols / BV_Q5_K * BB_Q5_K;
    case 14u: return cols / BV_Q6_K * BB_Q6_K;
    case 20u: return cols / BV_IQ4_NL * BB_IQ4_NL;
    case 23u: return cols / BV_IQ4_XS * BB_IQ4_XS;
    case 39u: return cols / BV_MXFP4 * BB_MXFP4;
    default: return cols / BV_BF16 * BB_BF16;
    }
}

void block_unit(uint row, uint u, out float w[32])
{
    const bool hi = false;
    vec4 q[8];
    vec2 a, c;
    switch (pc.dtype) {
    case 2u: cq_q4_0(hi, row, u, q, a, c); break;
    case 3u: cq_q4_1(hi, row, u, q, a, c); break;
    case 6u: cq_q5_0(hi, row, u, q, a, c); break;
    case 7u: cq_q5_1(hi, row, u, q, a, c); break;
    case 10u: cq_q2_k(hi, row, u, q, a, c); break;
    case 11u: cq_q3_k(hi, row, u, q, a, c); break;
    case 12u: cq_q4_k(hi, row, u, q, a, c); break;
    case 13u: cq_q5_k(hi, row, u, q, a, c); break;
    case 14u: cq_q6_k(hi, row, u, q, a, c); break;
    case 20u: cq_iq4_nl(hi, row, u, q, a, c); break;
    case 23u: cq_iq4_xs(hi, row, u, q, a, c); break;
    case 39u: cq_mxfp4(hi, row, u, q, a, c); break;
    default: cq_bf16(hi, row, u, q, a, c); break;
    }
    for (uint j = 0u; j < 32u; j++) w[j] = blk_value(q, a, c, j);
}

void main()
{
    uint t = gl_WorkGroupID.y * pc.wgx + gl_WorkGroupID.x;
    if (t >= pc.n_tok) return;
    uint id = tokens[t];
    if (id < pc.row0 || id - pc.row0 >= pc.n_rows) return;
    uint r = id - pc.row0;
    if (pc.dtype == 0u || pc.dtype == 1u || pc.dtype == 8u) {
        for (uint c = gl_LocalInvocationID.x; c < pc.cols; c += gl_WorkGroupSize.x)
            x[t * pc.cols + c] = elem(r, c) * pc.scale;
        return;
    }
    // a block type: 32 values a unit, units over the workgroup
    uint row = r * block_row_bytes(pc.cols);
    for (uint u = gl_LocalInvocationID.x; u < pc.cols / 32u; u += gl_WorkGroupSize.x) {
        float w[32];
        block_unit(row, u, w);
        for (uint j = 0u; j < 32u; j++) x[t * pc.cols + u * 32u + j] = w[j] * pc.scale;
    }
}
