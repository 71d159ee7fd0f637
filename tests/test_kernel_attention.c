/* test_kernel_attention.c — rope_store and attention beyond plain llama, against plain
 * CPU loops in double (docs/models.md, docs/kernels.md):
 *  - rope_store with Q/K/V biases, NeoX pairing (full and partial rotary), per-pair
 *    frequency factors and a linear position scale; biases of zero, factors of one and
 *    a scale of one give the same bits as none at all;
 *  - the Q8_0 KV cache: rope_store's quantized rows (each scale max|x|/127 rounded to f16,
 *    each value within half a step of the rotated value), and attention over a Q8_0 cache
 *    built here (so the GPU and the CPU read the same dequantized values and the
 *    tolerance stays tight), for head sizes with 1, 2, 3 and 4 scale groups;
 *  - batch invariance with a Q8_0 cache: a token's quantized K/V rows and its attention
 *    output are the same bits alone as inside a ragged batch;
 *  - long contexts (~2000 positions, head_dim 8 to 256, F32 and Q8_0 caches) and every
 *    head size class and tile shape (prefill chunks, MHA, 8 query heads per KV head):
 *    close to the reference, and each token's bits the same as in the batch when run
 *    alone, with decode-sized tiles, in another order, in another slot of its tile and
 *    from storage buffers instead of texel views;
 *  - six decode runs of ~11000 positions in one call (lavapipe's loop limit);
 *  - the F16 KV cache: rope_store's rows (each value its rotated value rounded to half) and
 *    attention over an F16 cache built here, long contexts, prefill chunks, heads of 96;
 *  - chunks: every pair's positions merged in chunks of 64 (attn_merge.glsl), and the
 *    decode rows past the first chunk split-K (a workgroup per chunk, then the merge
 *    pass): the same bits as one pass over the chunks;
 * in all four kernel variants (subgroup or Vulkan 1.2 core baseline, K/V through texel
 * views or storage buffers). `test_kernel_attention bench` times attention instead
 * (docs/kernels.md, performance). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/model/floats.h"
#include "platform/os_thread.h"
#include "kernel_fixture.h"

#define TOL 1e-4

typedef kt_ctx ctx;

/* A K or V cache holding data, padded to whole 16-byte texels and given the texel view
 * forward.c would give it (none when the kernels read storage buffers). */
static ember_vk_span cache_buf(ctx *t, ember_kv_type kv, const void *data, size_t bytes)
{
    ember_vk_span s = kt_buf(t, NULL, (bytes + 15) / 16 * 16);
    memcpy(s.host, data, bytes);
    if (ember_kernels_kv_view(t->k, t->arena, kv, &s, &t->err) != EMBER_OK) kt_die(t, "kv view");
    return s;
}

/* ---- batches over a paged cache ------------------------------------------------------- */

static size_t n_rows(const kt_batch *b) { return (size_t)b->n_blocks * b->s.n_kv_heads * b->s.block_size; }
static uint32_t qkv_width(const ember_attn_shape *s) { return (s->n_heads + 2 * s->n_kv_heads) * s->head_dim; }
static size_t row_words(const ember_attn_shape *s) { return ember_kv_row_bytes(s->head_dim, s->kv_type) / 4; }

/* ---- RoPE in double, from the formulas of docs/models.md ------------------------------ */

typedef struct rope_in {
    const float *bias;  /* one qkv row, or NULL */
    const float *freqs; /* rope_dim / 2, or NULL */
    const float *qk_w;  /* QK-norm weights [q's | k's] (s->qk_norm), or NULL */
} rope_in;

/* RMSNorm of n values at x with weights w, in place. */
static void norm_ref(double *x, uint32_t n, const float *w, double eps)
{
    double ss = 0;
    for (uint32_t e = 0; e < n; e++) ss += x[e] * x[e];
    for (uint32_t e = 0; e < n; e++) x[e] = x[e] / sqrt(ss / n + eps) * w[e];
}

/* The QK-norm of a row (after the biases): each head, or all of q and all of k. */
static void qk_norm_ref(const ember_attn_shape *s, const float *w, double *row)
{
    uint32_t hd = s->head_dim, nq = s->n_heads * hd, nk = s->n_kv_heads * hd;
    if (s->qk_norm == EMBER_QK_NORM_FULL) {
        norm_ref(row, nq, w, s->eps);
        norm_ref(row + nq, nk, w + nq, s->eps);
    } else if (s->qk_norm == EMBER_QK_NORM_HEAD) {
        for (uint32_t h = 0; h < s->n_heads + s->n_kv_heads; h++) norm_ref(row + h * hd, hd, w + (h < s->n_heads ? 0 : hd), s->eps);
    }
}

/* theta_i of docs/models.md: the scaled angle, blended with the unscaled one by YaRN. */
static double theta_ref(const ember_attn_shape *s, const rope_in *ri, uint32_t pos, uint32_t i)
{
    double extrap = pos * pow(s->rope_base, -2.0 * i / s->rope_dim) / (ri->freqs ? ri->freqs[i] : 1.0);
    double interp = extrap * (s->pos_scale > 0 ? s->pos_scale : 1.0);
    if (s->ext_factor == 0) return interp;
    double y = (i - s->corr_lo) / fmax(0.001, s->corr_hi - s->corr_lo);
    double mix = (1 - fmin(1, fmax(0, y))) * s->ext_factor;
    return interp * (1 - mix) + extrap * mix;
}

/* Token row in -> out: biases added, q and k normalised and rotated (cos and sin times
 * mscale; none on a NoPE layer), q times the temperature. */
