#version 450
// attention.comp — paged grouped-query attention with online softmax. A lane group (a
// subgroup, or one invocation in the baseline) serves a tile: up to SLOTS (token, query
// head) pairs whose keys and values are the same cache rows, tile_heads query heads of
// one KV head times tile_tok consecutive tokens of the batch. The tile walks the
// positions of its sequence one at a time; each K/V row is loaded once per tile and used
// by all its pairs (GQA heads, and the tokens of one sequence in a prefill chunk). Each
// pair's arithmetic is its own and the same whichever tile, slot or batch it is in
// (docs/kernels.md, batch invariance): a pair updates its state only at its own positions
// (0..pos[t]) and in position order. Tokens of a tile that belong to different sequences
// (decode batches) are served one sequence at a time ("runs").
//
// The lanes of the subgroup split head_dim: lane dl holds chunks (vec4) dl, dl + lanes,
// ... (CPL of them, the host picks CPL from head_dim), so a K or V fetch of all lanes is
// one contiguous piece of the row. A position's dot product is summed over the lanes by
// subgroupAdd (its order is fixed for a given subgroup size, the same for every tile);
// the softmax state is then the same in every lane, and no lanes merge at the end.
// Deliberately no shuffles: on lavapipe one costs ~350 cycles (measured); this needs one
// subgroupAdd per position and pair, and no merge of lane states.
//
// KV_Q8: a cache row is head_dim int8 values packed four per uint, then one f16 scale per
// 2^group_log2 values, two per uint (rope_store.comp); a vec4 chunk is one uint.
// KV_F16: a cache row is head_dim halves, two per uint; a vec4 chunk is two uints (storage
// buffers only: no texel variant).
// TEXEL: K and V are uniform texel buffers (RGBA32F; R32UI for KV_Q8, whose rows are not
// 16-byte aligned) read with texelFetch, which lavapipe does far faster than storage-
// buffer loads (docs/kernels.md).
//
// A local (sliding-window) layer: a pair at position pos attends to positions
// pos - window + 1 .. pos only (window 0: all); the walk starts at the earliest position
// one of the run's pairs needs, so a long sequence costs a window, not its length.
// Soft-capped logits (gemma2): s -> softcap * tanh(s / softcap) before the softmax.
//
// Limits: head_dim % 4 == 0 and head_dim <= 4 * CPL * lanes (the host checks).
#extension GL_EXT_control_flow_attributes : require
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint CPL = 1;    // vec4 chunks of head_dim per lane
layout(constant_id = 2) const uint TPW = 1;    // tiles per workgroup
layout(constant_id = 3) const uint SLOTS = 1;  // (token, head) pairs per tile, at most 32
layout(constant_id = 4) const uint SPLIT = 0;  // 1: a workgroup row per chunk (split-K)
layout(constant_id = 5) const uint CHUNKS = 0; // 1: positions merged in chunks (the device
                                               // splits; 0: one state per pair, no merges)

layout(push_constant) uniform Push {
    uint n_heads, n_kv_heads, head_dim, block_size;
    uint max_blocks, n_tok, wgx;
    float scale;
    uint group_log2;  // KV_Q8: log2 of the values per scale
    uint tile_tok;    // consecutive tokens per tile
    uint tile_heads;  // query heads (of one KV head) per tile; tile_tok * tile_heads <= SLOTS
    uint row0;        // first batch row of this dispatch (rows row0 .. row0 + n_tok - 1)
    uint chunk_log2;  // positions per chunk: 1 << chunk_log2 (attn_merge.glsl)
    uint n_chunks;    // SPLIT: chunks per pair, workgroups along z
    uint window;      // a local layer's window (0: every earlier position)
    float softcap;    // attention logits soft-capped at it (0: none)
    uint sinks;       // 1: binding 9 holds a logit per query head for every denominator
} pc;

