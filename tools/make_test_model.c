/* make_test_model.c — `ember make-test-model OUT.gguf [options]`: writes a small GGUF of
 * any family of engine/model/arch.h (the tensors its table entry lists, the keys it
 * reads), with seeded random weights and a working SentencePiece-style vocabulary
 * (test_vocab.c), so the test suite needs no downloaded model and llama.cpp loads the
 * same file. See docs/test-models.md.
 *
 * Same arguments and seed give a byte-identical file. Each tensor draws from its own
 * stream (seeded by the seed and the tensor's name), so the F32, F16 and Q8_0 models
 * of one seed hold the same underlying weights, and changing --layers leaves the
 * weights of the layers that remain unchanged; a qwen2 model of one seed is the llama
 * model of that seed plus Q/K/V biases. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "engine/model/gguf_write.h"
#include "platform/os_thread.h"
#include "engine/model/model.h"
#include "engine/model/quant.h"
#include "make_test_model_args.h"

#define MAX_THREADS 16 /* making a tensor */

/* ---- weights --------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* x[i] = center + uniform(-half, half), two 24-bit draws per 64-bit step. The generator
 * is a counter, so a run starting at an even index i of one stream starts from the
 * stream's state advanced by i / 2 steps, and gets the very values of one pass. */
static void fill_uniform(float *x, size_t n, uint64_t seed, float center, float half)
{
    const float unit = 1.0f / 16777216.0f;
    for (size_t i = 0; i < n; i += 2) {
        uint64_t r = splitmix64(&seed);
        x[i] = center + half * (2.0f * (float)(r >> 40) * unit - 1.0f);
        if (i + 1 < n)
            x[i + 1] = center + half * (2.0f * (float)((r >> 8) & 0xffffff) * unit - 1.0f);
    }
}

static uint64_t stream_at(uint64_t seed, uint64_t i) { return seed + (i / 2) * 0x9E3779B97F4A7C15ull; }

/* ---- the tensors: planned, typed, then made one at a time as the file is written ---- */

/* One tensor to make: where its values come from and the type it is written in. */
typedef struct plan plan;
typedef struct spec {
    char name[64];
    uint32_t n_dims;
    uint64_t ne[3];       /* ne[2]: experts (1 otherwise) */
    float center, half;   /* values center + uniform(-half, half), seeded by the name */
    ember_dtype type;     /* F32 for norms and biases; the matrices' type, then as chosen */
    bool matrix;
    long seed;
    plan *of;             /* the plan it is in, for the progress bar */
} spec;

struct plan {
    spec *s;
    size_t n, cap;
    double bytes, written; /* of the tensors made as the file is written, for the progress bar */
};

static ember_status add_weight3(plan *p, const tm_args *a, const char *name, bool matrix, uint32_t n_dims,
                                const uint64_t ne[3], float center, float half)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        spec *s = realloc(p->s, cap * sizeof *s);
        if (!s) return EMBER_ERR_OUT_OF_MEMORY;
        p->s = s, p->cap = cap;
    }
    spec *t = &p->s[p->n++];
    *t = (spec){.n_dims = n_dims, .ne = {ne[0], ne[1], ne[2]}, .center = center, .half = half,
                .type = matrix ? a->type : EMBER_DTYPE_F32, .matrix = matrix, .seed = a->seed};
    snprintf(t->name, sizeof t->name, "%s", name);
    return EMBER_OK;
}

static ember_status add_weight(plan *p, const tm_args *a, const char *name, bool matrix, uint32_t n_dims,
                               uint64_t ne0, uint64_t ne1, float center, float half)
{
    return add_weight3(p, a, name, matrix, n_dims, (uint64_t[3]){ne0, ne1, 1}, center, half);
}

/* Rows r0 .. r1-1 of a tensor, made on a thread of their own (make_tensor). */
typedef struct rows_job {
    const struct spec *t;
    uint8_t *dst;
    uint64_t seed, r0, r1;
    bool failed;
} rows_job;

static void make_rows(void *arg)
{
    rows_job *j = arg;
    const spec *t = j->t;
    uint64_t ne0 = t->ne[0], first = j->r0 * ne0, n = (j->r1 - j->r0) * ne0;
    uint8_t *out = j->dst + ember_dtype_size(t->type, first);
    float *x = t->type == EMBER_DTYPE_F32 ? (float *)out : malloc(n * sizeof *x);
    if (!x) {
        j->failed = true;
        return;
    }
    fill_uniform(x, n, stream_at(j->seed, first), t->center, t->half);
    if (t->type != EMBER_DTYPE_F32) { /* the rows are whole blocks: one call is row by row */
        ember_quantize_row(t->type, x, out, n);
        free(x);
    }
    return;
}