static void rope_row_ref(const ember_attn_shape *s, const rope_in *ri, const float *in, uint32_t pos, double *out)
{
    uint32_t w = qkv_width(s), hd = s->head_dim, half = s->rope_dim / 2;
    double ms = s->mscale > 0 ? s->mscale : 1.0;
    for (uint32_t e = 0; e < w; e++) out[e] = (double)in[e] + (ri->bias ? ri->bias[e] : 0.0);
    if (ri->qk_w) qk_norm_ref(s, ri->qk_w, out);
    for (uint32_t h = 0; !s->no_rope && h < s->n_heads + s->n_kv_heads; h++)
        for (uint32_t i = 0; i < half; i++) {
            double th = theta_ref(s, ri, pos, i);
            uint32_t a = h * hd + (s->rope_style == EMBER_ROPE_NEOX ? i : 2 * i);
            uint32_t b = s->rope_style == EMBER_ROPE_NEOX ? a + half : a + 1;
            double x = out[a], y = out[b];
            out[a] = (x * cos(th) - y * sin(th)) * ms;
            out[b] = (x * sin(th) + y * cos(th)) * ms;
        }
    if (s->temp_scale > 0)
        for (uint32_t e = 0; e < s->n_heads * hd; e++) out[e] *= log(floor(pos / s->temp_floor) + 1) * s->temp_scale + 1;
}

/* Runs rope_store over b with random qkv; returns the expected rows (double) and the
 * GPU's qkv and K/V caches (host copies, caller frees). */
typedef struct rope_run {
    double *want;     /* n_tok x qkv width */
    float *qkv;       /* GPU result */
    uint32_t *kc, *vc; /* GPU caches, as 32-bit words */
} rope_run;

static bool run_rope(ctx *t, const kt_batch *b, const rope_in *ri, const float *qkv_in, rope_run *out)
{
    const ember_attn_shape *s = &b->s;
    uint32_t w = qkv_width(s);
    size_t cache_bytes = n_rows(b) * row_words(s) * 4, qkv_bytes = sizeof(float) * b->n_tok * w;
    out->want = malloc(sizeof(double) * b->n_tok * w);
    for (uint32_t i = 0; i < b->n_tok; i++)
        rope_row_ref(s, ri, qkv_in + (size_t)i * w, b->pos[i], out->want + (size_t)i * w);
    kt_case_begin(t);
    ember_vk_span qs = kt_buf(t, qkv_in, qkv_bytes), ps = kt_buf(t, b->pos, 4 * b->n_tok), ss = kt_buf(t, b->seq, 4 * b->n_tok);
    ember_vk_span bt = kt_buf(t, b->table, 4 * b->n_seqs * s->max_blocks_per_seq);
    ember_vk_span ks = kt_buf(t, NULL, cache_bytes), vs = kt_buf(t, NULL, cache_bytes);
    ember_rope_bufs rb = {{0}, {0}, {0}};
    if (ri->bias) rb.bias = kt_buf(t, ri->bias, sizeof(float) * w);
    if (ri->qk_w) rb.qk_norm = kt_buf(t, ri->qk_w, sizeof(float) * (s->n_heads + s->n_kv_heads) * s->head_dim);
    if (ri->freqs) rb.freqs = kt_buf(t, ri->freqs, sizeof(float) * s->rope_dim / 2);
    ember_k_rope_store(t->cmd, t->k, s, &rb, qs, ps, ss, bt, ks, vs, b->n_tok);
    if (!kt_submit(t, "rope_store")) return false;
    out->qkv = malloc(qkv_bytes);
    out->kc = malloc(cache_bytes);
    out->vc = malloc(cache_bytes);
    memcpy(out->qkv, qs.host, qkv_bytes);
    memcpy(out->kc, ks.host, cache_bytes);
    memcpy(out->vc, vs.host, cache_bytes);
    return true;
}

static void free_run(rope_run *r)
{
    free(r->want);
    free(r->qkv);
    free(r->kc);
    free(r->vc);
    memset(r, 0, sizeof *r);
}

/* The F32 cache rows of every token equal its expected k and v. */
static void check_f32_cache(const char *what, const kt_batch *b, const rope_run *r)
{
    const ember_attn_shape *s = &b->s;
    uint32_t w = qkv_width(s), hd = s->head_dim;
    double worst = 0, big = 1e-30;
    for (uint32_t i = 0; i < b->n_tok; i++)
        for (uint32_t kh = 0; kh < s->n_kv_heads; kh++) {
            const float *k = (const float *)r->kc + kt_cache_row(b, b->seq[i], b->pos[i], kh) * hd;
            const float *v = (const float *)r->vc + kt_cache_row(b, b->seq[i], b->pos[i], kh) * hd;
            const double *want = r->want + (size_t)i * w + (s->n_heads + kh) * hd;
            for (uint32_t d = 0; d < hd; d++) {
                worst = fmax(worst, fmax(fabs(k[d] - want[d]), fabs(v[d] - want[d + s->n_kv_heads * hd])));
                big = fmax(big, fabs(want[d]));
            }
        }
    CHECKF(worst / big < TOL, "%s: K/V cache rel err %.3g", what, worst / big);
}

/* Each Q8_0 row: scale = f16(max|x| / 127) per group, every value within half a step. */
static void check_q8_row(const char *what, const uint32_t *row, const double *x, uint32_t hd, double *worst_step)
{
    uint32_t G = ember_kv_q8_group(hd), words = hd / 4;
    for (uint32_t g = 0; g < hd / G; g++) {
        uint32_t sw = row[words + g / 2];
        double d = kt_half_to_float((uint16_t)(g & 1 ? sw >> 16 : sw & 0xffff)), amax = 0;
        for (uint32_t e = g * G; e < (g + 1) * G; e++) amax = fmax(amax, fabs(x[e]));
        CHECKF(fabs(d - amax / 127) <= amax / 127 * 1e-3 + 1e-30, "%s: group %u scale %g, want %g", what, g, d,
               amax / 127);
        for (uint32_t e = g * G; e < (g + 1) * G; e++) {
            int q = (int8_t)(row[e / 4] >> (8 * (e % 4)) & 255);
            double err = fabs(q * d - x[e]);
            if (d > 0) *worst_step = fmax(*worst_step, err / d);
            /* Half a step of the value the GPU quantized, which is itself within the F32
             * check's tolerance of the double-precision reference (float RoPE angles at
             * thousands of positions: ~1e-4 off on an NVIDIA H200). */
            CHECKF(err <= 0.5 * d * 1.002 + amax * TOL, "%s: value %u: %d * %g vs %g", what, e, q, d, x[e]);
        }
    }
}

