#version 450
// attention.comp — paged grouped-query attention with online softmax. One (token, query
// head) pair per lane group: a subgroup (SUBGROUP) or a single invocation (baseline).
//
// The subgroup's lanes split the keys and, for large heads, head_dim: lane = kl * DL + dl,
// DL = pc.dim_lanes (chosen by the host from head_dim only) lanes share one position and
// split its head_dim into vec4 chunks, KL = lanes / DL key lanes take the slots of each
// cache block interleaved (slot kl, kl + KL, ...). Each key lane keeps its own running
// max / sum / accumulator; at the end the lanes' softmax states are merged by a
// shuffle-xor tree with a fixed order. Which positions a lane sees depends only on the
// token's own position, the block size and the head size, never on the batch, so a
// (token, head)'s bits are the same alone or in any batch (DESIGN.md, batch invariance).
// Query heads of one KV group sit in neighbouring groups, so their K/V reads share lines.
//
// KV_Q8: a cache row is head_dim int8 values packed four per uint, then one f16 scale per
// pc.group values, two per uint (rope_store.comp); a vec4 chunk is one uint.
//
// Limits: head_dim % 4 == 0 and head_dim <= 4 * CPL * dim_lanes (the host checks).
#extension GL_EXT_control_flow_attributes : require
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint CPL = 4;  // vec4 chunks of head_dim per lane, at most
layout(constant_id = 2) const uint PPW = 8;  // (token, head) pairs per workgroup

layout(push_constant) uniform Push {
    uint n_heads, n_kv_heads, head_dim, block_size;
    uint max_blocks, n_tok, wgx;
    float scale;
    uint group;      // KV_Q8: values per scale
    uint dim_lanes;  // lanes splitting one position's head_dim (a power of two)
} pc;

layout(std430, binding = 0) readonly buffer QKV { vec4 qkv[]; };
layout(std430, binding = 1) readonly buffer P { uint pos[]; };
layout(std430, binding = 2) readonly buffer S { uint seq[]; };
layout(std430, binding = 3) readonly buffer B { uint block_table[]; };
#ifdef KV_Q8
layout(std430, binding = 4) readonly buffer K { uint kcache[]; };
layout(std430, binding = 5) readonly buffer V { uint vcache[]; };
#else
layout(std430, binding = 4) readonly buffer K { vec4 kcache[]; };
layout(std430, binding = 5) readonly buffer V { vec4 vcache[]; };
#endif
layout(std430, binding = 6) writeonly buffer O { vec4 o[]; };

// Chunk c (four values) of the cache row starting at element `row` of the array, and
// the array elements per row.
#ifdef KV_Q8
vec4 unpack_i8(uint w) { return vec4(ivec4(int(w << 24), int(w << 16), int(w << 8), int(w)) >> 24); }
// The f16 scale of chunk c from the row's scale word (two per word).
float scale_of(uint w, uint c) { vec2 d = unpackHalf2x16(w); return ((4u * c / pc.group) & 1u) != 0u ? d.y : d.x; }
uint scale_at(uint row, uint c) { return row + pc.head_dim / 4u + 4u * c / pc.group / 2u; }
vec4 load_k(uint row, uint c) { return unpack_i8(kcache[row + c]) * scale_of(kcache[scale_at(row, c)], c); }
vec4 load_v(uint row, uint c) { return unpack_i8(vcache[row + c]) * scale_of(vcache[scale_at(row, c)], c); }
uint row_stride() { return pc.head_dim / 4u + (pc.head_dim / pc.group + 1u) / 2u; }
#else
vec4 load_k(uint row, uint c) { return kcache[row + c]; }
vec4 load_v(uint row, uint c) { return vcache[row + c]; }
uint row_stride() { return pc.head_dim / 4u; }
#endif

// One lane's online-softmax state over its subset of positions.
struct State { float m, l; };

#ifdef SUBGROUP
// Sum over the dl lanes sharing a position: a butterfly, so every one of them ends with
// the same bits (a + b == b + a).
float dim_sum(float s, uint dl)
{
    for (uint mask = 1u; mask < dl; mask <<= 1) s += subgroupShuffleXor(s, mask);
    return s;
}
#endif