/* Threads for a tensor of n values: one per core, each with at least a million values;
 * runs start at even values (a pair of the generator) and whole rows. */
static uint64_t rows_of(const spec *t) { return t->ne[1] * t->ne[2]; }

static uint32_t threads_for(const spec *t)
{
    uint64_t by_size = t->ne[0] * rows_of(t) / (1u << 20), most = ember_cpu_count();
    if (t->ne[0] % 2) return 1;
    if (most > MAX_THREADS) most = MAX_THREADS;
    if (by_size < most) most = by_size ? by_size : 1;
    return most < rows_of(t) ? (uint32_t)most : (uint32_t)rows_of(t);
}

/* The values of t in its type, made into dst (the writer's buffer for it): rows in runs
 * on several threads, the same bytes as one pass. */
static ember_status make_tensor(void *user, void *dst, uint64_t nbytes)
{
    const spec *t = user;
    uint64_t seed = (uint64_t)t->seed ^ test_hash_str(t->name);
    (void)splitmix64(&seed); /* decorrelate seeds that differ in a few bits */
    uint32_t n = threads_for(t);
    rows_job jobs[MAX_THREADS];
    ember_thread tid[MAX_THREADS];
    bool started[MAX_THREADS] = {false};
    for (uint32_t i = 0; i < n; i++) {
        jobs[i] = (rows_job){t, dst, seed, rows_of(t) * i / n, rows_of(t) * (i + 1) / n, false};
        started[i] = i > 0 && ember_thread_start(&tid[i], make_rows, &jobs[i]);
    }
    make_rows(&jobs[0]);
    bool failed = jobs[0].failed;
    for (uint32_t i = 1; i < n; i++) {
        if (started[i]) ember_thread_join(&tid[i]);
        else make_rows(&jobs[i]); /* no thread: made here */
        failed |= jobs[i].failed;
    }
    t->of->written += (double)nbytes;
    cli_progress("writing", t->of->written / t->of->bytes, t->name);
    return failed ? EMBER_ERR_OUT_OF_MEMORY : EMBER_OK;
}

/* A matrix with rows of fan_in values: uniform(-a, a) with a = sqrt(3 / fan_in) gives
 * outputs of unit variance for inputs of unit variance, so activations neither blow up
 * nor fade through the layers and attention is neither flat nor one-hot. */
static ember_status add_matrix(plan *p, const tm_args *a, const char *name, uint64_t fan_in, uint64_t rows)
{
    return add_weight(p, a, name, true, 2, fan_in, rows, 0.0f, sqrtf(3.0f / (float)fan_in));
}

/* A layer's vectors: biases uniform(-0.5, 0.5), not zeros, so a bias that is missing,
 * misplaced or added after RoPE instead of before changes the result; norm weights
 * 1 +- 0.1, not all ones, so a missing or misplaced norm shows. */
static ember_status add_vector(plan *p, const tm_args *a, const char *name, uint64_t n, bool bias)
{
    return add_weight(p, a, name, false, 1, n, 1, bias ? 0.0f : 1.0f, bias ? 0.5f : 0.1f);
}

/* The hyper-parameters the family's tensor table (arch.c) is sized by. */
static ember_hparams hparams_of(const tm_args *a)
{
    return (ember_hparams){.dim = (uint32_t)a->dim, .n_layers = (uint32_t)a->layers, .n_heads = (uint32_t)a->heads,
                           .n_kv_heads = (uint32_t)a->kv_heads, .head_dim = (uint32_t)tm_head_dim(a),
                           .ffn_dim = (uint32_t)a->ffn, .n_expert = (uint32_t)a->experts,
                           .n_expert_used = (uint32_t)a->experts_used, .expert_ffn = (uint32_t)tm_expert_ffn(a)};
}