static void check_q8_cache(const char *what, const kt_batch *b, const rope_run *r)
{
    const ember_attn_shape *s = &b->s;
    uint32_t w = qkv_width(s), hd = s->head_dim;
    double worst_step = 0;
    for (uint32_t i = 0; i < b->n_tok; i++)
        for (uint32_t kh = 0; kh < s->n_kv_heads; kh++) {
            size_t row = kt_cache_row(b, b->seq[i], b->pos[i], kh) * row_words(s);
            const double *k = r->want + (size_t)i * w + (s->n_heads + kh) * hd;
            check_q8_row(what, r->kc + row, k, hd, &worst_step);
            check_q8_row(what, r->vc + row, k + s->n_kv_heads * hd, hd, &worst_step);
        }
    CHECKF(worst_step <= 0.5 * 1.002, "%s: worst error %.4f steps", what, worst_step);
    printf("%s: worst quantization error %.4f steps\n", what, worst_step);
}

/* Each F16 row value is its expected k or v rounded to half: within half an ulp (2^-11
 * relative; half of the smallest subnormal below 2^-14), plus the F32 check's tolerance
 * of the double-precision reference (the GPU's rotation, before rounding). */
static void check_f16_cache(const char *what, const kt_batch *b, const rope_run *r)
{
    const ember_attn_shape *s = &b->s;
    uint32_t w = qkv_width(s), hd = s->head_dim;
    double big = 1e-30, worst = 0; /* the largest error in units of what it may be */
    for (uint32_t i = 0; i < b->n_tok; i++)
        for (uint32_t d = 0; d < (s->n_heads + 2 * s->n_kv_heads) * hd; d++)
            big = fmax(big, fabs(r->want[(size_t)i * w + d]));
    for (uint32_t i = 0; i < b->n_tok; i++)
        for (uint32_t kh = 0; kh < s->n_kv_heads; kh++) {
            size_t row = kt_cache_row(b, b->seq[i], b->pos[i], kh) * row_words(s);
            const double *want = r->want + (size_t)i * w + (s->n_heads + kh) * hd;
            for (uint32_t d = 0; d < hd; d++)
                for (int kv = 0; kv < 2; kv++) {
                    uint32_t word = (kv ? r->vc : r->kc)[row + d / 2];
                    double got = kt_half_to_float((uint16_t)(d & 1 ? word >> 16 : word & 0xffff));
                    double x = want[d + (kv ? s->n_kv_heads * hd : 0)];
                    double allowed = fabs(x) / 2048 * 1.001 + 3e-8 + big * TOL;
                    worst = fmax(worst, fabs(got - x) / allowed);
                }
        }
    CHECKF(worst <= 1, "%s: F16 cache value off by %.3g of its allowance", what, worst);
}

static void test_rope_case(ctx *t, ember_attn_shape s, bool bias, bool freqs, const char *name)
{
    static const uint32_t last[] = {611, 47, 4}, chunk[] = {1, 20, 3};
    tu_rng r = {11 + s.head_dim + s.rope_dim};
    kt_batch b = kt_make_batch(&r, s, 3, last, chunk);
    uint32_t w = qkv_width(&s);
    float *qkv = kt_rand_floats(&r, (size_t)b.n_tok * w, -1, 1), *bv = kt_rand_floats(&r, w, -0.5f, 0.5f);
    float fv[128], *nw = kt_rand_floats(&r, (size_t)(s.n_heads + s.n_kv_heads) * s.head_dim, 0.8f, 1.2f);
    for (uint32_t i = 0; i < s.rope_dim / 2; i++) fv[i] = 1.0f + 7.0f * i / (s.rope_dim / 2); /* 1 .. 8 */
    rope_in ri = {bias ? bv : NULL, freqs ? fv : NULL, s.qk_norm ? nw : NULL};
    rope_run run = {0};
    char what[160];
    snprintf(what, sizeof what, "[%s] rope_store %s hd %u rope %u %s%s scale %g %s", t->variant, name, s.head_dim,
             s.rope_dim, s.rope_style == EMBER_ROPE_NEOX ? "neox" : "norm", bias ? " bias" : "", s.pos_scale,
             s.kv_type == EMBER_KV_Q8_0 ? "q8_0" : s.kv_type == EMBER_KV_F16 ? "f16" : "f32");
    if (run_rope(t, &b, &ri, qkv, &run)) {
        kt_check_close(what, run.qkv, run.want, (size_t)b.n_tok * w, TOL);
        if (s.kv_type == EMBER_KV_Q8_0) check_q8_cache(what, &b, &run);
        else if (s.kv_type == EMBER_KV_F16) check_f16_cache(what, &b, &run);
        else check_f32_cache(what, &b, &run);
    }
    free_run(&run);
    free(qkv);
    free(bv);
    free(nw);
    kt_free_batch(&b);
}

/* Zero biases, factors of one and a scale of exactly one change no bit. */
static void test_rope_neutral(ctx *t, ember_attn_shape s)
{
    static const uint32_t last[] = {900, 33}, chunk[] = {2, 9};
    tu_rng r = {21};
    kt_batch b = kt_make_batch(&r, s, 2, last, chunk);
    uint32_t w = qkv_width(&s);
    float *qkv = kt_rand_floats(&r, (size_t)b.n_tok * w, -1, 1), *zeros = calloc(w, sizeof(float));
    float ones[128];
    for (int i = 0; i < 128; i++) ones[i] = 1.0f;
    rope_run plain = {0}, neutral = {0};
    size_t cache_bytes = n_rows(&b) * row_words(&s) * 4;
    bool ok = run_rope(t, &b, &(rope_in){NULL, NULL}, qkv, &plain);
    b.s.pos_scale = 1.0f;
    ok = ok && run_rope(t, &b, &(rope_in){zeros, ones}, qkv, &neutral);
    if (ok) {
        CHECK(memcmp(plain.qkv, neutral.qkv, sizeof(float) * b.n_tok * w) == 0);
        CHECK(memcmp(plain.kc, neutral.kc, cache_bytes) == 0 && memcmp(plain.vc, neutral.vc, cache_bytes) == 0);
    }
    free_run(&plain);
    free_run(&neutral);
    free(qkv);
    free(zeros);
    kt_free_batch(&b);
}