void attend(uint pair, uint lane, uint lanes)
{
    uint t = pair / pc.n_heads, h = pair % pc.n_heads;
    uint kvh = h / (pc.n_heads / pc.n_kv_heads);
    uint d4 = pc.head_dim / 4u, dl = min(pc.dim_lanes, lanes);
    uint kl = lane / dl, dlane = lane % dl, kls = lanes / dl;  // key lane, dim lane, key lanes
    uint nc = (d4 + dl - 1u) / dl;  // chunks this head needs per lane (<= CPL)
    uint qrow = t * (pc.n_heads + 2u * pc.n_kv_heads) * d4 + h * d4;

    // Chunk j of this lane is c = dlane + j*dl; lanes past d4 load chunk d4-1 with a
    // zero query so that no branch depends on the lane.
    vec4 q[CPL], acc[CPL];
    uint ch[CPL];
    [[unroll]] for (uint j = 0; j < CPL; j++) {
        uint c = dlane + j * dl;
        ch[j] = min(c, d4 - 1u);
        q[j] = c < d4 ? qkv[qrow + c] * pc.scale : vec4(0.0);
        acc[j] = vec4(0.0);
    }

    uint n = pos[t] + 1u;
    uint tab = seq[t] * pc.max_blocks, stride = row_stride();
    State st = State(-3.0e38, 0.0);
    // Every lane runs the same trip counts (the dim lanes shuffle inside the loop); a
    // slot past the block's end reads slot 0 and is skipped in the update.
    uint iters = (pc.block_size + kls - 1u) / kls;
    for (uint b = 0; b * pc.block_size < n; b++) {
        uint blk = block_table[tab + b];
        uint base = (blk * pc.n_kv_heads + kvh) * pc.block_size * stride;
        uint cnt = min(pc.block_size, n - b * pc.block_size);
        for (uint i = 0; i < iters && i * kls < cnt; i++) {
            uint slot = kl + i * kls;
            bool valid = slot < cnt;
            uint row = base + (valid ? slot : 0u) * stride;
            float s = 0.0;
            [[unroll]] for (uint j = 0; j < CPL; j++)
                if (j < nc) s += dot(q[j], load_k(row, ch[j]));
#ifdef SUBGROUP
            s = dim_sum(s, dl);
#endif
            if (valid) {
                float mn = max(st.m, s);
                float corr = exp(st.m - mn), p = exp(s - mn);
                st.l = st.l * corr + p;
                st.m = mn;
                [[unroll]] for (uint j = 0; j < CPL; j++)
                    if (j < nc) acc[j] = acc[j] * corr + p * load_v(row, ch[j]);
            }
        }
    }

#ifdef SUBGROUP
    // Merge the key lanes' states, widest mask first: lane kl ends with the pairwise tree
    // ((0+KL/2) + ...) in the same order for every token. Symmetric, so all lanes agree.
    for (uint mask = lanes / 2u; mask >= dl; mask >>= 1) {
        float om = subgroupShuffleXor(st.m, mask), ol = subgroupShuffleXor(st.l, mask);
        float mn = max(st.m, om), a = exp(st.m - mn), bb = exp(om - mn);
        st.l = st.l * a + ol * bb;
        st.m = mn;
        [[unroll]] for (uint j = 0; j < CPL; j++)
            if (j < nc) acc[j] = acc[j] * a + subgroupShuffleXor(acc[j], mask) * bb;
    }
#endif

    uint orow = t * pc.n_heads * d4 + h * d4;
    float inv = 1.0 / st.l;
    [[unroll]] for (uint j = 0; j < CPL; j++) {
        uint c = dlane + j * dl;
        if (kl == 0u && j < nc && c < d4) o[orow + c] = acc[j] * inv;
    }
}

void main()
{
    uint wg = gl_WorkGroupID.y * pc.wgx + gl_WorkGroupID.x;
    uint n_pairs = pc.n_tok * pc.n_heads;
#ifdef SUBGROUP
    for (uint k = gl_SubgroupID; k < PPW; k += gl_NumSubgroups) {
        uint pair = wg * PPW + k;
        if (pair >= n_pairs) break;
        attend(pair, gl_SubgroupInvocationID, gl_SubgroupSize);
    }
#else
    uint pair = wg * PPW + gl_LocalInvocationID.x;
    if (pair < n_pairs) attend(pair, 0u, 1u);
#endif
}
