/* test_arch.c — the qwen2 architecture, Llama 3 RoPE frequency factors, linear RoPE
 * scaling, and what the loader refuses of the families' table (docs/models.md; the other
 * families' numbers are checked against llama.cpp by test_arch_vs_llama.sh and against the
 * GPU by test_forward_arch.c):
 *
 * - the reference forward pass equals a naive re-implementation written here from the
 *   formulas (double precision, HF-style rotate_half for NeoX, complex multiplication
 *   for the normal style), for llama, qwen2 (GQA, two layers), qwen2 with scaling, and
 *   llama with factors; the same naive pass without the biases, or with the other RoPE
 *   pairing, is far off, so the comparison would catch either mistake;
 * - NeoX and normal RoPE give different logits on the same weights (equal at pos 0);
 * - factors all 1.0 give logits identical to no factors, the tool's 1..8 factors change
 *   them; linear factor 1 is the identity, factor 4 is not;
 * - refusals, each with a message naming the problem and the file: unknown
 *   architectures, scaling types Ember does not know (or another family's LongRoPE), a
 *   missing qwen2 bias, a bias of the wrong length or type, a bias Ember does not apply,
 *   bad rope_freqs, keys of other families (a sliding window, soft-caps, a temperature)
 *   set to values that would change the result, experts, a value length other than the
 *   key length, a tensor the family does not use;
 * - `ember make-test-model --arch/--rope-freqs/--rope-scale/--key`: deterministic,
 *   validated, and a qwen2 model holds the llama model's weights of the same seed. */
#include "model_fixture.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define N_PROMPT 7
static const uint32_t prompt[N_PROMPT] = { 1, 299, 17, 260, 45, 123, 2 };

static bool has(const char *msg, const char *part) { return strstr(msg, part) != NULL; }

static void tmp_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/test_arch-%s.gguf", tu_tmp_dir(), name);
}

/* ---- making and editing files ------------------------------------------------------- */

/* A copy of a file with some keys and tensors changed. */
typedef struct edit {
    const char *str_key, *str_val;   /* set (replacing) a string key */
    const char *f32_key;             /* set (replacing) a float key */
    float f32_val;
    const char *u32_key;             /* set (replacing) a uint32 key */
    uint32_t u32_val;
    const char *drop;                /* a tensor left out */
    const char *put;                 /* a 1-D tensor added, or replacing one of that name */
    ember_dtype put_type;
    uint64_t put_n;
    const void *put_data;
} edit;