/* A token's quantized rows are the same computed alone as in the batch. */
static void test_rope_q8_invariance(ctx *t, ember_attn_shape s)
{
    static const uint32_t last[] = {300, 70, 5}, chunk[] = {1, 40, 6};
    tu_rng r = {23};
    kt_batch b = kt_make_batch(&r, s, 3, last, chunk);
    uint32_t w = qkv_width(&s);
    float *qkv = kt_rand_floats(&r, (size_t)b.n_tok * w, -2, 2), *bv = kt_rand_floats(&r, w, -0.5f, 0.5f);
    rope_in ri = {bv, NULL};
    rope_run all = {0}, one = {0};
    uint32_t pick = b.n_tok / 2, rw = (uint32_t)row_words(&s);
    bool ok = run_rope(t, &b, &ri, qkv, &all);
    kt_batch b1 = b;
    b1.n_tok = 1;
    b1.pos = &b.pos[pick];
    b1.seq = &b.seq[pick];
    ok = ok && run_rope(t, &b1, &ri, qkv + (size_t)pick * w, &one);
    for (uint32_t kh = 0; ok && kh < s.n_kv_heads; kh++) {
        size_t row = kt_cache_row(&b, b.seq[pick], b.pos[pick], kh) * rw;
        CHECKF(memcmp(all.kc + row, one.kc + row, 4 * rw) == 0 && memcmp(all.vc + row, one.vc + row, 4 * rw) == 0,
               "[%s] q8_0 rows of token %u differ alone", t->variant, pick);
    }
    free_run(&all);
    free_run(&one);
    free(qkv);
    free(bv);
    kt_free_batch(&b);
}

/* ---- attention over a Q8_0 cache ------------------------------------------------------ */

/* A random Q8_0 cache (words) and its dequantized values (double, [row][head_dim]). */
static uint32_t *rand_q8_cache(tu_rng *r, const ember_attn_shape *s, size_t rows, double *deq)
{
    uint32_t hd = s->head_dim, G = ember_kv_q8_group(hd), rw = (uint32_t)row_words(s);
    uint32_t *c = calloc(rows * rw, sizeof *c);
    for (size_t row = 0; row < rows; row++) {
        uint32_t *cw = c + row * rw;
        for (uint32_t g = 0; g < hd / G; g++) {
            /* scales around 1/127 .. 4/127, so values span about [-4, 4] */
            uint16_t h = (uint16_t)((8 + tu_next(r) % 2) << 10 | tu_next(r) % 1024);
            cw[hd / 4 + g / 2] |= (uint32_t)h << (g & 1 ? 16 : 0);
            double d = kt_half_to_float(h);
            for (uint32_t e = g * G; e < (g + 1) * G; e++) {
                int q = (int)(tu_next(r) % 255) - 127;
                cw[e / 4] |= (uint32_t)(q & 255) << (8 * (e % 4));
                deq[row * hd + e] = q * d;
            }
        }
    }
    return c;
}

/* A random F16 cache (as words) and its values in double. */
static uint32_t *rand_f16_cache(tu_rng *r, const ember_attn_shape *s, size_t rows, double *val)
{
    size_t n = rows * s->head_dim;
    float *f = kt_rand_floats(r, n, -2, 2);
    uint16_t *c = malloc(n * sizeof *c);
    for (size_t i = 0; i < n; i++) c[i] = ember_f32_to_f16(f[i]), val[i] = kt_half_to_float(c[i]);
    free(f);
    return (uint32_t *)c;
}

/* A random F32 cache (as words) and its values in double. */
static uint32_t *rand_f32_cache(tu_rng *r, const ember_attn_shape *s, size_t rows, double *val)
{
    size_t n = rows * s->head_dim;
    float *c = kt_rand_floats(r, n, -2, 2);
    for (size_t i = 0; i < n; i++) val[i] = c[i];
    return (uint32_t *)c;
}

/* Another way to compute rows of a batch: the tokens idx[0..n) gathered into a batch of
 * their own, through K/V spans ks/vs, with the tile hint max_run (0: ember_k_attention). */
typedef struct gathered {
    uint32_t idx[64], n, max_run;
    ember_vk_span out;
    const char *how;
    bool split;         /* decode rows through ember_k_attention_split (which must split) */
} gathered;

#define SPLIT_CHUNK 64 /* attention's chunk in these tests */

static void run_gathered(ctx *t, const kt_batch *b, const float *qkv, ember_vk_span bt, ember_vk_span ks,
                         ember_vk_span vs, gathered *g)
{
    const ember_attn_shape *s = &b->s;
    uint32_t w = qkv_width(s), pos[64], seq[64];
    float *q = malloc(sizeof(float) * w * g->n);
    for (uint32_t i = 0; i < g->n; i++) {
        memcpy(q + (size_t)i * w, qkv + (size_t)g->idx[i] * w, sizeof(float) * w);
        pos[i] = b->pos[g->idx[i]];
        seq[i] = b->seq[g->idx[i]];
    }
    ember_vk_span qs = kt_buf(t, q, sizeof(float) * w * g->n), ps = kt_buf(t, pos, 4 * g->n), ss = kt_buf(t, seq, 4 * g->n);
    g->out = kt_buf(t, NULL, sizeof(float) * g->n * s->n_heads * s->head_dim);
    if (g->split) {
        uint32_t top = 0;
        for (uint32_t i = 0; i < g->n; i++) top = pos[i] > top ? pos[i] : top;
        uint64_t pc = (uint64_t)g->n * s->n_heads * (top / 32 + 1); /* chunks of at least 32 */
        ember_attn_scratch sc = {kt_buf(t, NULL, pc * 8), kt_buf(t, NULL, pc * 4 * s->head_dim), pc};
        bool split = ember_k_attention_split(t->cmd, t->k, s, qs, ps, ss, bt, ks, vs, g->out, 0, g->n, top, &sc);
        CHECKF(split, "[%s] %u decode rows up to position %u were not split", t->variant, g->n, top);
    } else if (g->max_run) {
        ember_k_attention_runs(t->cmd, t->k, s, qs, ps, ss, bt, ks, vs, g->out, g->n, g->max_run);
    } else {
        ember_k_attention(t->cmd, t->k, s, qs, ps, ss, bt, ks, vs, g->out, g->n);
    }
    free(q);
}