layout(std430, binding = 0) readonly buffer QKV { vec4 qkv[]; };
layout(std430, binding = 1) readonly buffer P { uint pos[]; };
layout(std430, binding = 2) readonly buffer S { uint seq[]; };
layout(std430, binding = 3) readonly buffer B { uint block_table[]; };
#if defined(TEXEL) && defined(KV_Q8)
layout(binding = 4) uniform usamplerBuffer kcache;
layout(binding = 5) uniform usamplerBuffer vcache;
#define AT(BUF, i) texelFetch(BUF, int(i)).x
#elif defined(TEXEL)
layout(binding = 4) uniform samplerBuffer kcache;
layout(binding = 5) uniform samplerBuffer vcache;
#define AT(BUF, i) texelFetch(BUF, int(i))
#elif defined(KV_Q8) || defined(KV_F16)
layout(std430, binding = 4) readonly buffer K { uint kcache[]; };
layout(std430, binding = 5) readonly buffer V { uint vcache[]; };
#define AT(BUF, i) BUF[i]
#else
layout(std430, binding = 4) readonly buffer K { vec4 kcache[]; };
layout(std430, binding = 5) readonly buffer V { vec4 vcache[]; };
#define AT(BUF, i) BUF[i]
#endif
layout(std430, binding = 6) writeonly buffer O { vec4 o[]; };
// SPLIT: each pair's chunk states, (m, l) and acc, at [(row - row0) * n_heads + head]
// * n_chunks + chunk (attention_merge.comp merges them).
layout(std430, binding = 7) writeonly buffer PML { vec2 part_ml[]; };
layout(std430, binding = 8) writeonly buffer PACC { vec4 part_acc[]; };
// gpt-oss's attention sinks: head h's softmax has exp(sink[h]) more in its denominator
// (no value beside it), merged in as a state (m = sink, l = 1, acc = 0) after the last
// position (attn_merge.glsl); the split kind leaves it to attention_merge.comp.
layout(std430, binding = 9) readonly buffer SK { float sink[]; };

#include "attn_merge.glsl"

// LOAD(BUF, row, c): chunk c of the cache row starting at element `row` (a vec4 for F32, a
// uint for KV_Q8), dequantized.
#ifdef KV_Q8
vec4 unpack_i8(uint w) { return vec4(ivec4(int(w << 24), int(w << 16), int(w << 8), int(w)) >> 24); }
// Shifts, not divisions: lavapipe divides a vector one lane at a time.
uint row_stride() { return pc.head_dim / 4u + ((pc.head_dim >> pc.group_log2) + 1u) / 2u; }
// The f16 scale of chunk c: word head_dim/4 + group/2 of the row, low half for even groups.
float scale_of(uint w, uint c) { vec2 d = unpackHalf2x16(w); return (((4u * c) >> pc.group_log2) & 1u) != 0u ? d.y : d.x; }
#define LOAD(BUF, row, c) \
    (unpack_i8(AT(BUF, (row) + (c))) * scale_of(AT(BUF, (row) + pc.head_dim / 4u + ((4u * (c)) >> pc.group_log2 >> 1)), c))
#elif defined(KV_F16)
// Two words of two halves per chunk.
uint row_stride() { return pc.head_dim / 2u; }
#define LOAD(BUF, row, c) vec4(unpackHalf2x16(AT(BUF, (row) + 2u * (c))), unpackHalf2x16(AT(BUF, (row) + 2u * (c) + 1u)))
#else
uint row_stride() { return pc.head_dim / 4u; }
#define LOAD(BUF, row, c) AT(BUF, (row) + (c))
#endif

// Per-pair state; the softmax state is the same in every lane, acc holds the lane's
// chunks. Every product and sum goes through a `precise` temporary: no fusing into an
// fma, so a pair's bits cannot depend on which slot's copy of the code computed them.
// (m, l, acc) is the state of the current chunk of positions, (rm, rl, racc) that of the
// chunks before it merged (rl = 0: none yet).
vec4 q[SLOTS][CPL], acc[SLOTS][CPL], racc[SLOTS][CPL];
float m[SLOTS], l[SLOTS], rm[SLOTS], rl[SLOTS];
uint npos[SLOTS];  // positions the pair attends to (0: the slot is idle in this run)
uint plo[SLOTS];   // its first position (a window's start; 0 on a global layer)
uint tok[SLOTS], head[SLOTS];

