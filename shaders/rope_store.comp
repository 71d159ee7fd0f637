#version 450
// rope_store.comp — per token: the Q/K/V biases added, the QK-norm of q and k, RoPE on q
// (in place) and k of the fused qkv row, the attention temperature on q, then K and V
// written into the paged cache: block block_table[seq][pos / block_size], slot
// pos % block_size, rows of head_dim values in the order [block][kv_head][slot]. One
// workgroup per token; its invocations walk the rotation pairs of all heads, then the V
// elements.
//
// Pair i of a head (docs/models.md): (2i, 2i+1) in the normal style, (i, i + rope_dim/2)
// in the NeoX style; i < rope_dim/2 is rotated by
//   theta_i = pos * pos_scale * base^(-2i/rope_dim) / freq_factor[i]
// (YARN: blended per pair with the unscaled angle by ggml's ramp; cos and sin times
// mscale), the other pairs (elements from rope_dim on) only get their bias. NOPE: no
// rotation (a NoPE layer).
//
// QK-norm (before RoPE, after the biases): QKNORM_HEAD normalises each q and k head over
// head_dim values, QKNORM_FULL the whole q and the whole k; qk_w holds the weights
// [q's | k's]. The sums of squares are taken first, into shared memory, then the pair
// loop scales each element as it reads it.
//
// KV_Q8: a cache row is head_dim int8 values packed four per uint, then one f16 scale
// per pc.group values, two per uint (llama.cpp's q8_0 split into quants and scales):
// value = q * scale, scale = max|x| / 127 over the group. K and V first go back to qkv;
// after a workgroup barrier, one invocation per two groups quantizes them (a group's
// maximum needs the whole group; two groups share a scale word).
//
// KV_F16: a cache row is head_dim halves, two per uint (lower element in the low half):
// K and V go back to qkv, then after the barrier each invocation packs a word.
//
// sin/cos are computed here with an explicit range reduction and polynomials: Vulkan
// only promises 2^-11 absolute error for sin/cos inside [-pi, pi], and angles reach
// pos radians (thousands).
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint n_heads, n_kv_heads, head_dim, rope_dim;
    uint block_size, max_blocks, n_tok, wgx;
    float log2_base, pos_scale;
    uint flags;  // FLAG_*
    uint group;  // KV_Q8: values per scale (divides head_dim, a multiple of 4)
    float ext_factor, corr_lo, corr_hi, mscale;  // YARN's blend and ramp; cos, sin times mscale
    float eps;                                    // QKNORM_*: the norm's epsilon
    float temp_scale, temp_floor;                 // TEMP: q times log(floor(pos / floor) + 1) * scale + 1
} pc;

const uint FLAG_BIAS = 1u;   // add bias[] to every element of the row
const uint FLAG_FREQS = 2u;  // divide theta_i by freq_factor[i]
const uint FLAG_NEOX = 4u;   // NeoX pairing
const uint FLAG_NOPE = 8u;   // no rotation
const uint FLAG_QKNORM_HEAD = 16u;
const uint FLAG_QKNORM_FULL = 32u;
const uint FLAG_YARN = 64u;
const uint FLAG_TEMP = 128u;
const uint MAX_NORM_HEADS = 256u;  // QKNORM_HEAD: q and k heads at most (the host checks)

layout(std430, binding = 0) coherent buffer QKV { float qkv[]; };
layout(std430, binding = 1) readonly buffer P { uint pos[]; };
layout(std430, binding = 2) readonly buffer Q { uint seq[]; };
layout(std430, binding = 3) readonly buffer B { uint block_table[]; };
#if defined(KV_Q8) || defined(KV_F16)
#define KV_PACKED  // rows written after the barrier, from qkv
layout(std430, binding = 4) writeonly buffer K { uint kcache[]; };
layout(std430, binding = 5) writeonly buffer V { uint vcache[]; };
#else
layout(std430, binding = 4) writeonly buffer K { float kcache[]; };
layout(std430, binding = 5) writeonly buffer V { float vcache[]; };
#endif
layout(std430, binding = 6) readonly buffer Bias { float bias[]; };
layout(std430, binding = 7) readonly buffer F { float freq_factor[]; };
layout(std430, binding = 8) readonly buffer N { float qk_w[]; };

#include "reduce.glsl"

shared float inv_rms[MAX_NORM_HEADS];  // per q and k head (HEAD), or [0] q and [1] k (FULL)

// (sin a, cos a) to ~1 ulp for |a| < 1e5: Cody-Waite reduction by pi/2, cephes
// polynomials on [-pi/4, pi/4].
vec2 sincos(float a)
{
    float k = round(a * 0.63661977236758134);
    precise float r = ((a - k * 1.5703125) - k * 4.837512969970703125e-4) - k * 7.54978995489188216e-8;
    float z = r * r;
    float s = r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
    float c = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
    uint q = uint(int(k)) & 3u;
    vec2 sc = (q & 1u) != 0u ? vec2(c, -s) : vec2(s, c);
    return q >= 2u ? -sc : sc;
}

