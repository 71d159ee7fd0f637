#version 450
// probe.comp — per invocation: a sum over 8 neighbours by subgroupShuffleXor (meaningful
// at subgroups of 8 or more), subgroupAdd, gl_SubgroupSize, a shared-memory sum of the
// workgroup, gl_SubgroupInvocationID, gl_SubgroupID (probe.c checks them).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(local_size_x = 128) in;
layout(std430, binding = 0) buffer Out { float o[]; };
shared float sh[128];
void main() {
    uint i = gl_LocalInvocationID.x, g = gl_GlobalInvocationID.x;
    float x = float((g * 7u) % 13u) - 6.0;
    float c = x;
    c += subgroupShuffleXor(c, 4u);
    c += subgroupShuffleXor(c, 2u);
    c += subgroupShuffleXor(c, 1u);
    float s = subgroupAdd(x);
    sh[i] = x;
    barrier();
    for (uint k = 64u; k > 0u; k >>= 1) {
        if (i < k) sh[i] += sh[i + k];
        barrier();
    }
    o[6u * g + 0u] = c;
    o[6u * g + 1u] = s;
    o[6u * g + 2u] = float(gl_SubgroupSize);
    o[6u * g + 3u] = sh[0];
    o[6u * g + 4u] = float(gl_SubgroupInvocationID);
    o[6u * g + 5u] = float(gl_SubgroupID);
}