/* Attention over a random cache of type kv, close to the reference; then kt_batch
 * invariance, each memcmp against the batch's rows: tokens alone (the first, a middle and
 * the last), the whole batch with decode-sized tiles, one sequence's chunk less its first
 * token (every token in another slot of its tile), the kt_batch reversed, and the kt_batch
 * reading K/V from storage buffers when it read them through texel views, and the kt_batch
 * in two dispatches of rows. */
static void test_attention_kv(ctx *t, ember_attn_shape s, ember_kv_type kv, uint32_t n_seqs, const uint32_t *last,
                              const uint32_t *chunk)
{
    tu_rng r = {31 + s.head_dim + n_seqs};
    s.kv_type = kv;
    kt_batch b = kt_make_batch(&r, s, n_seqs, last, chunk);
    uint32_t w = qkv_width(&s), out_w = s.n_heads * s.head_dim;
    size_t rows = n_rows(&b), out_n = (size_t)b.n_tok * out_w, cache_bytes = rows * row_words(&s) * 4;
    float *qkv = kt_rand_floats(&r, (size_t)b.n_tok * w, -0.5f, 0.5f);
    double *kd = malloc(sizeof(double) * rows * s.head_dim), *vd = malloc(sizeof(double) * rows * s.head_dim);
    uint32_t *(*make)(tu_rng *, const ember_attn_shape *, size_t, double *) =
        kv == EMBER_KV_Q8_0 ? rand_q8_cache : kv == EMBER_KV_F16 ? rand_f16_cache : rand_f32_cache;
    uint32_t *kc = make(&r, &s, rows, kd), *vc = make(&r, &s, rows, vd);
    double *want = malloc(sizeof(double) * out_n);
    kt_attention_ref(&b, qkv, kd, vd, want);
    kt_case_begin(t);
    ember_vk_span qs = kt_buf(t, qkv, sizeof(float) * b.n_tok * w), ps = kt_buf(t, b.pos, 4 * b.n_tok);
    ember_vk_span ss = kt_buf(t, b.seq, 4 * b.n_tok), bt = kt_buf(t, b.table, 4 * n_seqs * s.max_blocks_per_seq);
    ember_vk_span ks = cache_buf(t, kv, kc, cache_bytes), vs = cache_buf(t, kv, vc, cache_bytes);
    ember_vk_span os = kt_buf(t, NULL, sizeof(float) * out_n);
    ember_k_attention(t->cmd, t->k, &s, qs, ps, ss, bt, ks, vs, os, b.n_tok);

    gathered g[8];
    uint32_t ng = 0, pick[3] = {0, b.n_tok / 2, b.n_tok - 1}, longest = 0;
    for (int i = 0; i < 3; i++) g[ng++] = (gathered){{pick[i]}, 1, 0, {0}, "alone"};
    gathered all = {{0}, b.n_tok < 64 ? b.n_tok : 64, 1, {0}, "with decode tiles"}, rev = all, sub = all;
    for (uint32_t i = 0; i < all.n; i++) all.idx[i] = i, rev.idx[i] = all.n - 1 - i;
    g[ng++] = all;
    rev.how = "reversed";
    rev.max_run = 0;
    g[ng++] = rev;
    for (uint32_t q = 1; q < n_seqs; q++) longest = chunk[q] > chunk[longest] ? q : longest;
    sub.n = sub.max_run = 0;
    sub.how = "as a chunk less its first token";
    for (uint32_t i = 0, seen = 0; i < b.n_tok && sub.n < 64; i++)
        if (b.seq[i] == longest && seen++ > 0) sub.idx[sub.n++] = i;
    if (sub.n) g[ng++] = sub;
    /* The decode rows (sequences of one token) past the first chunk, split-K. */
    gathered dec = {{0}, 0, 1, {0}, "split-K", true};
    for (uint32_t i = 0; i < b.n_tok && dec.n < 64; i++)
        if (chunk[b.seq[i]] == 1 && b.pos[i] >= SPLIT_CHUNK) dec.idx[dec.n++] = i;
    if (dec.n) g[ng++] = dec;
    for (uint32_t i = 0; i < ng; i++) run_gathered(t, &b, qkv, bt, ks, vs, &g[i]);
    if (ks.view && vs.view) {
        gathered st = all;
        st.how = "from storage buffers";
        st.max_run = 0;
        ember_vk_span ks_plain = ks, vs_plain = vs;
        ks_plain.view = vs_plain.view = VK_NULL_HANDLE;
        run_gathered(t, &b, qkv, bt, ks_plain, vs_plain, &st);
        g[ng++] = st;
    }
    /* The batch as two dispatches of rows (ember_k_attention_rows), cut inside a run:
     * decode-sized tiles before the cut, the large tile after it. */
    uint32_t cut = b.n_tok / 3 + 1 < b.n_tok ? b.n_tok / 3 + 1 : b.n_tok;
    ember_vk_span seg_out = kt_buf(t, NULL, sizeof(float) * out_n);
    ember_k_attention_rows(t->cmd, t->k, &s, qs, ps, ss, bt, ks, vs, seg_out, 0, cut, 1);
    ember_k_attention_rows(t->cmd, t->k, &s, qs, ps, ss, bt, ks, vs, seg_out, cut, b.n_tok - cut, b.n_tok);
    char what[160];
    snprintf(what, sizeof what, "[%s] attention %s hd %u (groups of %u) heads %u/%u bs %u tokens %u last %u",
             t->variant, kv == EMBER_KV_Q8_0 ? "q8_0" : kv == EMBER_KV_F16 ? "f16" : "f32", s.head_dim, ember_kv_q8_group(s.head_dim), s.n_heads,
             s.n_kv_heads, s.block_size, b.n_tok, last[0]);
    if (kt_submit(t, what)) {
        kt_check_close(what, os.host, want, out_n, TOL);
        for (uint32_t i = 0; i < ng; i++)
            for (uint32_t j = 0; j < g[i].n; j++)
                CHECKF(memcmp((float *)g[i].out.host + (size_t)j * out_w, (float *)os.host + (size_t)g[i].idx[j] * out_w,
                              sizeof(float) * out_w) == 0,
                       "%s: token %u %s differs from the batch", what, g[i].idx[j], g[i].how);
        CHECKF(memcmp(seg_out.host, os.host, sizeof(float) * out_n) == 0, "%s: rows in two dispatches differ", what);
    }
    free(qkv);
    free(kd);
    free(vd);
    free(kc);
    free(vc);
    free(want);
    kt_free_batch(&b);
}