// Reads chunk j of a row only when it lies in the row (j < nc) in the baseline, where
// one invocation holds up to 64 chunks; a subgroup's lanes read every chunk (past the
// row: its last chunk, against a zero query), lavapipe running a masked fetch at a
// higher cost than an unmasked one.
#ifdef SUBGROUP
#define IN_ROW(j, nc) true
#else
#define IN_ROW(j, nc) ((j) < (nc))
#endif

// Position p at cache row `row` for every pair of the run that sees it.
void step(uint row, uint p, uint ch[CPL], uint nc)
{
    vec4 kr[CPL], vr[CPL];
    [[unroll]] for (uint j = 0; j < CPL; j++) {
        kr[j] = vec4(0.0);
        if (IN_ROW(j, nc)) kr[j] = LOAD(kcache, row, ch[j]);
    }
    float s[SLOTS];
    [[unroll]] for (uint u = 0; u < SLOTS; u++) {
        precise float d = 0.0;
        [[unroll]] for (uint j = 0; j < CPL; j++) d += dot(q[u][j], kr[j]);
#ifdef SUBGROUP
        d = subgroupAdd(d);
#endif
        // tanh of a clamped argument: |x| > 15 is +-1 in float, and a driver's
        // exp-based tanh would give inf / inf there.
        if (pc.softcap > 0.0) d = pc.softcap * tanh(clamp(d / pc.softcap, -15.0, 15.0));
        s[u] = d;
    }
    [[unroll]] for (uint j = 0; j < CPL; j++) {
        vr[j] = vec4(0.0);
        if (IN_ROW(j, nc)) vr[j] = LOAD(vcache, row, ch[j]);
    }
    [[unroll]] for (uint u = 0; u < SLOTS; u++) {
        if (p < npos[u] && p >= plo[u]) {
            // One of exp(m - mn) and exp(s - mn) is exp(0) = 1: only the other is computed.
            precise float dm = s[u] - m[u];
            precise float x = exp(-abs(dm));
            bool up = dm > 0.0;
            float mn = up ? s[u] : m[u], corr = up ? x : 1.0, e = up ? 1.0 : x;
            precise float nl = l[u] * corr + e;
            l[u] = nl;
            m[u] = mn;
            [[unroll]] for (uint j = 0; j < CPL; j++) {
                precise vec4 na = acc[u][j] * corr + e * vr[j];
                acc[u][j] = na;
            }
        }
    }
}

// Merges each pair's chunk state into its running state (attn_merge.glsl) and starts a
// new chunk. A pair without positions in the chunk (l = 0) is left as it is.
void fold()
{
    [[unroll]] for (uint u = 0; u < SLOTS; u++) {
        if (l[u] == 0.0) continue;
        if (rl[u] == 0.0) { /* the first chunk with positions: taken as it is */
            rm[u] = m[u];
            rl[u] = l[u];
            [[unroll]] for (uint j = 0; j < CPL; j++) racc[u][j] = acc[u][j];
        } else {
            float mn, ca, cb;
            merge_scales(rm[u], m[u], mn, ca, cb);
            rm[u] = mn;
            rl[u] = merge_sum(rl[u], ca, l[u], cb);
            [[unroll]] for (uint j = 0; j < CPL; j++) racc[u][j] = merge_acc(racc[u][j], ca, acc[u][j], cb);
        }
        m[u] = -3.0e38;
        l[u] = 0.0;
        [[unroll]] for (uint j = 0; j < CPL; j++) acc[u][j] = vec4(0.0);
    }
}