/* Layer l's tensors as the family's table lists them, each one it may have. */
static ember_status add_layer(plan *p, const tm_args *a, long l)
{
    ember_hparams hp = hparams_of(a);
    ember_tensor_spec specs[EMBER_MAX_LAYER_TENSORS];
    uint32_t n = ember_arch_layer_tensors(a->arch, &hp, (a->arch->flags & EMBER_ARCH_FUSED_QKV) != 0, specs);
    ember_status st = EMBER_OK;
    for (uint32_t i = 0; i < n && !st; i++) {
        const ember_tensor_spec *t = &specs[i];
        char name[64];
        snprintf(name, sizeof name, "blk.%ld.%.24s.%s", l, t->part, t->bias ? "bias" : "weight");
        /* Optional biases are written only where the family requires them (qwen2). */
        if (t->bias && !t->required) continue;
        if (t->ne2 > 1)
            st = add_weight3(p, a, name, true, 3, (uint64_t[3]){t->ne0, t->ne1, t->ne2}, 0.0f,
                             sqrtf(3.0f / (float)t->ne0));
        else if (t->vector && t->ne1 > 1) /* a bias row per expert */
            st = add_weight(p, a, name, false, 2, t->ne0, t->ne1, 0.0f, 0.5f);
        else if (strcmp(t->part, "attn_sinks") == 0) /* a logit per head, unlike each other */
            st = add_weight(p, a, name, false, 1, t->ne0, 1, 1.0f, 1.0f);
        else
            st = t->vector ? add_vector(p, a, name, t->ne0, t->bias) : add_matrix(p, a, name, t->ne0, t->ne1);
    }
    return st;
}

static ember_status plan_tensors(plan *p, const tm_args *a)
{
    ember_status st;
    uint64_t dim = (uint64_t)a->dim, n_vocab = (uint64_t)a->vocab;
    /* embeddings ~ uniform(-1, 1): rows are looked up, not multiplied, and RMSNorm
     * rescales them before any matrix sees them */
    if ((st = add_weight(p, a, "token_embd.weight", true, 2, dim, n_vocab, 0.0f, 1.0f)))
        return st;
    for (long l = 0; l < a->layers; l++)
        if ((st = add_layer(p, a, l)))
            return st;
    if ((st = add_vector(p, a, "output_norm.weight", dim, false)))
        return st;
    bool tied = a->tied || (a->arch->flags & EMBER_ARCH_TIED);
    if (!tied && (st = add_matrix(p, a, "output.weight", dim, n_vocab)))
        return st;
    return EMBER_OK;
}

/* The matrices' types: --type's, or its fallback where rows are not whole blocks; with a
 * preset, what llama-quantize chooses for each (tools/quant_rules.c), as if quantizing
 * the same model from F32. */
static ember_status choose_types(plan *p, const tm_args *a)
{
    if (!a->preset) {
        for (size_t i = 0; i < p->n; i++)
            if (p->s[i].matrix) p->s[i].type = ember_dtype_for_rows(a->type, p->s[i].ne[0]);
        return EMBER_OK;
    }
    ember_gguf_tensor *t = calloc(p->n, sizeof *t);
    if (!t) return EMBER_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < p->n; i++)
        t[i] = (ember_gguf_tensor){.name = p->s[i].name, .n_dims = p->s[i].n_dims,
                                   .ne = {p->s[i].ne[0], p->s[i].ne[1], p->s[i].ne[2], 1}, .type = EMBER_DTYPE_F32};
    ember_llama m = {.arch = a->arch->id};
    m.hp.n_layers = (uint32_t)a->layers, m.hp.n_heads = (uint32_t)a->heads, m.hp.n_kv_heads = (uint32_t)a->kv_heads;
    m.hp.n_expert = (uint32_t)a->experts;
    quant_job job = {.preset = a->preset, .model = quant_model_of(&m), .tensors = t, .n_tensors = p->n};
    for (size_t i = 0; i < p->n; i++) p->s[i].type = quant_tensor_type(&job, i);
    free(t);
    return EMBER_OK;
}

/* Hands every planned tensor to the writer, to be made when it writes. */
static ember_status add_planned(ember_gguf_writer *w, plan *p)
{
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < p->n && !st; i++) {
        spec *t = &p->s[i];
        uint64_t nbytes = ember_dtype_size(t->type, t->ne[0] * rows_of(t));
        t->of = p;
        p->bytes += (double)nbytes;
        st = ember_gguf_add_tensor_lazy(w, t->name, t->type, t->n_dims, t->ne, nbytes, make_tensor, t);
    }
    return st;
}

/* n RoPE frequency factors rising geometrically from 1 (the fastest-turning pair) to top
 * (the slowest). */