/* ---- timing (`test_kernel_attention bench`) ------------------------------------------- */

/* Median wall time (and CPU time, *cpu_ms) of one ember_k_attention_runs over batch b
 * (random q and cache, tile hint max_run) in ms: rounds timed submits of reps dispatches
 * each, after one warm-up. */
static double time_attention(ctx *t, const kt_batch *b, uint32_t max_run, int rounds, double *cpu_ms)
{
    const ember_attn_shape *s = &b->s;
    tu_rng r = {5};
    uint32_t w = qkv_width(s);
    size_t rows = n_rows(b), cache_bytes = rows * row_words(s) * 4;
    float *qkv = kt_rand_floats(&r, (size_t)b->n_tok * w, -0.5f, 0.5f);
    double *tmp = malloc(sizeof(double) * rows * s->head_dim);
    uint32_t *kc = s->kv_type == EMBER_KV_Q8_0 ? rand_q8_cache(&r, s, rows, tmp) : rand_f32_cache(&r, s, rows, tmp);
    kt_case_begin(t);
    ember_vk_span qs = kt_buf(t, qkv, sizeof(float) * b->n_tok * w), ps = kt_buf(t, b->pos, 4 * b->n_tok);
    ember_vk_span ss = kt_buf(t, b->seq, 4 * b->n_tok), bt = kt_buf(t, b->table, 4 * b->n_seqs * s->max_blocks_per_seq);
    ember_vk_span ks = cache_buf(t, s->kv_type, kc, cache_bytes), vs = cache_buf(t, s->kv_type, kc, cache_bytes);
    ember_vk_span os = kt_buf(t, NULL, sizeof(float) * b->n_tok * s->n_heads * s->head_dim);
    if (!kt_submit(t, "bench setup")) exit(1);
    double ms[16], cms[16], t0 = 0, c0 = 0;
    int reps = 1;
    for (int round = -1; round < rounds; round++) {
        if (ember_vk_cmd_begin(t->cmd, &t->err) != EMBER_OK) kt_die(t, "cmd_begin");
        for (int i = 0; i < reps; i++) {
            ember_k_attention_runs(t->cmd, t->k, s, qs, ps, ss, bt, ks, vs, os, b->n_tok, max_run);
            ember_vk_cmd_barrier(t->cmd);
        }
        t0 = kt_now_s();
        c0 = ember_cpu_seconds();
        if (!kt_submit(t, "bench")) exit(1);
        double dt = kt_now_s() - t0;
        if (round < 0) reps = dt < 0.02 ? (int)(0.02 / (dt + 1e-6)) + 1 : 1; /* ~20 ms per submit */
        else ms[round] = dt / reps * 1e3, cms[round] = (ember_cpu_seconds() - c0) / reps * 1e3;
    }
    qsort(ms, (size_t)rounds, sizeof ms[0], kt_cmp_double);
    qsort(cms, (size_t)rounds, sizeof cms[0], kt_cmp_double);
    *cpu_ms = cms[rounds / 2];
    free(qkv);
    free(tmp);
    free(kc);
    return ms[rounds / 2];
}

/* Decode batches of 16 sequences (one token each) at contexts 64 and 1000, and a 64-token
 * prefill chunk of one sequence ending at position 2000, for the small serving model's
 * attention (8 query heads, 4 KV heads, blocks of 16) at head_dim 32 and 64, F32 and
 * Q8_0 caches. */
static void bench(ctx *t)
{
    static const struct { const char *name; uint32_t n_seqs, last, chunk; } cases[] = {
        {"decode 16 x ctx 64", 16, 63, 1}, {"decode 16 x ctx 1000", 16, 999, 1}, {"prefill 64 @ ctx 2000", 1, 1999, 64}};
    static const uint32_t dims[] = {32, 64};
    const char *only = getenv("EMBER_BENCH_CASES"); /* e.g. "prefill 64 @ ctx 2000 hd 32": a bench aid */
    for (int c = 0; c < 3; c++)
        for (int d = 0; d < 2; d++)
            for (int q8 = 0; q8 < 2; q8++) {
                uint32_t last[32], chunk[32];
                for (uint32_t i = 0; i < cases[c].n_seqs; i++) last[i] = cases[c].last - i % 3, chunk[i] = cases[c].chunk;
                ember_attn_shape s = {8, 4, dims[d], dims[d], 10000.0f, 16, (cases[c].last + 16) / 16};
                s.kv_type = q8 ? EMBER_KV_Q8_0 : EMBER_KV_F32;
                char name[64];
                snprintf(name, sizeof name, "%s hd %u %s", cases[c].name, dims[d], q8 ? "q8_0" : "f32");
                if (only && !strstr(name, only)) continue;
                tu_rng r = {3};
                kt_batch b = kt_make_batch(&r, s, cases[c].n_seqs, last, chunk);
                double cpu, ms = time_attention(t, &b, cases[c].chunk, c == 2 ? 5 : 9, &cpu);
                printf("[%s] %-22s hd %3u %-4s: %9.3f ms (cpu %9.3f ms)\n", t->variant, cases[c].name, dims[d],
                       q8 ? "q8_0" : "f32", ms, cpu);
                fflush(stdout);
                kt_free_batch(&b);
            }
}