// Walks positions p0 .. p1-1 of sequence sq, folding at every chunk boundary. Total
// iterations: the positions plus one per block (gallivm's limit is 65535 per invocation).
void walk(uint sq, uint p_begin, uint p_end, uint kvh, uint ch[CPL], uint nc)
{
    if (p_begin >= p_end) return;
    uint tab = sq * pc.max_blocks, stride = row_stride(), cmask = (1u << pc.chunk_log2) - 1u;
    for (uint b = p_begin / pc.block_size; b * pc.block_size < p_end; b++) {
        uint base = (block_table[tab + b] * pc.n_kv_heads + kvh) * pc.block_size;
        uint p0 = max(b * pc.block_size, p_begin), cnt = min((b + 1u) * pc.block_size, p_end) - p0;
        base += p0 - b * pc.block_size;
        for (uint i = 0; i < cnt; i++) {
            if (CHUNKS != 0u && SPLIT == 0u && ((p0 + i) & cmask) == 0u && p0 + i != 0u) fold();
            step((base + i) * stride, p0 + i, ch, nc);
        }
    }
}

// Loads the queries of the run's pairs and clears their state. Slot u is token
// t0 + u / tile_heads, query head hg0 + u % tile_heads of KV head kvh's group. Chunks
// past head_dim get a zero query (their lane reads the row's last chunk).
void begin_run(uint run, uint t0, uint kvh, uint hg0, uint lane, uint lanes)
{
    uint gq = pc.n_heads / pc.n_kv_heads, d4 = pc.head_dim / 4u;
    uint qw = (pc.n_heads + 2u * pc.n_kv_heads) * d4;
    [[unroll]] for (uint u = 0; u < SLOTS; u++) {
        uint ti = u / pc.tile_heads, hi = u % pc.tile_heads;
        bool on = ti < pc.tile_tok && (run >> ti & 1u) != 0u && hg0 + hi < gq;
        tok[u] = min(t0 + ti, pc.row0 + pc.n_tok - 1u);
        head[u] = kvh * gq + min(hg0 + hi, gq - 1u);
        npos[u] = on ? pos[tok[u]] + 1u : 0u;
        plo[u] = pc.window != 0u && npos[u] > pc.window ? npos[u] - pc.window : 0u;
        m[u] = rm[u] = -3.0e38;
        l[u] = rl[u] = 0.0;
        [[unroll]] for (uint j = 0; j < CPL; j++) {
            uint c = lane + j * lanes;
            q[u][j] = on && c < d4 ? qkv[tok[u] * qw + head[u] * d4 + c] * pc.scale : vec4(0.0);
            acc[u][j] = racc[u][j] = vec4(0.0);
        }
    }
}

// The run's outputs: each pair's state normalised (CHUNKS: the running state, after the
// last fold; the chunk state is not kept, so that the compiler drops it).
void store_run(uint lane, uint lanes)
{
    uint d4 = pc.head_dim / 4u;
    [[unroll]] for (uint u = 0; u < SLOTS; u++) {
        if (npos[u] == 0u) continue;
        uint orow = (tok[u] * pc.n_heads + head[u]) * d4;
        float ms = CHUNKS != 0u ? rm[u] : m[u], ls = CHUNKS != 0u ? rl[u] : l[u], mn, ca = 1.0, cb;
        if (pc.sinks != 0u) {
            merge_scales(ms, sink[head[u]], mn, ca, cb);
            ls = merge_sum(ls, ca, 1.0, cb);
        }
        precise float inv = 1.0 / ls;
        [[unroll]] for (uint j = 0; j < CPL; j++) {
            uint c = lane + j * lanes;
            vec4 a = CHUNKS != 0u ? racc[u][j] : acc[u][j];
            if (pc.sinks != 0u) a = merge_acc(a, ca, vec4(0.0), 0.0);
            precise vec4 r = a * inv;
            if (c < d4) o[orow + c] = r;
        }
    }
}