static bool rewrite(const char *src, const char *dst, const edit *e)
{
    ember_gguf *g = NULL;
    ember_gguf_writer *w = NULL;
    ember_err err = {{0}};
    bool ok = ember_gguf_open(src, &g, &err) == EMBER_OK &&
              ember_gguf_writer_create(&w, &err) == EMBER_OK;
    const char *skip[] = { e->str_key ? e->str_key : "", e->f32_key ? e->f32_key : "",
                           e->u32_key ? e->u32_key : "", NULL };
    ok = ok && ember_gguf_copy_kv(w, g, skip) == EMBER_OK;
    if (ok && e->str_key) ember_gguf_add_str(w, e->str_key, e->str_val);
    if (ok && e->f32_key) ember_gguf_add_f32(w, e->f32_key, e->f32_val);
    if (ok && e->u32_key) ember_gguf_add_u32(w, e->u32_key, e->u32_val);
    for (uint64_t i = 0; ok && i < g->n_tensors; i++) {
        const ember_gguf_tensor *t = &g->tensors[i];
        if ((e->drop && strcmp(t->name, e->drop) == 0) || (e->put && strcmp(t->name, e->put) == 0))
            continue;
        ember_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    if (ok && e->put)
        ember_gguf_add_tensor(w, e->put, e->put_type, 1, &e->put_n, e->put_data,
                              ember_dtype_size(e->put_type, e->put_n));
    ok = ok && ember_gguf_write(w, dst, &err) == EMBER_OK;
    CHECKF(ok, "rewriting %s: %s", src, err.msg);
    ember_gguf_writer_free(w);
    ember_gguf_close(g);
    return ok;
}

/* ---- loading ---------------------------------------------------------------------- */

/* Without a reference: the tests edit a model before each pass, which makes its own. */
static ember_status load(const char *path, mf_model *L, ember_err *err)
{
    return mf_load(path, false, L, err);
}

/* All N_PROMPT rows of logits of the reference pass over m (NULL on failure). */
static float *ref_logits(const ember_llama *m) { return mf_ref_logits(m, prompt, N_PROMPT); }

static float *file_logits(const char *path)
{
    mf_model L;
    if (!mf_load_checked(path, false, &L))
        return NULL;
    float *out = ref_logits(&L.m);
    mf_unload(&L);
    return out;
}

/* ---- a naive forward pass, from the formulas ---------------------------------------- */

typedef struct naive {
    const ember_gguf *g;
    uint32_t dim, n_layers, n_heads, n_kv, hd, ffn, n_vocab, rot, ctx;
    double base, eps, scale;
    bool neox, bias;
    const float *freqs;     /* NULL = all 1 */
    double *kc, *vc;        /* [layer][pos][n_kv * hd] */
} naive;

static uint32_t key_u32(const ember_gguf *g, const char *arch, const char *name)
{
    char k[96];
    uint32_t v = 0;
    ember_err err = {{0}};
    snprintf(k, sizeof k, "%s.%s", arch, name);
    CHECKF(ember_gguf_get_u32(g, k, &v, &err) == EMBER_OK, "%s", err.msg);
    return v;
}

static double key_f32(const ember_gguf *g, const char *arch, const char *name, float dflt)
{
    char k[96];
    ember_err err = {{0}};
    snprintf(k, sizeof k, "%s.%s", arch, name);
    CHECK(ember_gguf_opt_f32(g, k, &dflt, &err) == EMBER_OK);
    return dflt;
}

/* An F32 tensor's data by formatted name; NULL when absent. */
static const float *T(const ember_gguf *g, const char *fmt, uint32_t l)
{
    char name[96];
    snprintf(name, sizeof name, fmt, l);
    const ember_gguf_tensor *t = ember_gguf_find_tensor(g, name);
    CHECKF(!t || t->type == EMBER_DTYPE_F32, "%s is not F32", name);
    return t ? t->data : NULL;
}

/* neox_override: -1 = from the architecture, 0/1 = force. */
static void naive_init(naive *n, const ember_gguf *g, bool bias, int neox_override)
{
    ember_gguf_str s;
    ember_err err = {{0}};
    char arch[16] = "llama";
    if (ember_gguf_get_str(g, "general.architecture", &s, &err) == EMBER_OK && s.len < sizeof arch)
        memcpy(arch, s.ptr, s.len), arch[s.len] = 0;
    memset(n, 0, sizeof *n);
    n->g = g;
    n->dim = key_u32(g, arch, "embedding_length");
    n->n_layers = key_u32(g, arch, "block_count");
    n->n_heads = key_u32(g, arch, "attention.head_count");
    n->n_kv = key_u32(g, arch, "attention.head_count_kv");
    n->ffn = key_u32(g, arch, "feed_forward_length");
    n->n_vocab = key_u32(g, arch, "vocab_size");
    n->ctx = key_u32(g, arch, "context_length");
    n->rot = key_u32(g, arch, "rope.dimension_count");
    n->hd = n->dim / n->n_heads;
    n->base = key_f32(g, arch, "rope.freq_base", 10000.0f);
    n->eps = key_f32(g, arch, "attention.layer_norm_rms_epsilon", 1e-5f);
    n->scale = key_f32(g, arch, "rope.scaling.factor", 1.0f);
    n->neox = neox_override >= 0 ? neox_override == 1 : strcmp(arch, "qwen2") == 0;
    n->bias = bias;
    n->freqs = T(g, "rope_freqs.weight", 0);
    size_t cache = (size_t)n->n_layers * n->ctx * n->n_kv * n->hd;
    n->kc = calloc(cache, sizeof *n->kc);
    n->vc = calloc(cache, sizeof *n->vc);
}

static void naive_free(naive *n) { free(n->kc), free(n->vc); }

/* y = W x + b, W with rows of n values. */
static void mv(const float *w, const float *b, const double *x, double *y, uint32_t rows, uint32_t n)
{
    for (uint32_t r = 0; r < rows; r++) {
        double acc = b ? b[r] : 0.0;
        for (uint32_t c = 0; c < n; c++)
            acc += (double)w[(size_t)r * n + c] * x[c];
        y[r] = acc;
    }
}

static void norm(const double *x, const float *w, double *y, uint32_t n, double eps)
{
    double ss = 0;
    for (uint32_t i = 0; i < n; i++)
        ss += x[i] * x[i];
    for (uint32_t i = 0; i < n; i++)
        y[i] = x[i] / sqrt(ss / n + eps) * w[i];
}

/* One head at position pos. Normal style as Meta's llama: pairs are complex numbers
 * multiplied by e^(i theta). NeoX as Hugging Face's Qwen2: x*cos + rotate_half(x)*sin,
 * with rotate_half(x) = (-x2, x1) over the two halves of the rotated part. */
static void naive_rope(const naive *n, double *x, uint32_t pos)
{
    uint32_t half = n->rot / 2;
    double y[512];
    memcpy(y, x, n->hd * sizeof *x);
    for (uint32_t i = 0; i < half; i++) {
        double th = (pos / n->scale) * pow(n->base, -(2.0 * i) / n->rot);
        if (n->freqs)
            th /= n->freqs[i];
        if (n->neox) {
            y[i] = x[i] * cos(th) + (-x[i + half]) * sin(th);
            y[i + half] = x[i + half] * cos(th) + x[i] * sin(th);
        } else {
            double re = x[2 * i], im = x[2 * i + 1];
            y[2 * i] = re * cos(th) - im * sin(th);
            y[2 * i + 1] = re * sin(th) + im * cos(th);
        }
    }
    memcpy(x, y, n->hd * sizeof *x);
}

static void naive_attention(naive *n, uint32_t l, uint32_t pos, const double *xn, double *x)
{
    uint32_t qd = n->n_heads * n->hd, kvd = n->n_kv * n->hd;
    double *q = malloc(qd * sizeof *q), *att = malloc(qd * sizeof *att), *o = malloc(n->dim * sizeof *o);
    double *k = n->kc + ((size_t)l * n->ctx + pos) * kvd, *v = n->vc + ((size_t)l * n->ctx + pos) * kvd;
    double *sc = malloc((pos + 1) * sizeof *sc);
    mv(T(n->g, "blk.%u.attn_q.weight", l), n->bias ? T(n->g, "blk.%u.attn_q.bias", l) : NULL, xn, q, qd, n->dim);
    mv(T(n->g, "blk.%u.attn_k.weight", l), n->bias ? T(n->g, "blk.%u.attn_k.bias", l) : NULL, xn, k, kvd, n->dim);
    mv(T(n->g, "blk.%u.attn_v.weight", l), n->bias ? T(n->g, "blk.%u.attn_v.bias", l) : NULL, xn, v, kvd, n->dim);
    for (uint32_t h = 0; h < n->n_heads; h++)
        naive_rope(n, q + h * n->hd, pos);
    for (uint32_t h = 0; h < n->n_kv; h++)
        naive_rope(n, k + h * n->hd, pos);
    for (uint32_t h = 0; h < n->n_heads; h++) {
        uint32_t kvh = h / (n->n_heads / n->n_kv);
        double mx = -1e300, sum = 0;
        for (uint32_t t = 0; t <= pos; t++) {
            const double *kt = n->kc + ((size_t)l * n->ctx + t) * kvd + kvh * n->hd;
            double d = 0;
            for (uint32_t i = 0; i < n->hd; i++)
                d += q[h * n->hd + i] * kt[i];
            sc[t] = d / sqrt((double)n->hd);
            mx = fmax(mx, sc[t]);
        }
        for (uint32_t t = 0; t <= pos; t++)
            sum += sc[t] = exp(sc[t] - mx);
        for (uint32_t i = 0; i < n->hd; i++) {
            double acc = 0;
            for (uint32_t t = 0; t <= pos; t++)
                acc += sc[t] / sum * n->vc[((size_t)l * n->ctx + t) * kvd + kvh * n->hd + i];
            att[h * n->hd + i] = acc;
        }
    }
    mv(T(n->g, "blk.%u.attn_output.weight", l), NULL, att, o, n->dim, qd);
    for (uint32_t i = 0; i < n->dim; i++)
        x[i] += o[i];
    free(q), free(att), free(o), free(sc);
}

static void naive_ffn(naive *n, uint32_t l, double *x)
{
    double *xn = malloc(n->dim * sizeof *xn), *gt = malloc(n->ffn * sizeof *gt);
    double *up = malloc(n->ffn * sizeof *up), *o = malloc(n->dim * sizeof *o);
    norm(x, T(n->g, "blk.%u.ffn_norm.weight", l), xn, n->dim, n->eps);
    mv(T(n->g, "blk.%u.ffn_gate.weight", l), NULL, xn, gt, n->ffn, n->dim);
    mv(T(n->g, "blk.%u.ffn_up.weight", l), NULL, xn, up, n->ffn, n->dim);
    for (uint32_t i = 0; i < n->ffn; i++)
        gt[i] = gt[i] / (1.0 + exp(-gt[i])) * up[i];
    mv(T(n->g, "blk.%u.ffn_down.weight", l), NULL, gt, o, n->dim, n->ffn);
    for (uint32_t i = 0; i < n->dim; i++)
        x[i] += o[i];
    free(xn), free(gt), free(up), free(o);
}

/* Logits (as float) of token at pos; earlier positions must have been run. */
static void naive_step(naive *n, uint32_t token, uint32_t pos, float *logits)
{
    double *x = malloc(n->dim * sizeof *x), *xn = malloc(n->dim * sizeof *xn);
    double *lg = malloc(n->n_vocab * sizeof *lg);
    const float *emb = T(n->g, "token_embd.weight", 0);
    for (uint32_t i = 0; i < n->dim; i++)
        x[i] = emb[(size_t)token * n->dim + i];
    for (uint32_t l = 0; l < n->n_layers; l++) {
        norm(x, T(n->g, "blk.%u.attn_norm.weight", l), xn, n->dim, n->eps);
        naive_attention(n, l, pos, xn, x);
        naive_ffn(n, l, x);
    }
    norm(x, T(n->g, "output_norm.weight", 0), xn, n->dim, n->eps);
    const float *out = T(n->g, "output.weight", 0);
    mv(out ? out : emb, NULL, xn, lg, n->n_vocab, n->dim);
    for (uint32_t i = 0; i < n->n_vocab; i++)
        logits[i] = (float)lg[i];
    free(x), free(xn), free(lg);
}

/* Relative error of the reference's logits (all rows) against the naive pass. */
static double naive_vs(const ember_gguf *g, const float *ref, uint32_t n_vocab, bool bias, int neox)
{
    naive n;
    naive_init(&n, g, bias, neox);
    float *lg = malloc(n_vocab * sizeof *lg);
    double worst = 0;
    for (uint32_t p = 0; p < N_PROMPT; p++) {
        naive_step(&n, prompt[p], p, lg);
        worst = fmax(worst, tu_rel_err(ref + (size_t)p * n_vocab, lg, n_vocab));
    }
    free(lg);
    naive_free(&n);
    return worst;
}

/* The reference equals the naive pass; without the biases or with the other pairing
 * the naive pass is far off (so this comparison would catch either mistake). */
static void check_against_naive(const char *path, bool expect_bias)
{
    mf_model L;
    if (!mf_load_checked(path, false, &L))
        return;
    float *ref = ref_logits(&L.m);
    if (ref) {
        uint32_t nv = L.m.hp.n_vocab;
        double e = naive_vs(L.g, ref, nv, true, -1);
        CHECKF(e <= 1e-5, "%s: reference vs naive rel err %g", path, e);
        double e_pair = naive_vs(L.g, ref, nv, true, L.m.hp.rope_style == EMBER_ROPE_NEOX ? 0 : 1);
        CHECKF(e_pair > 1e-2, "%s: the other RoPE pairing is only %g away", path, e_pair);
        if (expect_bias) {
            double e_bias = naive_vs(L.g, ref, nv, false, -1);
            CHECKF(e_bias > 1e-2, "%s: leaving the biases out is only %g away", path, e_bias);
        }
        printf("%s: rel err vs naive %.2g (other pairing %.2g)\n", strrchr(path, '/') + 1, e, e_pair);
    }
    free(ref);
    mf_unload(&L);
}

/* ---- the tests ---------------------------------------------------------------------- */

#define BASE "--dim 32 --layers 2 --heads 4 --kv-heads 2 --ffn 48 --vocab 300 --ctx 32 --seed 11 --type f32"

typedef struct files {
    char llama[512], qwen2[512], qwen2_s[512], llama_f[512], llama_s1[512], llama_s4[512];
} files;

static bool make_files(files *f)
{
    tmp_path(f->llama, sizeof f->llama, "llama");
    tmp_path(f->qwen2, sizeof f->qwen2, "qwen2");
    tmp_path(f->qwen2_s, sizeof f->qwen2_s, "qwen2-scale");
    tmp_path(f->llama_f, sizeof f->llama_f, "llama-freqs");
    tmp_path(f->llama_s1, sizeof f->llama_s1, "llama-scale1");
    tmp_path(f->llama_s4, sizeof f->llama_s4, "llama-scale4");
    return tu_make_model(f->llama, BASE) && tu_make_model(f->qwen2, BASE " --arch qwen2") &&
           tu_make_model(f->qwen2_s, BASE " --arch qwen2 --rope-scale 2.5") &&
           tu_make_model(f->llama_f, BASE " --rope-freqs") &&
           tu_make_model(f->llama_s1, BASE " --rope-scale 1") &&
           tu_make_model(f->llama_s4, BASE " --rope-scale 4");
}

static void test_descriptions(const files *f)
{
    mf_model L;
    ember_err err = {{0}};
    char what[128];
    CHECKF(load(f->qwen2, &L, &err) == EMBER_OK, "%s", err.msg);
    if (L.m.layers) {
        const ember_hparams *hp = &L.m.hp;
        CHECK(L.m.arch == EMBER_ARCH_QWEN2 && strcmp(ember_arch_name(L.m.arch), "qwen2") == 0);
        CHECK(hp->rope_style == EMBER_ROPE_NEOX && hp->rope_scale == 1.0f && !L.m.rope_freqs);
        CHECK(hp->dim == 32 && hp->n_layers == 2 && hp->n_heads == 4 && hp->n_kv_heads == 2);
        CHECK(hp->head_dim == 8 && hp->rope_dim == 8 && hp->ffn_dim == 48 && hp->n_vocab == 300);
        for (uint32_t l = 0; l < hp->n_layers; l++) {
            const ember_layer_tensors *t = &L.m.layers[l];
            CHECK(t->bq && t->bk && t->bv);
            CHECK(t->bq->ne[0] == 32 && t->bk->ne[0] == 16 && t->bv->ne[0] == 16);
            CHECK(t->bq->type == EMBER_DTYPE_F32);
            const float *b = t->bk->data;
            double ss = 0;
            for (int i = 0; i < 16; i++) {
                ss += b[i] * b[i];
                CHECK(fabsf(b[i]) <= 0.5f);
            }
            CHECKF(ss > 0.1, "biases look like zeros (%g)", ss);
        }
        CHECK(ember_llama_features(&L.m) == (EMBER_FEAT_QKV_BIAS | EMBER_FEAT_ROPE_NEOX));
        ember_llama_features_str(ember_llama_features(&L.m), what, sizeof what);
        CHECKF(strcmp(what, "Q/K/V biases, NeoX RoPE") == 0, "%s", what);
    }
    mf_unload(&L);

    CHECKF(load(f->llama, &L, &err) == EMBER_OK, "%s", err.msg);
    if (L.m.layers) {
        CHECK(L.m.arch == EMBER_ARCH_LLAMA && L.m.hp.rope_style == EMBER_ROPE_NORM);
        CHECK(!L.m.layers[0].bq && !L.m.layers[0].bk && !L.m.layers[0].bv && !L.m.rope_freqs);
        CHECK(ember_llama_features(&L.m) == 0);
        ember_llama_features_str(0, what, sizeof what);
        CHECK(strcmp(what, "none") == 0);
    }
    mf_unload(&L);

    CHECKF(load(f->qwen2_s, &L, &err) == EMBER_OK, "%s", err.msg);
    if (L.m.layers) {
        CHECK(L.m.hp.rope_scale == 2.5f && fabsf(ember_rope_pos_scale(&L.m.hp) - 0.4f) < 1e-7f);
        CHECK(!L.m.rope_freqs);
        uint32_t want = EMBER_FEAT_QKV_BIAS | EMBER_FEAT_ROPE_NEOX | EMBER_FEAT_ROPE_SCALE;
        CHECK(ember_llama_features(&L.m) == want);
        ember_llama_features_str(want, what, 20); /* truncated, still terminated */
        CHECK(strlen(what) < 20);
    }
    mf_unload(&L);
}

/* Llama 3.1-style factors: 1 rising to 8; all 1.0 = none; the varied ones matter. */
static void test_freq_factors(const files *f)
{
    mf_model L;
    if (!mf_load_checked(f->llama_f, false, &L))
        return;
    const ember_gguf_tensor *ff = L.m.rope_freqs;
    CHECK(ff && ff->ne[0] == L.m.hp.rope_dim / 2 && ff->type == EMBER_DTYPE_F32);
    if (ff) {
        const float *v = ff->data;
        CHECK(v[0] == 1.0f && fabsf(v[3] - 8.0f) < 1e-5f && v[1] > v[0] && v[2] > v[1] && v[3] > v[2]);
    }
    CHECK(ember_llama_features(&L.m) == EMBER_FEAT_ROPE_FREQS);
    float *with = ref_logits(&L.m);
    L.m.rope_freqs = NULL;
    float *none = ref_logits(&L.m);
    static const float ones_data[4] = { 1, 1, 1, 1 };
    ember_gguf_tensor ones = { .name = "ones", .n_dims = 1, .ne = { 4, 1, 1, 1 },
                               .type = EMBER_DTYPE_F32, .data = ones_data, .nbytes = 16 };
    L.m.rope_freqs = &ones;
    float *one = ref_logits(&L.m);
    float *plain = file_logits(f->llama); /* same seed, no rope_freqs.weight */
    size_t n = (size_t)N_PROMPT * L.m.hp.n_vocab;
    if (with && none && one && plain) {
        CHECK(memcmp(one, none, n * sizeof *one) == 0);
        CHECK(memcmp(none, plain, n * sizeof *one) == 0);
        double e = tu_rel_err(with, none, n);
        CHECKF(e > 1e-3, "factors 1..8 change logits by only %g", e);
        /* position 0 is not rotated: its row does not depend on the factors */
        CHECK(memcmp(with, none, L.m.hp.n_vocab * sizeof *with) == 0);
    }
    free(with), free(none), free(one), free(plain);
    mf_unload(&L);
}

/* Linear scaling: factor 1 is the identity, factor 4 changes the logits. */
static void test_linear_scale(const files *f)
{
    float *plain = file_logits(f->llama), *s1 = file_logits(f->llama_s1), *s4 = file_logits(f->llama_s4);
    size_t n = (size_t)N_PROMPT * 300;
    if (plain && s1 && s4) {
        CHECK(memcmp(plain, s1, n * sizeof *plain) == 0);
        double e = tu_rel_err(s4, plain, n);
        CHECKF(e > 1e-3, "linear factor 4 changes logits by only %g", e);
    }
    free(plain), free(s1), free(s4);
    mf_model L;
    ember_err err = {{0}};
    CHECK(load(f->llama_s4, &L, &err) == EMBER_OK && L.m.hp.rope_scale == 4.0f &&
          ember_llama_features(&L.m) == EMBER_FEAT_ROPE_SCALE);
    mf_unload(&L);
    /* a hand-built description's rope_scale 0 means no scaling */
    ember_hparams hp = { .rope_scale = 0.0f };
    CHECK(ember_rope_pos_scale(&hp) == 1.0f);
}

/* The same weights under the other pairing: equal at position 0, different after. */
static void test_neox_differs(const files *f)
{
    mf_model L;
    if (!mf_load_checked(f->qwen2, false, &L))
        return;
    float *neox = ref_logits(&L.m);
    L.m.hp.rope_style = EMBER_ROPE_NORM;
    float *norm_ = ref_logits(&L.m);
    uint32_t nv = L.m.hp.n_vocab;
    if (neox && norm_) {
        CHECK(memcmp(neox, norm_, nv * sizeof *neox) == 0);
        double e = tu_rel_err(norm_ + nv, neox + nv, (size_t)(N_PROMPT - 1) * nv);
        CHECKF(e > 1e-3, "NeoX and normal RoPE differ by only %g", e);
    }
    free(neox), free(norm_);
    mf_unload(&L);
}

/* Loads dst, expecting code and a message with every part (and the file name). */
static void expect(const char *dst, ember_status code, const char *part1, const char *part2)
{
    mf_model L;
    ember_err err = {{0}};
    ember_status st = load(dst, &L, &err);
    CHECKF(st == code, "%s: got %s (%s)", dst, ember_status_name(st), err.msg);
    if (code != EMBER_OK) {
        CHECKF(has(err.msg, part1) && (!part2 || has(err.msg, part2)) && has(err.msg, dst),
               "message '%s' lacks '%s' / '%s'", err.msg, part1, part2 ? part2 : "");
        CHECK(L.m.layers == NULL);
    }
    mf_unload(&L);
}

static void test_refusals(const files *f)
{
    char dst[512];
    tmp_path(dst, sizeof dst, "edited");
    static const char *const archs[] = { "gpt2", "gemma", "qwen2moe" };
    for (int i = 0; i < 3; i++) {
        char want[64];
        snprintf(want, sizeof want, "unsupported architecture '%s'", archs[i]);
        if (rewrite(f->qwen2, dst, &(edit){ .str_key = "general.architecture", .str_val = archs[i] }))
            expect(dst, EMBER_ERR_UNSUPPORTED, want, "Ember runs llama, qwen2, qwen3, gemma2");
    }
    static const char *const types[] = { "longrope", "dynamic", "su" };
    for (int i = 0; i < 3; i++) {
        char want[64];
        snprintf(want, sizeof want, "rope.scaling.type '%s'", types[i]);
        if (rewrite(f->qwen2, dst, &(edit){ .str_key = "qwen2.rope.scaling.type", .str_val = types[i] }))
            expect(dst, EMBER_ERR_UNSUPPORTED, want, "'none', 'linear' and 'yarn'");
    }
    /* keys that change the computation, in a family that does not read them, and a
     * tensor a family does not use: refused by name, not ignored */
    if (rewrite(f->qwen2, dst, &(edit){ .u32_key = "qwen2.attention.sliding_window", .u32_val = 4096 }))
        expect(dst, EMBER_ERR_UNSUPPORTED, "qwen2.attention.sliding_window = 4096", "does not apply it");
    static const char *const unread[] = { "qwen2.final_logit_softcapping", "qwen2.attention.temperature_scale" };
    for (int i = 0; i < 2; i++)
        if (rewrite(f->qwen2, dst, &(edit){ .f32_key = unread[i], .f32_val = 8.0f }))
            expect(dst, EMBER_ERR_UNSUPPORTED, unread[i], "does not apply it");
    if (rewrite(f->qwen2, dst, &(edit){ .u32_key = "qwen2.expert_count", .u32_val = 8 }))
        expect(dst, EMBER_ERR_UNSUPPORTED, "qwen2.expert_count = 8", "mixtures of experts");
    if (rewrite(f->qwen2, dst, &(edit){ .u32_key = "qwen2.attention.value_length", .u32_val = 16 }))
        expect(dst, EMBER_ERR_UNSUPPORTED, "value_length 16 differs from the key length 8", NULL);
    if (rewrite(f->llama, dst, &(edit){ .put = "blk.0.attn_q_norm.weight", .put_type = EMBER_DTYPE_F32,
                                        .put_n = 8, .put_data = (float[8]){1, 1, 1, 1, 1, 1, 1, 1} }))
        expect(dst, EMBER_ERR_UNSUPPORTED, "'blk.0.attn_q_norm.weight' is not part of a llama model", NULL);
    if (rewrite(f->qwen2, dst, &(edit){ .drop = "blk.1.attn_k.bias" }))
        expect(dst, EMBER_ERR_FORMAT, "missing tensor 'blk.1.attn_k.bias'", "qwen2");
    float v[64];
    for (int i = 0; i < 64; i++)
        v[i] = 1.0f + (float)i / 64;
    if (rewrite(f->qwen2, dst, &(edit){ .put = "blk.0.attn_v.bias", .put_type = EMBER_DTYPE_F32,
                                        .put_n = 17, .put_data = v }))
        expect(dst, EMBER_ERR_FORMAT, "tensor 'blk.0.attn_v.bias' has shape [17], expected [16]", NULL);
    uint16_t h[32] = {0};
    if (rewrite(f->qwen2, dst, &(edit){ .put = "blk.0.attn_q.bias", .put_type = EMBER_DTYPE_F16,
                                        .put_n = 32, .put_data = h }))
        expect(dst, EMBER_ERR_FORMAT, "'blk.0.attn_q.bias' is F16", "biases must be F32");
    if (rewrite(f->llama, dst, &(edit){ .put = "blk.1.attn_output.bias", .put_type = EMBER_DTYPE_F32,
                                        .put_n = 32, .put_data = v }))
        expect(dst, EMBER_ERR_UNSUPPORTED, "'blk.1.attn_output.bias'", "a llama model has no such bias");
    if (rewrite(f->llama_f, dst, &(edit){ .put = "rope_freqs.weight", .put_type = EMBER_DTYPE_F32,
                                          .put_n = 8, .put_data = v }))
        expect(dst, EMBER_ERR_FORMAT, "'rope_freqs.weight' has shape [8], expected [4]", NULL);
    float zero[4] = { 1, 2, 0, 4 };
    if (rewrite(f->llama_f, dst, &(edit){ .put = "rope_freqs.weight", .put_type = EMBER_DTYPE_F32,
                                          .put_n = 4, .put_data = zero }))
        expect(dst, EMBER_ERR_FORMAT, "'rope_freqs.weight' value 2 is 0", "positive");
    if (rewrite(f->llama, dst, &(edit){ .f32_key = "llama.rope.scaling.factor", .f32_val = -2.0f }))
        expect(dst, EMBER_ERR_FORMAT, "llama.rope.scaling.factor -2", "positive");
    /* the llama keys do not describe a qwen2 file */
    if (rewrite(f->llama, dst, &(edit){ .str_key = "general.architecture", .str_val = "qwen2" }))
        expect(dst, EMBER_ERR_FORMAT, "missing key qwen2.embedding_length", NULL);
    remove(dst);
}

/* What is accepted: optional llama biases, "none" scaling, the old scale_linear key. */
static void test_accepted(const files *f)
{
    char dst[512];
    mf_model L;
    ember_err err = {{0}};
    float v[32];
    for (int i = 0; i < 32; i++)
        v[i] = 0.25f - (float)i / 64;
    tmp_path(dst, sizeof dst, "accepted");
    if (rewrite(f->llama, dst, &(edit){ .put = "blk.1.attn_q.bias", .put_type = EMBER_DTYPE_F32,
                                        .put_n = 32, .put_data = v })) {
        CHECKF(load(dst, &L, &err) == EMBER_OK, "%s", err.msg);
        if (L.m.layers) {
            CHECK(L.m.layers[1].bq && !L.m.layers[1].bk && !L.m.layers[0].bq);
            CHECK(ember_llama_features(&L.m) == EMBER_FEAT_QKV_BIAS);
            float *ref = ref_logits(&L.m);
            if (ref) {
                double e = naive_vs(L.g, ref, L.m.hp.n_vocab, true, -1);
                CHECKF(e <= 1e-5, "llama with a Q bias: rel err vs naive %g", e);
            }
            free(ref);
        }
        mf_unload(&L);
    }
    if (rewrite(f->llama_s4, dst, &(edit){ .str_key = "llama.rope.scaling.type", .str_val = "none" })) {
        CHECKF(load(dst, &L, &err) == EMBER_OK && L.m.hp.rope_scale == 1.0f, "%s", err.msg);
        mf_unload(&L);
    }
    if (rewrite(f->llama, dst, &(edit){ .f32_key = "llama.rope.scale_linear", .f32_val = 2.0f })) {
        CHECKF(load(dst, &L, &err) == EMBER_OK && L.m.hp.rope_scale == 2.0f, "%s", err.msg);
        mf_unload(&L);
    }
    if (rewrite(f->llama, dst, &(edit){ .f32_key = "llama.rope.scaling.factor", .f32_val = 3.0f })) {
        CHECKF(load(dst, &L, &err) == EMBER_OK && L.m.hp.rope_scale == 3.0f, "%s", err.msg);
        mf_unload(&L); /* a factor without a type is linear, as in llama.cpp */
    }
    if (rewrite(f->qwen2_s, dst, &(edit){ .str_key = "qwen2.rope.scaling.type", .str_val = "yarn" })) {
        CHECKF(load(dst, &L, &err) == EMBER_OK && L.m.hp.rope_scaling == EMBER_ROPE_SCALING_YARN &&
               (ember_llama_features(&L.m) & EMBER_FEAT_YARN), "%s", err.msg);
        mf_unload(&L); /* YaRN: the same factor, blended per pair (test_forward_arch, llama.cpp) */
    }
    /* a key another family reads, at the value that changes nothing */
    if (rewrite(f->qwen2, dst, &(edit){ .f32_key = "qwen2.final_logit_softcapping", .f32_val = 0.0f })) {
        CHECKF(load(dst, &L, &err) == EMBER_OK, "%s", err.msg);
        mf_unload(&L);
    }
    remove(dst);
}

static bool same_bytes(const void *a, const void *b, size_t n) { return memcmp(a, b, n) == 0; }

static void test_tool(const files *f)
{
    char a[512], msg[1024];
    tmp_path(a, sizeof a, "tool");
    static const struct { const char *args, *word; } bad[] = {
        { "--arch gpt2", "arch" },
        { "--arch qwen2 --rope-freqs", "--rope-freqs does not fit a qwen2 model" },
        { "--arch olmo2 --tied", "--tied does not fit" },
        { "--arch gemma2 --key final_softcap=3", "gemma2 models read no such key" },
        { "--key attention.sliding_window", "SUFFIX=NUMBER" },
        { "--rope-scale 0", "rope-scale" },
        { "--rope-scale nan", "rope-scale" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = tu_make_model_rc(a, bad[i].args, msg, sizeof msg);
        CHECKF(rc != 0 && has(msg, bad[i].word), "'%s' gave %d: %s", bad[i].args, rc, msg);
    }
    /* deterministic, and qwen2 = the llama weights of the same seed plus biases */
    mf_model A, B, C;
    ember_err err = {{0}};
    memset(&A, 0, sizeof A), memset(&B, 0, sizeof B), memset(&C, 0, sizeof C);
    if (tu_make_model(a, BASE " --arch qwen2") && load(a, &A, &err) == EMBER_OK &&
        load(f->qwen2, &B, &err) == EMBER_OK && load(f->llama, &C, &err) == EMBER_OK) {
        CHECK(A.g->size == B.g->size && same_bytes(A.g->map, B.g->map, A.g->size));
        const ember_layer_tensors *q = &B.m.layers[1], *l = &C.m.layers[1];
        CHECK(same_bytes(q->wq->data, l->wq->data, q->wq->nbytes));
        CHECK(same_bytes(q->w_down->data, l->w_down->data, q->w_down->nbytes));
        CHECK(same_bytes(B.m.output->data, C.m.output->data, C.m.output->nbytes));
        CHECK(!same_bytes(q->bq->data, q->bk->data, q->bk->nbytes));
    } else {
        CHECKF(0, "%s", err.msg);
    }
    mf_unload(&A), mf_unload(&B), mf_unload(&C);
    remove(a);
}

int main(void)
{
    files f;
    if (!make_files(&f))
        return tu_finish("test_arch");
    test_descriptions(&f);
    check_against_naive(f.llama, false);
    check_against_naive(f.qwen2, true);
    check_against_naive(f.qwen2_s, true);
    check_against_naive(f.llama_f, false);
    check_against_naive(f.llama_s4, false);
    test_neox_differs(&f);
    test_freq_factors(&f);
    test_linear_scale(&f);
    test_refusals(&f);
    test_accepted(&f);
    test_tool(&f);
    remove(f.llama), remove(f.qwen2), remove(f.qwen2_s);
    remove(f.llama_f), remove(f.llama_s1), remove(f.llama_s4);
    return tu_finish("test_arch");
}