static ember_status add_factors(ember_gguf_writer *w, const char *name, uint64_t n, double top)
{
    float *f = malloc(n * sizeof *f);
    if (!f)
        return EMBER_ERR_OUT_OF_MEMORY;
    for (uint64_t i = 0; i < n; i++)
        f[i] = n > 1 ? (float)pow(top, (double)i / (double)(n - 1)) : 1.0f;
    ember_status st = ember_gguf_add_tensor(w, name, EMBER_DTYPE_F32, 1, &n, f, n * sizeof *f);
    free(f);
    return st;
}

/* rope_freqs.weight: factors 1..8, the range Llama 3.1's converter writes (its factor 8),
 * but spread over every pair so that short contexts see the change. LongRoPE's (phi3):
 * long factors 1..8 and short ones 1..2. */
static ember_status add_rope_factors(ember_gguf_writer *w, const tm_args *a)
{
    uint64_t n = (uint64_t)tm_rope_dim(a) / 2;
    ember_status st = EMBER_OK;
    if (a->rope_freqs) st = add_factors(w, "rope_freqs.weight", n, 8.0);
    if (!st && a->longrope) st = add_factors(w, "rope_factors_long.weight", n, 8.0);
    if (!st && a->longrope) st = add_factors(w, "rope_factors_short.weight", n, 2.0);
    return st;
}

static ember_status add_tensors(ember_gguf_writer *w, const tm_args *a, plan *p)
{
    ember_status st = plan_tensors(p, a);
    if (!st) st = choose_types(p, a);
    if (!st) st = add_planned(w, p);
    if (!st) st = add_rope_factors(w, a);
    return st;
}

/* ---- metadata -------------------------------------------------------------------- */

/* "<arch>.<name>": the families' keys share their suffixes. */
static const char *akey(const tm_args *a, const char *name, char buf[96])
{
    snprintf(buf, 96, "%s.%s", a->arch->name, name);
    return buf;
}

/* llama.cpp's general.file_type: the preset's, or the single type's. */
static uint32_t file_type(const tm_args *a)
{
    return a->preset ? (uint32_t)a->preset->ftype : ember_dtype_find(a->type)->ftype;
}

/* One --key SUFFIX=VALUE, in the type the family reads it as (llama.cpp insists). */
static ember_status add_family_key(ember_gguf_writer *w, const tm_args *a, const char *kv)
{
    const char *eq = strchr(kv, '=');
    const ember_arch_key *k = tm_family_key(a->arch, kv, (size_t)(eq - kv));
    char name[96];
    akey(a, k->suffix, name);
    double v = strtod(eq + 1, NULL);
    if (k->kind == EMBER_KEY_F32) return ember_gguf_add_f32(w, name, (float)v);
    if (k->kind == EMBER_KEY_U32) return ember_gguf_add_u32(w, name, (uint32_t)v);
    return ember_gguf_add_bool(w, name, v != 0);
}

/* The family's required keys the command line did not set, at their defaults. */
static ember_status add_required_keys(ember_gguf_writer *w, const tm_args *a)
{
    char name[96], kv[128];
    ember_status st = EMBER_OK;
    for (const ember_arch_key *k = a->arch->keys; k->suffix && !st; k++) {
        bool given = false;
        for (int i = 0; i < a->n_keys; i++)
            given |= strncmp(a->keys[i], k->suffix, strlen(k->suffix)) == 0 && a->keys[i][strlen(k->suffix)] == '=';
        /* an expert's width is written with the other expert keys (add_hparams) */
        if (!k->required || given || strcmp(k->suffix, "expert_feed_forward_length") == 0) continue;
        snprintf(kv, sizeof kv, "%s=%g", akey(a, k->suffix, name) + strlen(a->arch->name) + 1, k->def);
        st = add_family_key(w, a, kv);
    }
    for (int i = 0; i < a->n_keys && !st; i++) st = add_family_key(w, a, a->keys[i]);
    return st;
}

/* RoPE scaling as llama.cpp's converter writes it: linear (type and factor), YaRN (type,
 * factor and original context), LongRoPE (attn_factor from the context ratio, the
 * original context; the factor tensors are written with the tensors). */
