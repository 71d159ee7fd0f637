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
 *  - long contexts (~2000 positions, head_dim 8 to 256, F32 and Q8_0 caches), where the
 *    kernel splits the keys (and head_dim) over lanes: close to the reference, and each
 *    token's bits the same alone as in the batch;
 * in both kernel variants (subgroup and Vulkan 1.2 core baseline). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels.h"
#include "testutil.h"

#define TOL 1e-4

typedef struct ctx {
    ember_vk *vk;
    ember_kernels *k;
    ember_vk_arena *arena; /* per case: reset by case_begin */
    ember_vk_cmd *cmd;
    ember_err err;
    const char *variant;
} ctx;

static void die(ctx *t, const char *what)
{
    fprintf(stderr, "%s failed: %s\n", what, t->err.msg);
    exit(1);
}

static void case_begin(ctx *t)
{
    ember_vk_arena_destroy(t->arena);
    if (ember_vk_arena_create(t->vk, &t->arena, &t->err) != EMBER_OK) die(t, "arena");
    if (ember_vk_cmd_begin(t->cmd, &t->err) != EMBER_OK) die(t, "cmd_begin");
}

/* A host-visible buffer holding a copy of data (zeros when NULL). */
static ember_vk_span buf(ctx *t, const void *data, size_t bytes)
{
    ember_vk_span s;
    if (ember_vk_alloc(t->arena, bytes ? bytes : 4, EMBER_VK_MEM_HOST, &s, &t->err) != EMBER_OK) die(t, "alloc");
    if (data) memcpy(s.host, data, bytes);
    else memset(s.host, 0, bytes);
    return s;
}

static bool submit(ctx *t, const char *what)
{
    ember_status s = ember_vk_cmd_submit(t->cmd, &t->err);
    CHECKF(s == EMBER_OK, "%s: submit: %s", what, t->err.msg);
    return s == EMBER_OK;
}

static void check_close(const char *what, const float *got, const double *want, size_t n, double tol)
{
    double num = 0, den = 1e-30;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= num)) num = d, worst = i;
        if (fabs(want[i]) > den) den = fabs(want[i]);
    }
    CHECKF(num / den < tol, "%s: rel err %.3g at %zu (got %g want %g)", what, num / den, worst, got[worst],
           want[worst]);
}

static float *rand_floats(tu_rng *r, size_t n, float lo, float hi)
{
    float *x = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        x[i] = tu_uniform(r, lo, hi);
        if (fabsf(x[i]) < 1e-3f) x[i] = 0.5f;
    }
    return x;
}

static float half_to_float(uint16_t h)
{
    uint32_t e = h >> 10 & 31, m = h & 1023;
    float v = e ? ldexpf((float)(m | 1024), (int)e - 25) : ldexpf((float)m, -24);
    return h >> 15 ? -v : v;
}

/* ---- batches over a paged cache ------------------------------------------------------- */

typedef struct batch {
    ember_attn_shape s;
    uint32_t n_blocks, n_seqs;
    uint32_t *table; /* [n_seqs][max_blocks_per_seq] */
    uint32_t n_tok;
    uint32_t *pos, *seq;
} batch;

/* Sequence q gets a chunk of chunk[q] tokens ending at position last[q], tokens of the
 * sequences interleaved; blocks are a shuffled permutation of the pool. */
