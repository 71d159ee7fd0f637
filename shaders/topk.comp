#version 450
// topk.comp — each logits row's K best (id, logit) pairs, best first, and the row's softmax
// normaliser: what a sampler whose filters keep only the best tokens reads back instead of
// the whole row (engine/sampling/candidates.h holds the layout and K).
//
// Output i is logits row rows[i]'s, K + 2 entries from o[i * (K + 2)]: entry 0 = (z, n),
// entry 1 = (z_t, 0), then n = min(K, n_cols) entries (id, logit bits) in the sampler's
// order: higher logit first, lower id on ties. NaN counts as -inf and -0 as +0, as the
// host sampler compares them. z = the sum over the row of exp(l - m), m its largest
// finite logit (0 if none); z_t the same of exp((l - m) * inv_t[i]), at the temperature
// of the request that samples the row.
//
// One workgroup per row. Keys are the logits' bits made order-preserving as unsigned
// integers; a radix select (4 passes of 8 bits, a shared histogram each) finds the K-th
// largest key; where several logits share it, a second radix select over their ids (3
// passes: ids < 2^24) keeps the lowest. The n selected pairs are gathered into shared memory
// and each written at its rank, counted against all the others.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint K = 256;

layout(push_constant) uniform Push {
    uint n_rows, n_cols, wgx;
} pc;

layout(std430, binding = 0) readonly buffer L { float logits[]; };
layout(std430, binding = 1) writeonly buffer O { uvec2 o[]; };
layout(std430, binding = 2) readonly buffer R { uint rows[]; };
layout(std430, binding = 3) readonly buffer T { float inv_t[]; };

const float NEG_INF = -1.0 / 0.0;
const float POS_INF = 1.0 / 0.0;

shared uint hist[256];
shared uint s_digit, s_need, s_count, s_n;
shared float red_m[gl_WorkGroupSize.x];
shared float red_s[gl_WorkGroupSize.x];
shared uint c_key[K];
shared uint c_id[K];

float logit_at(uint i)
{
    float v = logits[i];
    return isnan(v) ? NEG_INF : v;
}

uint key_of(float v)
{
    uint u = v == 0.0 ? 0u : floatBitsToUint(v);
    return (u & 0x80000000u) != 0u ? ~u : u | 0x80000000u;
}

float value_of(uint k)
{
    return uintBitsToFloat((k & 0x80000000u) != 0u ? k & 0x7fffffffu : ~k);
}

void clear_hist()
{
    for (uint i = gl_LocalInvocationID.x; i < 256u; i += gl_WorkGroupSize.x) hist[i] = 0u;
}

// With the histogram of one digit counted: the digit that holds the s_need-th item, taking
// digits from the top (largest keys) or from the bottom (smallest ids). s_need becomes the
// count still needed inside that digit, s_count how many items it holds.
void pick_digit(bool from_top)
{
    if (gl_LocalInvocationID.x != 0u) return;
    uint need = s_need;
    for (uint j = 0u; j < 256u; j++) {
        uint d = from_top ? 255u - j : j, h = hist[d];
        if (h >= need) {
            s_digit = d;
            s_need = need;
            s_count = h;
            return;
        }
        need -= h;
    }
}

// The workgroup's largest of each invocation's m, then its sum of each invocation's s (a
// tree: pairwise sums keep the rounding small).
float workgroup_max(float m)
{
    uint lid = gl_LocalInvocationID.x;
    red_m[lid] = m;
    barrier();
    for (uint half_ = gl_WorkGroupSize.x / 2u; half_ > 0u; half_ >>= 1) {
        if (lid < half_) red_m[lid] = max(red_m[lid], red_m[lid + half_]);
        barrier();
    }
    return red_m[0];
}

float workgroup_sum(float s)
{
    uint lid = gl_LocalInvocationID.x;
    red_s[lid] = s;
    barrier();
    for (uint half_ = gl_WorkGroupSize.x / 2u; half_ > 0u; half_ >>= 1) {
        if (lid < half_) red_s[lid] += red_s[lid + half_];
        barrier();
    }
    return red_s[0];
}