static ember_status add_rope_scaling(ember_gguf_writer *w, const tm_args *a)
{
    char k[96];
    ember_status st = EMBER_OK;
    if (a->rope_scale > 0)
        (void)((st = ember_gguf_add_str(w, akey(a, "rope.scaling.type", k), a->yarn ? "yarn" : "linear")) ||
               (st = ember_gguf_add_f32(w, akey(a, "rope.scaling.factor", k), a->rope_scale)));
    if (!st && a->orig_ctx)
        st = ember_gguf_add_u32(w, akey(a, "rope.scaling.original_context_length", k), (uint32_t)a->orig_ctx);
    if (!st && a->longrope) {
        double scale = (double)a->ctx / (double)(a->orig_ctx ? a->orig_ctx : a->ctx);
        float f = scale > 1 ? (float)sqrt(1 + log(scale) / log((double)(a->orig_ctx ? a->orig_ctx : a->ctx))) : 1.0f;
        st = ember_gguf_add_f32(w, akey(a, "rope.scaling.attn_factor", k), f);
    }
    return st;
}

static ember_status add_hparams(ember_gguf_writer *w, const tm_args *a)
{
    ember_status st;
    char k[96];
    if (a->chat_template && (st = ember_gguf_add_str(w, "tokenizer.chat_template", a->chat_template))) return st;
    (void)((st = ember_gguf_add_str(w, "general.architecture", a->arch->name)) ||
           (st = ember_gguf_add_str(w, "general.name", "ember-test-model")) ||
           (st = ember_gguf_add_u32(w, "general.file_type", file_type(a))) ||
           (st = ember_gguf_add_u32(w, akey(a, "context_length", k), (uint32_t)a->ctx)) ||
           (st = ember_gguf_add_u32(w, akey(a, "embedding_length", k), (uint32_t)a->dim)) ||
           (st = ember_gguf_add_u32(w, akey(a, "block_count", k), (uint32_t)a->layers)) ||
           (st = ember_gguf_add_u32(w, akey(a, "feed_forward_length", k), (uint32_t)a->ffn)) ||
           (st = ember_gguf_add_u32(w, akey(a, "attention.head_count", k), (uint32_t)a->heads)) ||
           (st = ember_gguf_add_u32(w, akey(a, "attention.head_count_kv", k), (uint32_t)a->kv_heads)) ||
           (st = ember_gguf_add_f32(w, akey(a, "rope.freq_base", k), a->rope_base)) ||
           (st = ember_gguf_add_u32(w, akey(a, "rope.dimension_count", k), (uint32_t)tm_rope_dim(a))) ||
           (st = ember_gguf_add_f32(w, akey(a, "attention.layer_norm_rms_epsilon", k), 1e-5f)) ||
           (st = ember_gguf_add_u32(w, akey(a, "vocab_size", k), (uint32_t)a->vocab)));
    if (!st && a->head_dim)
        (void)((st = ember_gguf_add_u32(w, akey(a, "attention.key_length", k), (uint32_t)a->head_dim)) ||
               (st = ember_gguf_add_u32(w, akey(a, "attention.value_length", k), (uint32_t)a->head_dim)));
    if (!st) st = add_rope_scaling(w, a);
    if (!st) st = add_required_keys(w, a);
    if (!st && a->pooling >= 0) st = ember_gguf_add_u32(w, akey(a, "pooling_type", k), (uint32_t)a->pooling);
    if (!st && a->experts)
        (void)((st = ember_gguf_add_u32(w, akey(a, "expert_count", k), (uint32_t)a->experts)) ||
               (st = ember_gguf_add_u32(w, akey(a, "expert_used_count", k), (uint32_t)a->experts_used)));
    /* qwen3moe without --expert-ffn: absent, the loader's default; gpt-oss requires it */
    bool ffn_key = a->expert_ffn || (a->arch->flags & EMBER_ARCH_EXPERT_BIAS);
    if (!st && ffn_key && (a->arch->flags & EMBER_ARCH_MOE))
        st = ember_gguf_add_u32(w, akey(a, "expert_feed_forward_length", k), (uint32_t)tm_expert_ffn(a));
    if (!st && ember_dtype_block(a->type) > 1)
        st = ember_gguf_add_u32(w, "general.quantization_version", 2);
    return st;
}

/* ---- size ------------------------------------------------------------------------ */

/* Bytes of one matrix of rows x fan_in in the single type --type gives it; a preset's
 * mix is taken at its default type, near enough for a refusal. */
static double matrix_bytes(const tm_args *a, double fan_in, double rows)
{
    const ember_dtype_info *t = ember_dtype_find(ember_dtype_for_rows(a->type, (uint64_t)fan_in));
    return fan_in * rows * t->bytes / t->block;
}

