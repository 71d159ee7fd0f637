// reduce.glsl — wg_sum(v): the sum of v over the workgroup, returned to every invocation.
// Call from uniform control flow. SUBGROUP: subgroupAdd, plus one shared-memory step
// when the workgroup holds several subgroups; baseline: a shared-memory tree (workgroup
// size a power of two).
#ifdef SUBGROUP
shared float wg_red[gl_WorkGroupSize.x];

float wg_sum(float v)
{
    v = subgroupAdd(v);
    if (gl_NumSubgroups == 1u) return v;
    if (subgroupElect()) wg_red[gl_SubgroupID] = v;
    barrier();
    float s = 0.0;
    for (uint k = 0; k < gl_NumSubgroups; k++) s += wg_red[k];
    barrier();
    return s;
}
#else
shared float wg_red[gl_WorkGroupSize.x];

float wg_sum(float v)
{
    uint lid = gl_LocalInvocationID.x;
    wg_red[lid] = v;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
        if (lid < s) wg_red[lid] += wg_red[lid + s];
        barrier();
    }
    float r = wg_red[0];
    barrier();
    return r;
}
#endif
