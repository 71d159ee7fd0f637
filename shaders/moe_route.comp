#version 450
// moe_route.comp — a mixture of experts' routing for a step: per token, the k experts its
// router logits pick and their weights; then the (token, slot) pairs grouped by expert for
// the grouped products (linear.comp's MOE). One workgroup: its invocations take tokens,
// then experts.
//
// Per token t (logits row t, n_exp values), in the order engine/cpu/reference.c keeps:
//  - the top k logits, largest first, the lower expert first among equal ones (softmax is
//    monotonic, so they are the top k probabilities);
//  - GATING 0 (softmax): p_e = exp(l_e - max) / sum_e exp(l_e - max) over every expert,
//    the sum in expert order; w_j = p of the j-th pick; GATING 1 (softmax over the k):
//    w_j = exp(l_j - l_0) / sum_j exp(l_j - l_0);
//  - norm: w_j / max(sum_j w_j, 2^-14) (llama.cpp's clamp); then times scale (0: 1).
// Pair p = t * k + j. Outputs: w[p]; g[e] pairs per expert, g[nexp + e] where its run of
// the list starts, g[2 nexp + i] the list (each expert's pairs in pair order),
// g[2 nexp + n_tok k + p] the expert of pair p, then at A = 2 nexp + 2 n_tok k the number
// of experts some pair chose, g[A], and those experts in ascending order, g[A + 1 + i]:
// the grouped products' workgroup rows (a decode step runs k of them, not nexp); then at
// B = A + 1 + nexp, for each of the n_parts dispatches the host names (a weight part of
// experts part.x .. part.y - 1), the indirect workgroup counts (part.z, the chosen experts
// in the part, part.w) and the slot of the list where its experts start. A token's
// picks and weights are a function of its logits row alone: batch invariant.
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint n_tok, nexp, k, gating;
    uint norm;
    float scale;
    uint bias;   // 1: binding 3 holds the router's bias, added to every row (gpt-oss)
    uint n_parts;
    uvec4 part[6];  // first expert, end, workgroups along x and z (kernels_moe.h)
} pc;

layout(std430, binding = 0) readonly buffer L { float router[]; };
layout(std430, binding = 1) writeonly buffer W { float w[]; };
layout(std430, binding = 2) buffer G { uint g[]; };
layout(std430, binding = 3) readonly buffer RB { float router_bias[]; };

// Logit e of the row from base: the router's product, plus its bias where it has one (as
// the reference adds it, one rounding).
float logit(uint base, uint e)
{
    precise float v = router[base + e];
    if (pc.bias != 0u) v = v + router_bias[e];
    return v;
}

const uint MAX_K = 32u;

void route(uint t)
{
    uint base = t * pc.nexp, n_pairs = pc.n_tok * pc.k, pe = 2u * pc.nexp + n_pairs;
    uint ids[MAX_K];
    float wt[MAX_K];
    for (uint j = 0u; j < pc.k; j++) {
        uint best = 0xffffffffu;
        for (uint e = 0u; e < pc.nexp; e++) {
            bool taken = false;
            for (uint i = 0u; i < j; i++) taken = taken || ids[i] == e;
            if (!taken && (best == 0xffffffffu || logit(base, e) > logit(base, best))) best = e;
        }
        ids[j] = best;
    }
    float top = logit(base, ids[0]);
    precise float sum = 0.0;
    if (pc.gating == 0u) {
        for (uint e = 0u; e < pc.nexp; e++) sum = sum + exp(logit(base, e) - top);
    } else {
        for (uint j = 0u; j < pc.k; j++) sum = sum + exp(logit(base, ids[j]) - top);
    }
    precise float ws = 0.0;
    for (uint j = 0u; j < pc.k; j++) {
        precise float v = exp(logit(base, ids[j]) - top) / sum;
        wt[j] = v;
        ws = ws + v;
    }
    for (uint j = 0u; j < pc.k; j++) {
        precise float v = pc.norm != 0u ? wt[j] / max(ws, 6.103515625e-5) : wt[j];
        if (pc.scale > 0.0) v = v * pc.scale;
        w[t * pc.k + j] = v;
        g[pe + t * pc.k + j] = ids[j];
    }
}

void main()
{
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    uint n_pairs = pc.n_tok * pc.k, pe = 2u * pc.nexp + n_pairs;
    for (uint t = lid; t < pc.n_tok; t += wg) route(t);
    memoryBarrierBuffer();
    barrier();
    for (uint e = lid; e < pc.nexp; e += wg) {
        uint n = 0u;
        for (uint p = 0u; p < n_pairs; p++) n += g[pe + p] == e ? 1u : 0u;
        g[e] = n;
    }
    memoryBarrierBuffer();
    barrier();
    if (lid == 0u) {
        uint off = 0u, n_chosen = 0u, a = pe + n_pairs;
        for (uint e = 0u; e < pc.nexp; e++) {
            g[pc.nexp + e] = off;
            off += g[e];
            if (g[e] != 0u) g[a + 1u + n_chosen++] = e;
        }
        g[a] = n_chosen;
        for (uint i = 0u; i < pc.n_parts; i++) {
            uint first = 0u, n = 0u, at = a + 1u + pc.nexp + 4u * i;
            for (uint s = 0u; s < n_chosen; s++) {
                uint e = g[a + 1u + s];
                first += e < pc.part[i].x ? 1u : 0u;
                n += e >= pc.part[i].x && e < pc.part[i].y ? 1u : 0u;
            }
            g[at] = pc.part[i].z;
            g[at + 1u] = n;
            g[at + 2u] = pc.part[i].w;
            g[at + 3u] = first;
        }
    }
    memoryBarrierBuffer();
    barrier();
    for (uint e = lid; e < pc.nexp; e += wg) {
        uint at = 2u * pc.nexp + g[pc.nexp + e];
        for (uint p = 0u; p < n_pairs; p++)
            if (g[pe + p] == e) g[at++] = p;
    }
}