float biased(uint at, uint e)
{
    return (pc.flags & FLAG_BIAS) != 0u ? qkv[at + e] + bias[e] : qkv[at + e];
}

// Elements (a, b) of pair i of a head (offsets within the head).
uvec2 pair_of(uint i)
{
    uint r2 = pc.rope_dim / 2u;
    if ((pc.flags & FLAG_NEOX) == 0u) return uvec2(2u * i, 2u * i + 1u);
    if (i < r2) return uvec2(i, i + r2);
    uint a = pc.rope_dim + 2u * (i - r2);  // the unrotated tail, adjacent pairs
    return uvec2(a, a + 1u);
}

// (sin, cos) of theta_i at position p, times mscale. With pos_scale 1, no factors and no
// YaRN this is exactly float(p) * base^(-2i/rope_dim), the angle of the plain llama pass.
vec2 angle(uint p, uint i)
{
    float freq = exp2(-float(2u * i) / float(pc.rope_dim) * pc.log2_base);
    if ((pc.flags & FLAG_FREQS) != 0u) freq /= freq_factor[i];
    if ((pc.flags & FLAG_YARN) == 0u) return sincos(float(p) * pc.pos_scale * freq) * pc.mscale;
    float extrap = float(p) * freq, interp = extrap * pc.pos_scale;
    float y = (float(i) - pc.corr_lo) / max(0.001, pc.corr_hi - pc.corr_lo);
    float mix = (1.0 - min(1.0, max(0.0, y))) * pc.ext_factor;
    return sincos(interp * (1.0 - mix) + extrap * mix) * pc.mscale;
}

// 1/rms of each q and k head (HEAD) or of q and k (FULL) into inv_rms, from the biased
// values; then a barrier. Uniform control flow (the whole workgroup calls it).
void qk_norms(uint at)
{
    uint hd = pc.head_dim, nq = pc.n_heads * hd, nk = pc.n_kv_heads * hd;
    if ((pc.flags & FLAG_QKNORM_HEAD) != 0u) {
        for (uint h = gl_LocalInvocationID.x; h < pc.n_heads + pc.n_kv_heads; h += gl_WorkGroupSize.x) {
            float ss = 0.0;
            for (uint e = 0u; e < hd; e++) {
                float v = biased(at, h * hd + e);
                ss += v * v;
            }
            inv_rms[h] = 1.0 / sqrt(ss / float(hd) + pc.eps);
        }
    } else {
        float sq = 0.0, sk = 0.0;
        for (uint e = gl_LocalInvocationID.x; e < nq; e += gl_WorkGroupSize.x) sq += biased(at, e) * biased(at, e);
        for (uint e = gl_LocalInvocationID.x; e < nk; e += gl_WorkGroupSize.x)
            sk += biased(at, nq + e) * biased(at, nq + e);
        sq = wg_sum(sq);
        sk = wg_sum(sk);
        if (gl_LocalInvocationID.x == 0u) {
            inv_rms[0] = 1.0 / sqrt(sq / float(nq) + pc.eps);
            inv_rms[1] = 1.0 / sqrt(sk / float(nk) + pc.eps);
        }
    }
    barrier();
}

// Element e (of the row, e < q + k) of head h normalised: x * (1/rms) * w.
float normed(uint h, uint e, float x)
{
    if ((pc.flags & (FLAG_QKNORM_HEAD | FLAG_QKNORM_FULL)) == 0u) return x;
    bool is_q = h < pc.n_heads;
    if ((pc.flags & FLAG_QKNORM_FULL) != 0u) return x * inv_rms[is_q ? 0u : 1u] * qk_w[e];
    return x * inv_rms[h] * qk_w[(is_q ? 0u : pc.head_dim) + e - h * pc.head_dim];
}

// The attention temperature of a query at position p (mistral3), 1 without it.
float temperature(uint p)
{
    if ((pc.flags & FLAG_TEMP) == 0u) return 1.0;
    return log(floor(float(p) / pc.temp_floor) + 1.0) * pc.temp_scale + 1.0;
}

#ifdef KV_Q8
// Quantizes one group (pc.group values of qkv from src) into the quant words of cache row
// dst starting at word w0; returns its scale, rounded to f16 (the value stored).
float quantize_group(uint src, bool is_k, uint dst, uint w0)
{
    float amax = 0.0;
    for (uint e = 0u; e < pc.group; e++) amax = max(amax, abs(qkv[src + e]));
    float d = unpackHalf2x16(packHalf2x16(vec2(amax / 127.0, 0.0))).x;
    float id = d > 0.0 ? 1.0 / d : 0.0;
    for (uint w = 0u; w < pc.group / 4u; w++) {
        uint packed = 0u;
        for (uint j = 0u; j < 4u; j++) {
            int q = clamp(int(round(qkv[src + 4u * w + j] * id)), -127, 127);
            packed |= (uint(q) & 255u) << (8u * j);
        }
        if (is_k) kcache[dst + w0 + w] = packed;
        else vcache[dst + w0 + w] = packed;
    }
    return d;
}

