#version 450
// argmax.comp — out[i] = index of the largest of logits[i][0..n_cols), lowest index on
// ties. One workgroup per row; each invocation scans a strided slice keeping its first
// maximum, then the workgroup reduces (value, index) pairs. Defines: SUBGROUP.
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint n_rows, n_cols, wgx;
} pc;

layout(std430, binding = 0) readonly buffer L { float logits[]; };
layout(std430, binding = 1) writeonly buffer O { uint o[]; };

shared float red_v[gl_WorkGroupSize.x];
shared uint red_i[gl_WorkGroupSize.x];

// Is (v, i) before (bv, bi) in argmax order?
bool better(float v, uint i, float bv, uint bi)
{
    return v > bv || (v == bv && i < bi);
}

void main()
{
    uint row = gl_WorkGroupID.y * pc.wgx + gl_WorkGroupID.x;
    if (row >= pc.n_rows) return;
    uint lid = gl_LocalInvocationID.x;
    uint base = row * pc.n_cols;
    float bv = -1.0 / 0.0;
    uint bi = 0xffffffffu;
    for (uint c = lid; c < pc.n_cols; c += gl_WorkGroupSize.x) {
        float v = logits[base + c];
        if (v > bv || bi == 0xffffffffu) { bv = v; bi = c; }
    }
#ifdef SUBGROUP
    float m = subgroupMax(bv);
    uint mi = subgroupMin(bv == m ? bi : 0xffffffffu);
    if (gl_NumSubgroups == 1u) {
        if (lid == 0u) o[row] = mi;
        return;
    }
    if (subgroupElect()) { red_v[gl_SubgroupID] = m; red_i[gl_SubgroupID] = mi; }
    barrier();
    if (lid == 0u) {
        for (uint k = 1; k < gl_NumSubgroups; k++)
            if (better(red_v[k], red_i[k], m, mi)) { m = red_v[k]; mi = red_i[k]; }
        o[row] = mi;
    }
#else
    red_v[lid] = bv;
    red_i[lid] = bi;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
        if (lid < s && better(red_v[lid + s], red_i[lid + s], red_v[lid], red_i[lid])) {
            red_v[lid] = red_v[lid + s];
            red_i[lid] = red_i[lid + s];
        }
        barrier();
    }
    if (lid == 0u) o[row] = red_i[0];
#endif
}
