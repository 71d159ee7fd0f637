#version 450
// attention_merge.comp — the second pass of split-K attention: for each (token, head) pair
// of the split dispatch, its chunks' states (attention.comp with SPLIT) merged in chunk
// order by the formula the one-pass attention uses at each chunk's end (attn_merge.glsl),
// then normalised as attention.comp stores a pair: the same bits as the one-pass kernel.
// An invocation per pair and vec4 of head_dim.
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint n_pairs;   // (rows of the split dispatch) x n_heads
    uint d4;        // head_dim / 4
    uint n_chunks;
    uint out0;      // row0 * n_heads * d4: pair i of the dispatch writes o[out0 + i * d4 ..]
    uint wgx;
    uint n_heads;   // pair i is of query head i % n_heads
    uint sinks;     // 1: binding 3 holds the heads' sinks, merged in last (attention.comp)
} pc;

layout(std430, binding = 0) readonly buffer PML { vec2 part_ml[]; };
layout(std430, binding = 1) readonly buffer PACC { vec4 part_acc[]; };
layout(std430, binding = 2) writeonly buffer O { vec4 o[]; };
layout(std430, binding = 3) readonly buffer SK { float sink[]; };

#include "attn_merge.glsl"

void main()
{
    uint i = (gl_WorkGroupID.y * pc.wgx + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (i >= pc.n_pairs * pc.d4) return;
    uint pair = i / pc.d4, c = i % pc.d4;
    float rm = -3.0e38, rl = 0.0;
    vec4 racc = vec4(0.0);
    for (uint k = 0; k < pc.n_chunks; k++) {
        uint slot = pair * pc.n_chunks + k;
        vec2 ml = part_ml[slot];
        if (ml.y == 0.0) continue;  // no position of the pair in this chunk
        vec4 a = part_acc[slot * pc.d4 + c];
        if (rl == 0.0) {
            rm = ml.x;
            rl = ml.y;
            racc = a;
        } else {
            float mn, ca, cb;
            merge_scales(rm, ml.x, mn, ca, cb);
            rm = mn;
            rl = merge_sum(rl, ca, ml.y, cb);
            racc = merge_acc(racc, ca, a, cb);
        }
    }
    if (pc.sinks != 0u) {
        float mn, ca, cb;
        merge_scales(rm, sink[pair % pc.n_heads], mn, ca, cb);
        rl = merge_sum(rl, ca, 1.0, cb);
        racc = merge_acc(racc, ca, vec4(0.0), 0.0);
    }
    precise float inv = 1.0 / rl;
    precise vec4 r = racc * inv;
    o[pc.out0 + i] = r;
}