bool finite(float v) { return v != NEG_INF && v != POS_INF; }

void main()
{
    uint i_out = gl_WorkGroupID.y * pc.wgx + gl_WorkGroupID.x;
    if (i_out >= pc.n_rows) return;
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    uint base = rows[i_out] * pc.n_cols, n = min(K, pc.n_cols);
    if (lid == 0u) {
        s_need = n;
        s_n = 0u;
    }

    // The K-th largest key, 8 bits at a time. The first pass also finds the largest finite
    // logit, the second sums the normaliser under it (compensated: rows of 10^5 logits).
    float m = NEG_INF, mx = 0.0, it = inv_t[i_out];
    precise float s = 0.0, comp = 0.0, s_t = 0.0, comp_t = 0.0;
    uint key_t = 0u;
    for (int pass = 0; pass < 4; pass++) {
        uint shift = 24u - 8u * uint(pass), above = pass == 0 ? 0u : 0xffffffffu << (shift + 8u);
        clear_hist();
        barrier();
        for (uint c = lid; c < pc.n_cols; c += wg) {
            float v = logit_at(base + c);
            if (pass == 0 && finite(v)) m = max(m, v);
            if (pass == 1 && finite(v)) {
                precise float y = exp(v - mx) - comp, t = s + y;
                comp = (t - s) - y;
                s = t;
                precise float y_t = exp((v - mx) * it) - comp_t, t_t = s_t + y_t;
                comp_t = (t_t - s_t) - y_t;
                s_t = t_t;
            }
            uint k = key_of(v);
            if ((k & above) == key_t) atomicAdd(hist[(k >> shift) & 255u], 1u);
        }
        barrier();
        pick_digit(true);
        barrier();
        key_t |= s_digit << shift;
        if (pass == 0) {
            mx = workgroup_max(m);
            if (mx == NEG_INF) mx = 0.0; /* no finite logit: z = 0 */
        }
    }
    float z = workgroup_sum(s);
    barrier(); /* every invocation has read red_s[0] */
    float z_t = workgroup_sum(s_t);

    // More logits equal to the K-th than places left: the lowest ids among them.
    bool tie = s_count > s_need;
    uint id_t = 0xffffffffu;
    if (tie) {
        id_t = 0u;
        for (int pass = 0; pass < 3; pass++) {
            uint shift = 16u - 8u * uint(pass), above = 0xffffffffu << (shift + 8u);
            barrier();
            clear_hist();
            barrier();
            for (uint c = lid; c < pc.n_cols; c += wg)
                if (key_of(logit_at(base + c)) == key_t && (c & above) == id_t) atomicAdd(hist[(c >> shift) & 255u], 1u);
            barrier();
            pick_digit(false);
            barrier();
            id_t |= s_digit << shift;
        }
    }

    for (uint c = lid; c < pc.n_cols; c += wg) {
        uint k = key_of(logit_at(base + c));
        if (k > key_t || (k == key_t && c <= id_t)) {
            uint slot = atomicAdd(s_n, 1u);
            c_key[slot] = k;
            c_id[slot] = c;
        }
    }
    barrier();

    uint out0 = i_out * (K + 2u);
    if (lid == 0u) {
        o[out0] = uvec2(floatBitsToUint(z), n);
        o[out0 + 1u] = uvec2(floatBitsToUint(z_t), 0u);
    }
    for (uint i = lid; i < n; i += wg) {
        uint ki = c_key[i], ii = c_id[i], rank = 0u;
        for (uint j = 0u; j < n; j++) {
            uint kj = c_key[j];
            rank += uint(kj > ki || (kj == ki && c_id[j] < ii));
        }
        o[out0 + 2u + rank] = uvec2(ii, floatBitsToUint(value_of(ki)));
    }
}