/* ---- main ----------------------------------------------------------------------------- */

static void test_layout(void)
{
    /* bytes per row: quants + f16 scales two per word */
    CHECK(ember_kv_q8_group(64) == 32 && ember_kv_row_bytes(64, EMBER_KV_Q8_0) == 68);
    CHECK(ember_kv_q8_group(128) == 32 && ember_kv_row_bytes(128, EMBER_KV_Q8_0) == 136);
    CHECK(ember_kv_q8_group(48) == 16 && ember_kv_row_bytes(48, EMBER_KV_Q8_0) == 56);
    CHECK(ember_kv_q8_group(8) == 8 && ember_kv_row_bytes(8, EMBER_KV_Q8_0) == 12);
    CHECK(ember_kv_q8_group(20) == 4 && ember_kv_row_bytes(20, EMBER_KV_Q8_0) == 32);
    CHECK(ember_kv_row_bytes(64, EMBER_KV_F32) == 256);
}

static void run_all(ctx *t)
{
    ember_attn_shape s = {8, 2, 64, 64, 10000.0f, 16, 40};
    CHECKF(ember_kernels_check_attn(t->k, &s, &t->err) == EMBER_OK, "%s", t->err.msg);
    ember_attn_shape bad = s;
    bad.rope_style = (ember_rope_style)7;
    CHECK(ember_kernels_check_attn(t->k, &bad, &t->err) != EMBER_OK);
    bad = s;
    bad.kv_type = (ember_kv_type)9;
    CHECK(ember_kernels_check_attn(t->k, &bad, &t->err) != EMBER_OK);
    static const ember_kv_type kvs[3] = {EMBER_KV_F32, EMBER_KV_Q8_0, EMBER_KV_F16};
    for (int kq = 0; kq < 3; kq++) {
        s = (ember_attn_shape){8, 2, 64, 64, 10000.0f, 16, 40};
        s.kv_type = kvs[kq];
        test_rope_case(t, s, false, false, "plain");
        s.rope_style = EMBER_ROPE_NEOX;
        test_rope_case(t, s, true, false, "qwen2");
        s.pos_scale = 0.25f;
        test_rope_case(t, s, true, true, "qwen2+freqs+scale");
        s.rope_dim = 32; /* partial rotary: the tail only gets its bias */
        s.rope_base = 500000.0f;
        test_rope_case(t, s, true, true, "partial");
        s = (ember_attn_shape){4, 1, 48, 48, 10000.0f, 5, 130};
        s.kv_type = kvs[kq];
        s.pos_scale = 0.4f;
        test_rope_case(t, s, false, true, "llama3");
        s.rope_style = EMBER_ROPE_NEOX;
        s.head_dim = s.rope_dim = 8;
        test_rope_case(t, s, true, false, "tiny");
        if (kq != 0) continue; /* the families' steps: before the cache, whatever its type */
        s = (ember_attn_shape){8, 2, 64, 64, 1000000.0f, 16, 40, EMBER_ROPE_NEOX};
        s.qk_norm = EMBER_QK_NORM_HEAD, s.eps = 1e-6f;
        test_rope_case(t, s, true, false, "qwen3 qk-norm");
        s.qk_norm = EMBER_QK_NORM_FULL;
        test_rope_case(t, s, false, false, "olmo2 qk-norm");
        s.qk_norm = EMBER_QK_NORM_NONE, s.no_rope = true;
        test_rope_case(t, s, true, false, "nope");
        s = (ember_attn_shape){8, 2, 64, 64, 1000000.0f, 16, 40};
        s.pos_scale = 0.25f, s.ext_factor = 1.0f, s.corr_lo = 5.0f, s.corr_hi = 21.0f, s.mscale = 1.13f;
        s.temp_scale = 0.1f, s.temp_floor = 32.0f;
        test_rope_case(t, s, false, false, "yarn+temperature");
        s = (ember_attn_shape){8, 2, 64, 64, 10000.0f, 16, 60};
        s.kv_type = kvs[kq];
        test_rope_neutral(t, s);
        s.rope_style = EMBER_ROPE_NEOX;
        test_rope_neutral(t, s);
    }
    test_rope_q8_invariance(t, (ember_attn_shape){8, 2, 64, 64, 10000.0f, 16, 20, EMBER_ROPE_NEOX, 1.0f,
                                                  EMBER_KV_Q8_0});
    uint32_t last3[] = {611, 299, 4}, chunk3[] = {1, 120, 3}, last2[] = {130, 47}, chunk2[] = {2, 9};
    ember_kv_type q8 = EMBER_KV_Q8_0, f32 = EMBER_KV_F32;
    test_attention_kv(t, (ember_attn_shape){8, 2, 64, 64, 10000.0f, 16, 40}, q8, 3, last3, chunk3);
    test_attention_kv(t, (ember_attn_shape){4, 1, 128, 128, 10000.0f, 16, 40}, q8, 2, last2, chunk2);
    test_attention_kv(t, (ember_attn_shape){6, 3, 48, 48, 10000.0f, 5, 40}, q8, 2, last2, chunk2);
    test_attention_kv(t, (ember_attn_shape){8, 4, 8, 8, 10000.0f, 7, 40}, q8, 2, last2, chunk2);
    /* Long contexts: the lanes split ~2000 keys (and head_dim for the larger heads); a
     * speculative-verify-like chunk next to a lone decode token. */
    uint32_t lastl[] = {1999, 1203}, chunkl[] = {1, 9};
    test_attention_kv(t, (ember_attn_shape){8, 4, 8, 8, 10000.0f, 16, 130}, f32, 2, lastl, chunkl);
    test_attention_kv(t, (ember_attn_shape){8, 2, 64, 64, 10000.0f, 16, 130}, f32, 2, lastl, chunkl);
    test_attention_kv(t, (ember_attn_shape){4, 1, 128, 128, 10000.0f, 7, 300}, f32, 2, lastl, chunkl);
    test_attention_kv(t, (ember_attn_shape){4, 2, 256, 256, 10000.0f, 16, 130}, f32, 2, lastl, chunkl);
    test_attention_kv(t, (ember_attn_shape){8, 2, 64, 64, 10000.0f, 16, 130}, q8, 2, lastl, chunkl);
    /* Every head size class and tile shape: the benchmark's model (8/4 heads of 32) with a
     * 64-token prefill chunk next to decode tokens, MHA (one head per tile), 8 query heads
     * per KV head (several head tiles), heads that leave lanes idle (16) or chunks past
     * head_dim (96), Q8_0 groups of 16 (80). */
    uint32_t lastp[] = {1999, 700, 40}, chunkp[] = {64, 1, 1};
    test_attention_kv(t, (ember_attn_shape){8, 4, 32, 32, 10000.0f, 16, 130}, f32, 3, lastp, chunkp);
    test_attention_kv(t, (ember_attn_shape){8, 4, 32, 32, 10000.0f, 16, 130}, q8, 3, lastp, chunkp);
    test_attention_kv(t, (ember_attn_shape){4, 4, 64, 64, 10000.0f, 16, 40}, q8, 3, last3, chunk3);
    test_attention_kv(t, (ember_attn_shape){8, 1, 16, 16, 10000.0f, 16, 40}, f32, 3, last3, chunk3);
    test_attention_kv(t, (ember_attn_shape){8, 1, 96, 96, 10000.0f, 16, 40}, q8, 2, last2, chunk2);
    test_attention_kv(t, (ember_attn_shape){4, 2, 80, 80, 10000.0f, 16, 40}, q8, 2, last2, chunk2);
    test_attention_kv(t, (ember_attn_shape){8, 2, 256, 256, 10000.0f, 16, 40}, q8, 3, last3, chunk3);
    /* F16 caches: a long context with a chunk, a prefill next to decodes, heads of 96 */
    ember_kv_type f16 = EMBER_KV_F16;
    test_attention_kv(t, (ember_attn_shape){8, 2, 64, 64, 10000.0f, 16, 130}, f16, 2, lastl, chunkl);
    test_attention_kv(t, (ember_attn_shape){8, 4, 32, 32, 10000.0f, 16, 130}, f16, 3, lastp, chunkp);
    test_attention_kv(t, (ember_attn_shape){8, 1, 96, 96, 10000.0f, 16, 40}, f16, 2, last2, chunk2);
    /* A local layer (window 100; 37 with a prefill chunk) with soft-capped logits and
     * another query scale (gemma2): the split-K decode rows lie past the window, whose
     * earlier chunks hold no position of theirs. */
    ember_attn_shape win = {8, 2, 64, 64, 10000.0f, 16, 130};
    win.window = 100, win.softcap = 2.0f, win.attn_scale = 0.3f;
    test_attention_kv(t, win, f32, 2, lastl, chunkl);
    win = (ember_attn_shape){8, 4, 32, 32, 10000.0f, 16, 130};
    win.window = 37, win.softcap = 1.5f;
    test_attention_kv(t, win, q8, 3, lastp, chunkp);
    /* Six decode tokens at ~11000 positions through ember_k_attention (tiles of up to 16
     * tokens): lavapipe's loop limit (65535 iterations per invocation) caps a tile's
     * tokens, or the last runs would stop early. */
    uint32_t lastx[6], chunkx[6];
    for (int i = 0; i < 6; i++) lastx[i] = 11000 - 37 * i, chunkx[i] = 1;
    test_attention_kv(t, (ember_attn_shape){2, 1, 8, 8, 10000.0f, 16, 700}, f32, 6, lastx, chunkx);
}

