#version 450
// rope_store.comp — RoPE on q (in place) and k of each token's fused qkv row, then K and
// V written into the paged cache: block block_table[seq][pos / block_size], slot
// pos % block_size, layout [block][kv_head][slot][head_dim]. One workgroup per token;
// its invocations walk the rotation pairs of all heads, then the V elements.
//
// sin/cos are computed here with an explicit range reduction and polynomials: Vulkan
// only promises 2^-11 absolute error for sin/cos inside [-pi, pi], and angles reach
// pos radians (thousands).
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uint n_heads, n_kv_heads, head_dim, rope_dim;
    uint block_size, max_blocks, n_tok, wgx;
    float log2_base;
} pc;

layout(std430, binding = 0) buffer QKV { vec2 qkv[]; };  // pairs
layout(std430, binding = 1) readonly buffer P { uint pos[]; };
layout(std430, binding = 2) readonly buffer Q { uint seq[]; };
layout(std430, binding = 3) readonly buffer B { uint block_table[]; };
layout(std430, binding = 4) writeonly buffer K { vec2 kcache[]; };
layout(std430, binding = 5) writeonly buffer V { vec2 vcache[]; };

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

void main()
{
    uint t = gl_WorkGroupID.y * pc.wgx + gl_WorkGroupID.x;
    if (t >= pc.n_tok) return;
    uint p = pos[t];
    uint half_dim = pc.head_dim / 2u;
    uint row = (pc.n_heads + 2u * pc.n_kv_heads) * half_dim;  // qkv row in pairs
    uint blk = block_table[seq[t] * pc.max_blocks + p / pc.block_size];
    uint slot = p % pc.block_size;

    uint n_rot = (pc.n_heads + pc.n_kv_heads) * half_dim;
    for (uint e = gl_LocalInvocationID.x; e < n_rot; e += gl_WorkGroupSize.x) {
        uint h = e / half_dim, i = e % half_dim;
        uint at = t * row + e;
        vec2 v = qkv[at];
        if (2u * i < pc.rope_dim) {
            float freq = exp2(-float(2u * i) / float(pc.rope_dim) * pc.log2_base);
            vec2 sc = sincos(float(p) * freq);
            v = vec2(v.x * sc.y - v.y * sc.x, v.x * sc.x + v.y * sc.y);
            qkv[at] = v;
        }
        if (h >= pc.n_heads) {
            uint kh = h - pc.n_heads;
            kcache[((blk * pc.n_kv_heads + kh) * pc.block_size + slot) * half_dim + i] = v;
        }
    }
    uint n_v = pc.n_kv_heads * half_dim;
    for (uint e = gl_LocalInvocationID.x; e < n_v; e += gl_WorkGroupSize.x) {
        uint kh = e / half_dim, i = e % half_dim;
        vcache[((blk * pc.n_kv_heads + kh) * pc.block_size + slot) * half_dim + i] =
            qkv[t * row + n_rot + e];
    }
}