static batch make_batch(tu_rng *r, ember_attn_shape s, uint32_t n_seqs, const uint32_t *last, const uint32_t *chunk)
{
    batch b = {s, s.max_blocks_per_seq * n_seqs + 3, n_seqs, NULL, 0, NULL, NULL};
    uint32_t *perm = malloc(sizeof(uint32_t) * b.n_blocks);
    for (uint32_t i = 0; i < b.n_blocks; i++) perm[i] = i;
    for (uint32_t i = b.n_blocks - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(tu_next(r) % (i + 1)), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    b.table = perm; /* the first n_seqs * max_blocks_per_seq entries */
    for (uint32_t q = 0; q < n_seqs; q++) b.n_tok += chunk[q];
    b.pos = malloc(sizeof(uint32_t) * b.n_tok);
    b.seq = malloc(sizeof(uint32_t) * b.n_tok);
    uint32_t done[8] = {0}, t = 0;
    while (t < b.n_tok)
        for (uint32_t q = 0; q < n_seqs; q++)
            if (done[q] < chunk[q]) {
                b.seq[t] = q;
                b.pos[t++] = last[q] + 1 - chunk[q] + done[q]++;
            }
    return b;
}

static void free_batch(batch *b)
{
    free(b->table);
    free(b->pos);
    free(b->seq);
}

/* Cache row of (sequence, position, kv head): rows are [block][kv_head][slot]. */
static size_t cache_row(const batch *b, uint32_t seq, uint32_t pos, uint32_t kvh)
{
    const ember_attn_shape *s = &b->s;
    uint32_t blk = b->table[seq * s->max_blocks_per_seq + pos / s->block_size];
    return ((size_t)blk * s->n_kv_heads + kvh) * s->block_size + pos % s->block_size;
}

static size_t n_rows(const batch *b) { return (size_t)b->n_blocks * b->s.n_kv_heads * b->s.block_size; }
static uint32_t qkv_width(const ember_attn_shape *s) { return (s->n_heads + 2 * s->n_kv_heads) * s->head_dim; }
static size_t row_words(const ember_attn_shape *s) { return ember_kv_row_bytes(s->head_dim, s->kv_type) / 4; }

/* ---- RoPE in double, from the formulas of docs/models.md ------------------------------ */

typedef struct rope_in {
    const float *bias;  /* one qkv row, or NULL */
    const float *freqs; /* rope_dim / 2, or NULL */
} rope_in;

/* Token row in -> out: biases added, q and k heads rotated. */
static void rope_row_ref(const ember_attn_shape *s, const rope_in *ri, const float *in, uint32_t pos, double *out)
{
    uint32_t w = qkv_width(s), hd = s->head_dim, half = s->rope_dim / 2;
    double scale = s->pos_scale > 0 ? s->pos_scale : 1.0;
    for (uint32_t e = 0; e < w; e++) out[e] = (double)in[e] + (ri->bias ? ri->bias[e] : 0.0);
    for (uint32_t h = 0; h < s->n_heads + s->n_kv_heads; h++)
        for (uint32_t i = 0; i < half; i++) {
            double th = pos * scale * pow(s->rope_base, -2.0 * i / s->rope_dim);
            if (ri->freqs) th /= ri->freqs[i];
            uint32_t a = h * hd + (s->rope_style == EMBER_ROPE_NEOX ? i : 2 * i);
            uint32_t b = s->rope_style == EMBER_ROPE_NEOX ? a + half : a + 1;
            double x = out[a], y = out[b];
            out[a] = x * cos(th) - y * sin(th);
            out[b] = x * sin(th) + y * cos(th);
        }
}

/* Runs rope_store over b with random qkv; returns the expected rows (double) and the
 * GPU's qkv and K/V caches (host copies, caller frees). */
typedef struct rope_run {
    double *want;     /* n_tok x qkv width */
    float *qkv;       /* GPU result */
    uint32_t *kc, *vc; /* GPU caches, as 32-bit words */
} rope_run;

static bool run_rope(ctx *t, const batch *b, const rope_in *ri, const float *qkv_in, rope_run *out)
{
    const ember_attn_shape *s = &b->s;
    uint32_t w = qkv_width(s);
    size_t cache_bytes = n_rows(b) * row_words(s) * 4, qkv_bytes = sizeof(float) * b->n_tok * w;
    out->want = malloc(sizeof(double) * b->n_tok * w);
    for (uint32_t i = 0; i < b->n_tok; i++)
        rope_row_ref(s, ri, qkv_in + (size_t)i * w, b->pos[i], out->want + (size_t)i * w);
    case_begin(t);
    ember_vk_span qs = buf(t, qkv_in, qkv_bytes), ps = buf(t, b->pos, 4 * b->n_tok), ss = buf(t, b->seq, 4 * b->n_tok);
    ember_vk_span bt = buf(t, b->table, 4 * b->n_seqs * s->max_blocks_per_seq);
    ember_vk_span ks = buf(t, NULL, cache_bytes), vs = buf(t, NULL, cache_bytes);
    ember_rope_bufs rb = {{0}, {0}};
    if (ri->bias) rb.bias = buf(t, ri->bias, sizeof(float) * w);
    if (ri->freqs) rb.freqs = buf(t, ri->freqs, sizeof(float) * s->rope_dim / 2);
    ember_k_rope_store(t->cmd, t->k, s, &rb, qs, ps, ss, bt, ks, vs, b->n_tok);
    if (!submit(t, "rope_store")) return false;
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
static void check_f32_cache(const char *what, const batch *b, const rope_run *r)
{
    const ember_attn_shape *s = &b->s;
    uint32_t w = qkv_width(s), hd = s->head_dim;
    double worst = 0, big = 1e-30;
    for (uint32_t i = 0; i < b->n_tok; i++)
        for (uint32_t kh = 0; kh < s->n_kv_heads; kh++) {
            const float *k = (const float *)r->kc + cache_row(b, b->seq[i], b->pos[i], kh) * hd;
            const float *v = (const float *)r->vc + cache_row(b, b->seq[i], b->pos[i], kh) * hd;
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
        double d = half_to_float((uint16_t)(g & 1 ? sw >> 16 : sw & 0xffff)), amax = 0;
        for (uint32_t e = g * G; e < (g + 1) * G; e++) amax = fmax(amax, fabs(x[e]));
        CHECKF(fabs(d - amax / 127) <= amax / 127 * 1e-3 + 1e-30, "%s: group %u scale %g, want %g", what, g, d,
               amax / 127);
        for (uint32_t e = g * G; e < (g + 1) * G; e++) {
            int q = (int8_t)(row[e / 4] >> (8 * (e % 4)) & 255);
            double err = fabs(q * d - x[e]);
            if (d > 0) *worst_step = fmax(*worst_step, err / d);
            CHECKF(err <= 0.5 * d * 1.002 + amax * 1e-6, "%s: value %u: %d * %g vs %g", what, e, q, d, x[e]);
        }
    }
}

static void check_q8_cache(const char *what, const batch *b, const rope_run *r)
{
    const ember_attn_shape *s = &b->s;
    uint32_t w = qkv_width(s), hd = s->head_dim;
    double worst_step = 0;
    for (uint32_t i = 0; i < b->n_tok; i++)
        for (uint32_t kh = 0; kh < s->n_kv_heads; kh++) {
            size_t row = cache_row(b, b->seq[i], b->pos[i], kh) * row_words(s);
            const double *k = r->want + (size_t)i * w + (s->n_heads + kh) * hd;
            check_q8_row(what, r->kc + row, k, hd, &worst_step);
            check_q8_row(what, r->vc + row, k + s->n_kv_heads * hd, hd, &worst_step);
        }
    CHECKF(worst_step <= 0.5 * 1.002, "%s: worst error %.4f steps", what, worst_step);
    printf("%s: worst quantization error %.4f steps\n", what, worst_step);
}

static void test_rope_case(ctx *t, ember_attn_shape s, bool bias, bool freqs, const char *name)
{
    static const uint32_t last[] = {611, 47, 4}, chunk[] = {1, 20, 3};
    tu_rng r = {11 + s.head_dim + s.rope_dim};
    batch b = make_batch(&r, s, 3, last, chunk);
    uint32_t w = qkv_width(&s);
    float *qkv = rand_floats(&r, (size_t)b.n_tok * w, -1, 1), *bv = rand_floats(&r, w, -0.5f, 0.5f);
    float fv[128];
    for (uint32_t i = 0; i < s.rope_dim / 2; i++) fv[i] = 1.0f + 7.0f * i / (s.rope_dim / 2); /* 1 .. 8 */
    rope_in ri = {bias ? bv : NULL, freqs ? fv : NULL};
    rope_run run = {0};
    char what[160];
    snprintf(what, sizeof what, "[%s] rope_store %s hd %u rope %u %s%s scale %g %s", t->variant, name, s.head_dim,
             s.rope_dim, s.rope_style == EMBER_ROPE_NEOX ? "neox" : "norm", bias ? " bias" : "", s.pos_scale,
             s.kv_type == EMBER_KV_Q8_0 ? "q8_0" : "f32");
    if (run_rope(t, &b, &ri, qkv, &run)) {
        check_close(what, run.qkv, run.want, (size_t)b.n_tok * w, TOL);
        if (s.kv_type == EMBER_KV_Q8_0) check_q8_cache(what, &b, &run);
        else check_f32_cache(what, &b, &run);
    }
    free_run(&run);
    free(qkv);
    free(bv);
    free_batch(&b);
}

/* Zero biases, factors of one and a scale of exactly one change no bit. */
static void test_rope_neutral(ctx *t, ember_attn_shape s)
{
    static const uint32_t last[] = {900, 33}, chunk[] = {2, 9};
    tu_rng r = {21};
    batch b = make_batch(&r, s, 2, last, chunk);
    uint32_t w = qkv_width(&s);
    float *qkv = rand_floats(&r, (size_t)b.n_tok * w, -1, 1), *zeros = calloc(w, sizeof(float));
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
    free_batch(&b);
}

/* A token's quantized rows are the same computed alone as in the batch. */
static void test_rope_q8_invariance(ctx *t, ember_attn_shape s)
{
    static const uint32_t last[] = {300, 70, 5}, chunk[] = {1, 40, 6};
    tu_rng r = {23};
    batch b = make_batch(&r, s, 3, last, chunk);
    uint32_t w = qkv_width(&s);
    float *qkv = rand_floats(&r, (size_t)b.n_tok * w, -2, 2), *bv = rand_floats(&r, w, -0.5f, 0.5f);
    rope_in ri = {bv, NULL};
    rope_run all = {0}, one = {0};
    uint32_t pick = b.n_tok / 2, rw = (uint32_t)row_words(&s);
    bool ok = run_rope(t, &b, &ri, qkv, &all);
    batch b1 = b;
    b1.n_tok = 1;
    b1.pos = &b.pos[pick];
    b1.seq = &b.seq[pick];
    ok = ok && run_rope(t, &b1, &ri, qkv + (size_t)pick * w, &one);
    for (uint32_t kh = 0; ok && kh < s.n_kv_heads; kh++) {
        size_t row = cache_row(&b, b.seq[pick], b.pos[pick], kh) * rw;
        CHECKF(memcmp(all.kc + row, one.kc + row, 4 * rw) == 0 && memcmp(all.vc + row, one.vc + row, 4 * rw) == 0,
               "[%s] q8_0 rows of token %u differ alone", t->variant, pick);
    }
    free_run(&all);
    free_run(&one);
    free(qkv);
    free(bv);
    free_batch(&b);
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
            double d = half_to_float(h);
            for (uint32_t e = g * G; e < (g + 1) * G; e++) {
                int q = (int)(tu_next(r) % 255) - 127;
                cw[e / 4] |= (uint32_t)(q & 255) << (8 * (e % 4));
                deq[row * hd + e] = q * d;
            }
        }
    }
    return c;
}