int main(int argc, char **argv)
{
    bool do_bench = argc > 1 && strcmp(argv[1], "bench") == 0;
    ctx t = {0};
    if (!kt_open(&t)) return tu_skip("no Vulkan device");
    test_layout();
    const ember_vk_caps *caps = ember_vk_get_caps(t.vk);
    const kt_variant *variants = kt_variants;
    for (int v = 0; v < 4; v++) {
        if (!variants[v].no_subgroup && !caps->subgroup_arith) continue;
        /* a repeat at another subgroup size: the baseline uses no subgroup operation */
        if (variants[v].no_subgroup && tu_subgroup_repeat()) continue;
        /* bench: the default kernels; EMBER_BENCH_ALL=1 adds the storage-buffer path. */
        if (do_bench && (variants[v].no_subgroup || (variants[v].no_texel && !getenv("EMBER_BENCH_ALL")))) continue;
        /* Chunks of 64 positions, merged in every run, and split-K made (lavapipe does
         * neither by default): the contexts below span up to 172 chunks. */
        ember_kernels_opts ko = {.no_subgroup = variants[v].no_subgroup, .no_texel = variants[v].no_texel,
                                 .attn_split = do_bench ? EMBER_ATTN_SPLIT_AUTO : EMBER_ATTN_SPLIT_ON,
                                 .attn_chunk = do_bench ? 0 : SPLIT_CHUNK};
        if (ember_kernels_create_opts(t.vk, &ko, &t.k, &t.err) != EMBER_OK) kt_die(&t, "ember_kernels_create");
        t.variant = variants[v].name;
        if (do_bench) bench(&t);
        else run_all(&t);
        ember_kernels_destroy(t.k);
        t.k = NULL;
    }
    kt_close(&t);
    return tu_finish("test_kernel_attention");
}