// SPLIT: the run's pairs' states of chunk k, unmerged (l = 0: no position in it).
void store_chunk(uint k, uint lane, uint lanes)
{
    uint d4 = pc.head_dim / 4u;
    [[unroll]] for (uint u = 0; u < SLOTS; u++) {
        if (npos[u] == 0u) continue;
        uint slot = ((tok[u] - pc.row0) * pc.n_heads + head[u]) * pc.n_chunks + k;
        if (lane == 0u) part_ml[slot] = vec2(m[u], l[u]);
        [[unroll]] for (uint j = 0; j < CPL; j++) {
            uint c = lane + j * lanes;
            if (c < d4) part_acc[slot * d4 + c] = acc[u][j];
        }
    }
}

// Tile `tile`: tokens t0 .. t0+tile_tok-1 times query heads hg0 .. hg0+tile_heads-1 (within
// the group) of KV head kvh; SPLIT: only the positions of chunk k.
void attend(uint tile, uint k, uint lane, uint lanes)
{
    uint gq = pc.n_heads / pc.n_kv_heads, htiles = (gq + pc.tile_heads - 1u) / pc.tile_heads;
    uint per_tok = pc.n_kv_heads * htiles, t0 = pc.row0 + tile / per_tok * pc.tile_tok;
    uint kvh = tile % per_tok / htiles, hg0 = tile % htiles * pc.tile_heads;
    uint d4 = pc.head_dim / 4u, ch[CPL];  // the lane's chunks: nc of them lie in the row
    uint nc = lane < d4 ? (d4 - lane + lanes - 1u) / lanes : 0u;
    [[unroll]] for (uint j = 0; j < CPL; j++) ch[j] = min(lane + j * lanes, d4 - 1u);

    uint pending = 0u;
    for (uint i = 0; i < pc.tile_tok; i++)
        if (t0 + i < pc.row0 + pc.n_tok) pending |= 1u << i;
    while (pending != 0u) {
        // A run: the pending tokens of the first pending token's sequence.
        uint lead = findLSB(pending), sq = seq[t0 + lead], run = 0u, nmax = 0u, nmin = 0xffffffffu;
        for (uint i = lead; i < pc.tile_tok; i++)
            if ((pending >> i & 1u) != 0u && seq[t0 + i] == sq) {
                run |= 1u << i;
                nmax = max(nmax, pos[t0 + i] + 1u);
                nmin = min(nmin, pos[t0 + i] + 1u);
            }
        pending &= ~run;
        uint lo = pc.window != 0u && nmin > pc.window ? nmin - pc.window : 0u;  // the run's first position
        begin_run(run, t0, kvh, hg0, lane, lanes);
        if (SPLIT != 0u) {
            uint c0 = k << pc.chunk_log2;
            walk(sq, max(min(c0, nmax), lo), min(c0 + (1u << pc.chunk_log2), nmax), kvh, ch, nc);
            store_chunk(k, lane, lanes);
        } else {
            walk(sq, lo, nmax, kvh, ch, nc);
            if (CHUNKS != 0u) fold();
            store_run(lane, lanes);
        }
    }
}

void main()
{
    uint wg = gl_WorkGroupID.y * pc.wgx + gl_WorkGroupID.x, chunk = gl_WorkGroupID.z;
    uint gq = pc.n_heads / pc.n_kv_heads, htiles = (gq + pc.tile_heads - 1u) / pc.tile_heads;
    uint n_tiles = (pc.n_tok + pc.tile_tok - 1u) / pc.tile_tok * pc.n_kv_heads * htiles;
#ifdef SUBGROUP
    for (uint k = gl_SubgroupID; k < TPW; k += gl_NumSubgroups) {
        uint tile = wg * TPW + k;
        if (tile >= n_tiles) break;
        attend(tile, chunk, gl_SubgroupInvocationID, gl_SubgroupSize);
    }
#else
    uint tile = wg * TPW + gl_LocalInvocationID.x;
    if (tile < n_tiles) attend(tile, chunk, 0u, 1u);
#endif
}