static void attention_ref(const batch *b, const float *qkv, const double *kc, const double *vc, double *want)
{
    const ember_attn_shape *s = &b->s;
    uint32_t D = s->head_dim, w = qkv_width(s), group = s->n_heads / s->n_kv_heads;
    double *p = NULL;
    for (uint32_t i = 0; i < b->n_tok; i++) {
        uint32_t n = b->pos[i] + 1;
        p = realloc(p, sizeof(double) * n);
        for (uint32_t h = 0; h < s->n_heads; h++) {
            const float *q = qkv + (size_t)i * w + h * D;
            double m = -INFINITY, l = 0;
            for (uint32_t j = 0; j < n; j++) {
                const double *k = kc + cache_row(b, b->seq[i], j, h / group) * D;
                double d = 0;
                for (uint32_t e = 0; e < D; e++) d += (double)q[e] * k[e];
                p[j] = d / sqrt((double)D);
                m = fmax(m, p[j]);
            }
            for (uint32_t j = 0; j < n; j++) l += p[j] = exp(p[j] - m);
            for (uint32_t e = 0; e < D; e++) {
                double o = 0;
                for (uint32_t j = 0; j < n; j++) o += p[j] * vc[cache_row(b, b->seq[i], j, h / group) * D + e];
                want[((size_t)i * s->n_heads + h) * D + e] = o / l;
            }
        }
    }
    free(p);
}