/* What write_model holds at its peak: the vocabulary's tables and one tensor being made
 * (its F32 draft and its bytes in the file's type), for tensors are made one at a time
 * as the file is written. Doubles: an absurd shape must not overflow before it is
 * refused. params is the model's weight count, for the message. */
static double peak_bytes(const tm_args *a, double *params)
{
    double dim = (double)a->dim, ffn = (double)a->ffn, vocab = (double)a->vocab, layers = (double)a->layers;
    double q = (double)tm_head_dim(a) * (double)a->heads, kv = (double)tm_head_dim(a) * (double)a->kv_heads;
    double up = a->arch->flags & EMBER_ARCH_FUSED_UP ? 2 * ffn : ffn;
    double rows = up > vocab ? up : vocab;
    if ((a->arch->flags & EMBER_ARCH_FUSED_QKV) && q + 2 * kv > rows) rows = q + 2 * kv;
    *params = layers * (2 * dim * q + 2 * dim * kv + 3 * dim * ffn + 2 * dim) + dim * vocab * (a->tied ? 1 : 2) + dim;
    return dim * rows * 4 + matrix_bytes(a, dim, rows) + vocab * (TEST_VOCAB_PIECE_MAX + 4 + 4 + 2 * 2 * 4);
}

/* Refuses, at once, a model that cannot be built in this machine's memory (rather than
 * allocating until the machine runs out). */
static bool check_size(const tm_args *a)
{
    double params, need = peak_bytes(a, &params), have = (double)ember_memory_bytes();
    if (!have || need <= have) return true;
    char n[32], h[32];
    cli_size(need, n, sizeof n);
    cli_size(have, h, sizeof h);
    fprintf(stderr, "ember make-test-model: this model needs %s of memory to build (%.3g weights as %s), "
                    "and this machine has %s; make --dim, --ffn or --vocab smaller\n",
            n, params, a->preset ? a->preset->name : ember_dtype_name(a->type), h);
    return false;
}

/* What was written, for the user: the path, the shape, the weights' count, type and bytes. */
static void report_model(const tm_args *a, const plan *p)
{
    double params = 0, bytes = 0;
    for (size_t i = 0; i < p->n; i++) {
        params += (double)(p->s[i].ne[0] * rows_of(&p->s[i]));
        bytes += (double)ember_dtype_size(p->s[i].type, p->s[i].ne[0] * rows_of(&p->s[i]));
    }
    char size[32];
    printf("ember make-test-model: wrote %s: %s, %ld layers, dim %ld, %ld/%ld heads, FFN %ld, vocab %ld, context %ld; "
           "%.0f parameters (%.2fM) as %s, %s of tensors (random weights, seed %ld)\n",
           a->out, a->arch->name, a->layers, a->dim, a->heads, a->kv_heads, a->ffn, a->vocab, a->ctx, params,
           params / 1e6, a->preset ? a->preset->name : ember_dtype_name(a->type), cli_size(bytes, size, sizeof size),
           a->seed);
}

static int write_model(const tm_args *a)
{
    test_vocab v;
    ember_gguf_writer *w = NULL;
    ember_err err = {{0}};
    if (!test_vocab_build(&v, (uint32_t)a->vocab)) {
        fprintf(stderr, "ember: make-test-model: out of memory building the vocabulary\n");
        return 1;
    }
    plan p = {0}; /* the writer reads it while it writes: freed after */
    ember_status st = ember_gguf_writer_create(&w, &err);
    if (!st && !(st = add_hparams(w, a)) && !(st = test_vocab_write(w, &v)) && !(st = add_tensors(w, a, &p)))
        st = ember_gguf_write(w, a->out, &err);
    else if (st && !err.msg[0])
        snprintf(err.msg, sizeof err.msg, "%s", ember_status_name(st));
    ember_gguf_writer_free(w);
    test_vocab_free(&v);
    if (st) {
        free(p.s);
        fprintf(stderr, "ember: make-test-model: %s\n", err.msg);
        return 1;
    }
    report_model(a, &p);
    free(p.s);
    return 0;
}

int ember_cmd_make_test_model(int argc, char **argv)
{
    tm_args a;
    int code;
    if (!tm_parse(argc, argv, &a, &code)) {
        free(a.chat_template);
        return code;
    }
    code = check_size(&a) ? write_model(&a) : CLI_FAILED;
    free(a.chat_template);
    return code;
}