// Groups 2j and 2j+1 of a row (values from src), whose two f16 scales share one word.
void store_group_pair(uint src, uint j, bool is_k, uint dst)
{
    uint groups = pc.head_dim / pc.group, gw = pc.group / 4u;
    vec2 d = vec2(quantize_group(src + 2u * j * pc.group, is_k, dst, 2u * j * gw), 0.0);
    if (2u * j + 1u < groups) d.y = quantize_group(src + (2u * j + 1u) * pc.group, is_k, dst, (2u * j + 1u) * gw);
    uint at = dst + pc.head_dim / 4u + j;
    if (is_k) kcache[at] = packHalf2x16(d);
    else vcache[at] = packHalf2x16(d);
}
#endif

void main()
{
    uint t = gl_WorkGroupID.y * pc.wgx + gl_WorkGroupID.x;
    if (t >= pc.n_tok) return;  // the whole workgroup: the barrier below stays uniform
    uint p = pos[t];
    uint hd = pc.head_dim, half_dim = hd / 2u;
    uint at = t * (pc.n_heads + 2u * pc.n_kv_heads) * hd;  // the token's qkv row
    uint blk = block_table[seq[t] * pc.max_blocks + p / pc.block_size];
    uint row0 = (blk * pc.n_kv_heads) * pc.block_size + p % pc.block_size;  // cache row of kv head 0

    if ((pc.flags & (FLAG_QKNORM_HEAD | FLAG_QKNORM_FULL)) != 0u) qk_norms(at);
    float temp = temperature(p);
    uint n_pairs = (pc.n_heads + pc.n_kv_heads) * half_dim;
    for (uint e = gl_LocalInvocationID.x; e < n_pairs; e += gl_WorkGroupSize.x) {
        uint h = e / half_dim, i = e % half_dim;
        uvec2 ab = pair_of(i) + h * hd;
        vec2 v = vec2(normed(h, ab.x, biased(at, ab.x)), normed(h, ab.y, biased(at, ab.y)));
        if (2u * i < pc.rope_dim && (pc.flags & FLAG_NOPE) == 0u) {
            vec2 sc = angle(p, i);
            v = vec2(v.x * sc.y - v.y * sc.x, v.x * sc.x + v.y * sc.y);
        }
        if (h < pc.n_heads && (pc.flags & FLAG_TEMP) != 0u) v *= temp;
        qkv[at + ab.x] = v.x;
        qkv[at + ab.y] = v.y;
#ifndef KV_PACKED
        if (h >= pc.n_heads) {
            uint row = (row0 + (h - pc.n_heads) * pc.block_size) * hd;
            kcache[row + ab.x - h * hd] = v.x;
            kcache[row + ab.y - h * hd] = v.y;
        }
#endif
    }
    uint v0 = (pc.n_heads + pc.n_kv_heads) * hd, n_v = pc.n_kv_heads * hd;
    for (uint e = gl_LocalInvocationID.x; e < n_v; e += gl_WorkGroupSize.x) {
        float v = biased(at, v0 + e);
        qkv[at + v0 + e] = v;
#ifndef KV_PACKED
        vcache[(row0 + (e / hd) * pc.block_size) * hd + e % hd] = v;
#endif
    }
#ifdef KV_Q8
    memoryBarrierBuffer();
    barrier();
    uint pairs = (hd / pc.group + 1u) / 2u, row_words = hd / 4u + pairs;
    uint k0 = pc.n_heads * hd, n_units = pc.n_kv_heads * pairs;
    for (uint u = gl_LocalInvocationID.x; u < 2u * n_units; u += gl_WorkGroupSize.x) {
        bool is_k = u < n_units;
        uint r = is_k ? u : u - n_units, kh = r / pairs;
        uint src = at + k0 + (is_k ? 0u : n_v) + kh * hd;
        store_group_pair(src, r % pairs, is_k, (row0 + kh * pc.block_size) * row_words);
    }
#endif
#ifdef KV_F16
    memoryBarrierBuffer();
    barrier();
    uint row_words = hd / 2u, k0 = pc.n_heads * hd, n_words = pc.n_kv_heads * row_words;
    for (uint u = gl_LocalInvocationID.x; u < 2u * n_words; u += gl_WorkGroupSize.x) {
        bool is_k = u < n_words;
        uint r = is_k ? u : u - n_words, kh = r / row_words, w = r % row_words;
        uint src = at + k0 + (is_k ? 0u : n_v) + kh * hd + 2u * w;
        uint word = packHalf2x16(vec2(qkv[src], qkv[src + 1u]));
        uint dst = (row0 + kh * pc.block_size) * row_words + w;
        if (is_k) kcache[dst] = word;
        else vcache[dst] = word;
    }
#endif
}