/* A random F32 cache (as words) and its values in double. */
static uint32_t *rand_f32_cache(tu_rng *r, const ember_attn_shape *s, size_t rows, double *val)
{
    size_t n = rows * s->head_dim;
    float *c = rand_floats(r, n, -2, 2);
    for (size_t i = 0; i < n; i++) val[i] = c[i];
    return (uint32_t *)c;
}

/* Attention over a random cache of type kv; then the same tokens one at a time must give
 * the batch's bits (batch invariance). */
static void test_attention_kv(ctx *t, ember_attn_shape s, ember_kv_type kv, uint32_t n_seqs, const uint32_t *last,
                              const uint32_t *chunk)
{
    tu_rng r = {31 + s.head_dim + n_seqs};
    s.kv_type = kv;
    batch b = make_batch(&r, s, n_seqs, last, chunk);
    uint32_t w = qkv_width(&s), out_w = s.n_heads * s.head_dim;
    size_t rows = n_rows(&b), out_n = (size_t)b.n_tok * out_w, cache_bytes = rows * row_words(&s) * 4;
    float *qkv = rand_floats(&r, (size_t)b.n_tok * w, -0.5f, 0.5f);
    double *kd = malloc(sizeof(double) * rows * s.head_dim), *vd = malloc(sizeof(double) * rows * s.head_dim);
    uint32_t *kc = kv == EMBER_KV_Q8_0 ? rand_q8_cache(&r, &s, rows, kd) : rand_f32_cache(&r, &s, rows, kd);
    uint32_t *vc = kv == EMBER_KV_Q8_0 ? rand_q8_cache(&r, &s, rows, vd) : rand_f32_cache(&r, &s, rows, vd);
    double *want = malloc(sizeof(double) * out_n);
    attention_ref(&b, qkv, kd, vd, want);
    case_begin(t);
    ember_vk_span qs = buf(t, qkv, sizeof(float) * b.n_tok * w), ps = buf(t, b.pos, 4 * b.n_tok);
    ember_vk_span ss = buf(t, b.seq, 4 * b.n_tok), bt = buf(t, b.table, 4 * n_seqs * s.max_blocks_per_seq);
    ember_vk_span ks = buf(t, kc, cache_bytes), vs = buf(t, vc, cache_bytes), os = buf(t, NULL, sizeof(float) * out_n);
    ember_k_attention(t->cmd, t->k, &s, qs, ps, ss, bt, ks, vs, os, b.n_tok);
    ember_vk_span one[3];
    uint32_t pick[3] = {0, b.n_tok / 2, b.n_tok - 1};
    for (int i = 0; i < 3; i++) {
        one[i] = buf(t, NULL, sizeof(float) * out_w);
        ember_vk_span q1 = buf(t, qkv + (size_t)pick[i] * w, sizeof(float) * w);
        ember_k_attention(t->cmd, t->k, &s, q1, buf(t, &b.pos[pick[i]], 4), buf(t, &b.seq[pick[i]], 4), bt, ks, vs,
                          one[i], 1);
    }
    char what[160];
    snprintf(what, sizeof what, "[%s] attention %s hd %u (groups of %u) heads %u/%u bs %u tokens %u last %u",
             t->variant, kv == EMBER_KV_Q8_0 ? "q8_0" : "f32", s.head_dim, ember_kv_q8_group(s.head_dim), s.n_heads,
             s.n_kv_heads, s.block_size, b.n_tok, last[0]);
    if (submit(t, what)) {
        check_close(what, os.host, want, out_n, TOL);
        for (int i = 0; i < 3; i++)
            CHECKF(memcmp(one[i].host, (float *)os.host + (size_t)pick[i] * out_w, sizeof(float) * out_w) == 0,
                   "%s: token %u alone differs from the batch", what, pick[i]);
    }
    free(qkv);
    free(kd);
    free(vd);
    free(kc);
    free(vc);
    free(want);
    free_batch(&b);
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
    for (int q8 = 0; q8 < 2; q8++) {
        s = (ember_attn_shape){8, 2, 64, 64, 10000.0f, 16, 40};
        s.kv_type = q8 ? EMBER_KV_Q8_0 : EMBER_KV_F32;
        test_rope_case(t, s, false, false, "plain");
        s.rope_style = EMBER_ROPE_NEOX;
        test_rope_case(t, s, true, false, "qwen2");
        s.pos_scale = 0.25f;
        test_rope_case(t, s, true, true, "qwen2+freqs+scale");
        s.rope_dim = 32; /* partial rotary: the tail only gets its bias */
        s.rope_base = 500000.0f;
        test_rope_case(t, s, true, true, "partial");
        s = (ember_attn_shape){4, 1, 48, 48, 10000.0f, 5, 130};
        s.kv_type = q8 ? EMBER_KV_Q8_0 : EMBER_KV_F32;
        s.pos_scale = 0.4f;
        test_rope_case(t, s, false, true, "llama3");
        s.rope_style = EMBER_ROPE_NEOX;
        s.head_dim = s.rope_dim = 8;
        test_rope_case(t, s, true, false, "tiny");
        s = (ember_attn_shape){8, 2, 64, 64, 10000.0f, 16, 60};
        s.kv_type = q8 ? EMBER_KV_Q8_0 : EMBER_KV_F32;
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
}

int main(void)
{
    ctx t = {0};
    ember_vk_opts vo = {.validation = tu_validation()};
    ember_status s = ember_vk_create(&vo, &t.vk, &t.err);
    if (s == EMBER_ERR_NO_DEVICE) return tu_skip("no Vulkan device");
    if (s != EMBER_OK) die(&t, "ember_vk_create");
    if (ember_vk_cmd_create(t.vk, &t.cmd, &t.err) != EMBER_OK) die(&t, "cmd_create");
    test_layout();
    const ember_vk_caps *caps = ember_vk_get_caps(t.vk);
    static const char *names[2] = {"subgroup", "baseline"};
    for (int v = 0; v < 2; v++) {
        if (v == 0 && !caps->subgroup_arith) continue;
        ember_kernels_opts ko = {.no_subgroup = v == 1};
        if (ember_kernels_create_opts(t.vk, &ko, &t.k, &t.err) != EMBER_OK) die(&t, "ember_kernels_create");
        t.variant = names[v];
        run_all(&t);
        ember_kernels_destroy(t.k);
        t.k = NULL;
    }
    char first[512] = "";
    uint32_t nv = ember_vk_validation_count(t.vk, first, sizeof first);
    CHECKF(nv == 0, "%u validation messages, first: %s", nv, first);
    ember_vk_arena_destroy(t.arena);
    ember_vk_cmd_destroy(t.cmd);
    ember_vk_destroy(t.vk);
    return tu_finish("test_kernel_attention");
}
