/* make_test_model.c — `ember make-test-model OUT.gguf [options]`: writes a small llama
 * or qwen2 GGUF with seeded random weights and a working SentencePiece-style vocabulary,
 * so the test suite needs no downloaded model. See docs/test-models.md.
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
#include "quant_rules.h"

#define SPACE_MARK "\xe2\x96\x81" /* U+2581 */
#define PIECE_MAX 32
#define VOCAB_MIN (3 + 256 + 5)
#define VOCAB_MAX 1000000
#define MAX_THREADS 16 /* making a tensor */

typedef struct tm_args {
    const char *out;
    long dim, layers, heads, kv_heads, ffn, vocab, ctx, seed;
    float rope_base;
    ember_dtype type;     /* the matrices' type; a preset's default type when preset is set */
    const quant_preset *preset; /* q4_k_m and the like: llama-quantize's per-tensor mix */
    bool tied;
    const char *arch;     /* "llama" or "qwen2": the key prefix; qwen2 adds Q/K/V biases */
    bool rope_freqs;      /* write rope_freqs.weight (Llama 3.1-style frequency factors) */
    float rope_scale;     /* linear RoPE scaling factor; 0 = no scaling keys */
    char *chat_template;  /* --chat-template FILE: tokenizer.chat_template (malloc'd), or NULL */
    long pooling;         /* <arch>.pooling_type to write (0..4), or -1: none */
} tm_args;

/* ---- vocabulary ------------------------------------------------------------------ */

enum { TYPE_NORMAL = 1, TYPE_UNKNOWN = 2, TYPE_CONTROL = 3, TYPE_BYTE = 6 };

typedef struct vocab {
    char (*piece)[PIECE_MAX];
    float *score;
    int32_t *type;
    uint32_t n, cap;
    uint32_t *set;   /* open addressing over pieces: id + 1, 0 = empty */
    uint64_t mask;
} vocab;

/* Common words of simple English stories; each gets "▁word" and the "▁" prefixes that
 * lead to it, so that real text tokenizes into word-sized pieces. */
static const char *const words[] = {
    "the", "and", "a", "to", "was", "he", "she", "it", "they", "of", "in", "said", "his",
    "her", "with", "you", "that", "on", "for", "is", "I", "The", "She", "He", "They", "It",
    "Once", "One", "upon", "time", "there", "little", "girl", "boy", "named", "Lily", "Tom",
    "Ben", "mom", "dad", "friend", "friends", "happy", "sad", "saw", "went", "had", "not",
    "but", "so", "very", "wanted", "want", "go", "play", "played", "park", "ball", "tree",
    "dog", "cat", "bird", "fun", "together", "help", "helped", "looked", "found", "made",
    "make", "were", "their", "then", "when", "what", "would", "could", "can", "all", "at",
    "be", "have", "do", "did", "know", "like", "liked", "loved", "love", "home", "house",
    "big", "red", "blue", "green", "sun", "sky", "water", "food", "toy", "toys", "good",
    "new", "every", "day", "how", "too", "out", "up", "down", "from", "this", "are", "we",
    "me", "my", "your", "our", "one", "two", "three", "run", "ran", "jump", "smiled",
    "laughed", "thank", "share", "sorry", "about", "after", "again", "because", "come",
    "came", "get", "got", "just", "look", "many", "more", "now", "only", "other", "over",
    "some", "than", "them", "think", "through", "under", "way", "where", "who", "will",
    "man", "world", "hello", "quick", "brown", "fox", "jumps", "lazy", "times", "an", "as",
    "if", "or", "by", "no", "yes", "night", "story",
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    while (*s)
        h = (h ^ (uint8_t)*s++) * 0x100000001b3ull;
    return h;
}

static uint32_t *set_slot(vocab *v, const char *s)
{
    for (uint64_t i = hash_str(s) & v->mask;; i = (i + 1) & v->mask) {
        uint32_t e = v->set[i];
        if (e == 0 || strcmp(v->piece[e - 1], s) == 0)
            return &v->set[i];
    }
}

static bool vocab_has(vocab *v, const char *s) { return *set_slot(v, s) != 0; }
static bool vocab_full(const vocab *v) { return v->n == v->cap; }

/* Appends s unless present or the vocabulary is full. Normal pieces are scored by
 * rank (earlier = higher), so shorter pieces merge first, as in a trained BPE. */
static void vocab_add(vocab *v, const char *s, int32_t type)
{
    if (vocab_full(v) || strlen(s) >= PIECE_MAX)
        return;
    uint32_t *slot = set_slot(v, s);
    if (*slot)
        return;
    strcpy(v->piece[v->n], s);
    v->type[v->n] = type;
    v->score[v->n] = type == TYPE_NORMAL ? -(float)v->n : 0.0f;
    *slot = ++v->n;
}

/* Adds left+right only when both halves are pieces: every merged piece stays reachable
 * by one SentencePiece merge of two shorter pieces. */
static void add_merged(vocab *v, const char *left, const char *right)
{
    char s[2 * PIECE_MAX];
    if (!vocab_has(v, left) || !vocab_has(v, right))
        return;
    snprintf(s, sizeof s, "%s%s", left, right);
    vocab_add(v, s, TYPE_NORMAL);
}

static void add_specials_and_bytes(vocab *v)
{
    vocab_add(v, "<unk>", TYPE_UNKNOWN);
    vocab_add(v, "<s>", TYPE_CONTROL);
    vocab_add(v, "</s>", TYPE_CONTROL);
    for (int b = 0; b < 256; b++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", b);
        vocab_add(v, s, TYPE_BYTE);
    }
}

/* The space mark, then printable ASCII in rough English frequency order. */
static void add_chars(vocab *v)
{
    static const char order[] = "etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLCUMWFGYPBVKJXQZ.,'\"!?-";
    vocab_add(v, SPACE_MARK, TYPE_NORMAL);
    char s[2] = {0, 0};
    for (const char *c = order; *c; c++)
        s[0] = *c, vocab_add(v, s, TYPE_NORMAL);
    for (int c = 0x21; c < 0x7f; c++)
        s[0] = (char)c, vocab_add(v, s, TYPE_NORMAL);
}

/* "▁" + the first k characters of each word, shortest pieces first. */
static void add_words(vocab *v)
{
    size_t n_words = sizeof words / sizeof *words;
    for (size_t k = 1; k < PIECE_MAX - 4; k++) {
        for (size_t i = 0; i < n_words; i++) {
            size_t len = strlen(words[i]);
            if (len < k)
                continue;
            char left[PIECE_MAX], right[2] = { words[i][k - 1], 0 };
            snprintf(left, sizeof left, SPACE_MARK "%.*s", (int)(k - 1), words[i]);
            add_merged(v, left, right);
        }
    }
}

/* Fills the rest with every lowercase string of length 1, 2, 3, ... as "▁s" and (from
 * length 2) "s", each the merge of its prefix and its last letter. */
static void add_letter_strings(vocab *v)
{
    for (int len = 1; len <= 8 && !vocab_full(v); len++) {
        char s[16] = {0};
        memset(s, 'a', (size_t)len);
        for (;;) {
            char prefix[PIECE_MAX], last[2] = { s[len - 1], 0 };
            snprintf(prefix, sizeof prefix, SPACE_MARK "%.*s", len - 1, s);
            add_merged(v, prefix, last);
            if (len >= 2) {
                snprintf(prefix, sizeof prefix, "%.*s", len - 1, s);
                add_merged(v, prefix, last);
            }
            if (vocab_full(v))
                return;
            int i = len - 1; /* next string, like an odometer */
            while (i >= 0 && s[i] == 'z')
                s[i--] = 'a';
            if (i < 0)
                break;
            s[i]++;
        }
    }
}

static void vocab_free(vocab *v)
{
    free(v->piece), free(v->score), free(v->type), free(v->set);
}

static bool vocab_build(vocab *v, uint32_t size)
{
    memset(v, 0, sizeof *v);
    uint64_t slots = 16;
    while (slots < 2ull * size)
        slots *= 2;
    v->cap = size;
    v->mask = slots - 1;
    v->piece = calloc(size, sizeof *v->piece);
    v->score = calloc(size, sizeof *v->score);
    v->type = calloc(size, sizeof *v->type);
    v->set = calloc(slots, sizeof *v->set);
    if (!v->piece || !v->score || !v->type || !v->set) {
        vocab_free(v);
        return false;
    }
    add_specials_and_bytes(v);
    add_chars(v);
    add_words(v);
    add_letter_strings(v);
    return vocab_full(v);
}

static ember_status add_vocab(ember_gguf_writer *w, const vocab *v)
{
    const char **ptrs = malloc(v->n * sizeof *ptrs);
    if (!ptrs)
        return EMBER_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < v->n; i++)
        ptrs[i] = v->piece[i];
    ember_status st;
    (void)((st = ember_gguf_add_str(w, "tokenizer.ggml.model", "llama")) ||
           (st = ember_gguf_add_arr_str(w, "tokenizer.ggml.tokens", ptrs, v->n)) ||
           (st = ember_gguf_add_arr_f32(w, "tokenizer.ggml.scores", v->score, v->n)) ||
           (st = ember_gguf_add_arr_i32(w, "tokenizer.ggml.token_type", v->type, v->n)) ||
           (st = ember_gguf_add_u32(w, "tokenizer.ggml.bos_token_id", 1)) ||
           (st = ember_gguf_add_u32(w, "tokenizer.ggml.eos_token_id", 2)) ||
           (st = ember_gguf_add_u32(w, "tokenizer.ggml.unknown_token_id", 0)) ||
           (st = ember_gguf_add_bool(w, "tokenizer.ggml.add_bos_token", true)) ||
           (st = ember_gguf_add_bool(w, "tokenizer.ggml.add_eos_token", false)));
    free(ptrs);
    return st;
}

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
typedef struct spec {
    char name[64];
    uint32_t n_dims;
    uint64_t ne[2];
    float center, half;   /* values center + uniform(-half, half), seeded by the name */
    ember_dtype type;     /* F32 for norms and biases; the matrices' type, then as chosen */
    bool matrix;
    long seed;
} spec;

typedef struct plan {
    spec *s;
    size_t n, cap;
} plan;

static ember_status add_weight(plan *p, const tm_args *a, const char *name, bool matrix, uint32_t n_dims,
                               uint64_t ne0, uint64_t ne1, float center, float half)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        spec *s = realloc(p->s, cap * sizeof *s);
        if (!s) return EMBER_ERR_OUT_OF_MEMORY;
        p->s = s, p->cap = cap;
    }
    spec *t = &p->s[p->n++];
    *t = (spec){.n_dims = n_dims, .ne = {ne0, ne1}, .center = center, .half = half,
                .type = matrix ? a->type : EMBER_DTYPE_F32, .matrix = matrix, .seed = a->seed};
    snprintf(t->name, sizeof t->name, "%s", name);
    return EMBER_OK;
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
static uint32_t threads_for(const spec *t)
{
    uint64_t by_size = t->ne[0] * t->ne[1] / (1u << 20), most = ember_cpu_count();
    if (t->ne[0] % 2) return 1;
    if (most > MAX_THREADS) most = MAX_THREADS;
    if (by_size < most) most = by_size ? by_size : 1;
    return most < t->ne[1] ? (uint32_t)most : (uint32_t)t->ne[1];
}

/* The values of t in its type, made into dst (the writer's buffer for it): rows in runs
 * on several threads, the same bytes as one pass. */
static ember_status make_tensor(void *user, void *dst, uint64_t nbytes)
{
    const spec *t = user;
    uint64_t seed = (uint64_t)t->seed ^ hash_str(t->name);
    (void)splitmix64(&seed); /* decorrelate seeds that differ in a few bits */
    uint32_t n = threads_for(t);
    rows_job jobs[MAX_THREADS];
    ember_thread tid[MAX_THREADS];
    bool started[MAX_THREADS] = {false};
    for (uint32_t i = 0; i < n; i++) {
        jobs[i] = (rows_job){t, dst, seed, t->ne[1] * i / n, t->ne[1] * (i + 1) / n, false};
        started[i] = i > 0 && ember_thread_start(&tid[i], make_rows, &jobs[i]);
    }
    make_rows(&jobs[0]);
    bool failed = jobs[0].failed;
    for (uint32_t i = 1; i < n; i++) {
        if (started[i]) ember_thread_join(&tid[i]);
        else make_rows(&jobs[i]); /* no thread: made here */
        failed |= jobs[i].failed;
    }
    (void)nbytes;
    return failed ? EMBER_ERR_OUT_OF_MEMORY : EMBER_OK;
}

/* A matrix with rows of fan_in values: uniform(-a, a) with a = sqrt(3 / fan_in) gives
 * outputs of unit variance for inputs of unit variance, so activations neither blow up
 * nor fade through the layers and attention is neither flat nor one-hot. */
static ember_status add_matrix(plan *p, const tm_args *a, const char *name, uint64_t fan_in, uint64_t rows)
{
    return add_weight(p, a, name, true, 2, fan_in, rows, 0.0f, sqrtf(3.0f / (float)fan_in));
}

/* Norm weights 1 +- 0.1: not all ones, so a missing or misplaced norm shows. */
static ember_status add_norm(plan *p, const tm_args *a, const char *name)
{
    return add_weight(p, a, name, false, 1, (uint64_t)a->dim, 1, 1.0f, 0.1f);
}

/* qwen2's Q/K/V biases, F32 uniform(-0.5, 0.5): not zeros, so a bias that is missing,
 * misplaced or added after RoPE instead of before changes the result. */
static ember_status add_biases(plan *p, const tm_args *a, long l, uint64_t q, uint64_t kv)
{
    static const char *const parts[3] = { "attn_q", "attn_k", "attn_v" };
    const uint64_t rows[3] = { q, kv, kv };
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%ld.%s.bias", l, parts[i]);
        ember_status st = add_weight(p, a, name, false, 1, rows[i], 1, 0.0f, 0.5f);
        if (st)
            return st;
    }
    return EMBER_OK;
}

static ember_status add_layer(plan *p, const tm_args *a, long l)
{
    uint64_t dim = (uint64_t)a->dim, ffn = (uint64_t)a->ffn;
    uint64_t kv = dim / (uint64_t)a->heads * (uint64_t)a->kv_heads;
    char n[9][64];
    static const char *const parts[9] = { "attn_norm", "attn_q", "attn_k", "attn_v",
        "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down" };
    for (int i = 0; i < 9; i++)
        snprintf(n[i], sizeof n[i], "blk.%ld.%s.weight", l, parts[i]);
    ember_status st;
    (void)((st = add_norm(p, a, n[0])) || (st = add_matrix(p, a, n[1], dim, dim)) ||
           (st = add_matrix(p, a, n[2], dim, kv)) || (st = add_matrix(p, a, n[3], dim, kv)) ||
           (st = add_matrix(p, a, n[4], dim, dim)) || (st = add_norm(p, a, n[5])) ||
           (st = add_matrix(p, a, n[6], dim, ffn)) || (st = add_matrix(p, a, n[7], dim, ffn)) ||
           (st = add_matrix(p, a, n[8], ffn, dim)));
    if (!st && strcmp(a->arch, "qwen2") == 0)
        st = add_biases(p, a, l, dim, kv);
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
    if ((st = add_norm(p, a, "output_norm.weight")))
        return st;
    if (!a->tied && (st = add_matrix(p, a, "output.weight", dim, n_vocab)))
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
                                   .ne = {p->s[i].ne[0], p->s[i].ne[1], 1, 1}, .type = EMBER_DTYPE_F32};
    ember_llama m = {.arch = strcmp(a->arch, "qwen2") == 0 ? EMBER_ARCH_QWEN2 : EMBER_ARCH_LLAMA};
    m.hp.n_layers = (uint32_t)a->layers, m.hp.n_heads = (uint32_t)a->heads, m.hp.n_kv_heads = (uint32_t)a->kv_heads;
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
        uint64_t nbytes = ember_dtype_size(t->type, t->ne[0] * t->ne[1]);
        st = ember_gguf_add_tensor_lazy(w, t->name, t->type, t->n_dims, t->ne, nbytes, make_tensor, t);
    }
    return st;
}

/* rope_freqs.weight: one divisor per rotation pair, rising geometrically from 1 (the
 * fastest-turning pair) to 8 (the slowest), the range Llama 3.1's converter writes
 * (its factor 8), but spread over every pair so that short contexts see the change. */
static ember_status add_rope_freqs(ember_gguf_writer *w, const tm_args *a)
{
    uint64_t n = (uint64_t)(a->dim / a->heads) / 2;
    float *f = malloc(n * sizeof *f);
    if (!f)
        return EMBER_ERR_OUT_OF_MEMORY;
    for (uint64_t i = 0; i < n; i++)
        f[i] = n > 1 ? (float)pow(8.0, (double)i / (double)(n - 1)) : 1.0f;
    ember_status st = ember_gguf_add_tensor(w, "rope_freqs.weight", EMBER_DTYPE_F32, 1, &n, f,
                                            n * sizeof *f);
    free(f);
    return st;
}

static ember_status add_tensors(ember_gguf_writer *w, const tm_args *a, plan *p)
{
    ember_status st = plan_tensors(p, a);
    if (!st) st = choose_types(p, a);
    if (!st) st = add_planned(w, p);
    if (!st && a->rope_freqs) st = add_rope_freqs(w, a);
    return st;
}

/* ---- metadata -------------------------------------------------------------------- */

/* "<arch>.<name>": llama and qwen2 keys share their suffixes. */
static const char *akey(const tm_args *a, const char *name, char buf[96])
{
    snprintf(buf, 96, "%s.%s", a->arch, name);
    return buf;
}

/* llama.cpp's general.file_type: the preset's, or the single type's. */
static uint32_t file_type(const tm_args *a)
{
    return a->preset ? (uint32_t)a->preset->ftype : ember_dtype_find(a->type)->ftype;
}

static ember_status add_hparams(ember_gguf_writer *w, const tm_args *a)
{
    ember_status st;
    char k[96];
    if (a->chat_template && (st = ember_gguf_add_str(w, "tokenizer.chat_template", a->chat_template))) return st;
    (void)((st = ember_gguf_add_str(w, "general.architecture", a->arch)) ||
           (st = ember_gguf_add_str(w, "general.name", "ember-test-model")) ||
           (st = ember_gguf_add_u32(w, "general.file_type", file_type(a))) ||
           (st = ember_gguf_add_u32(w, akey(a, "context_length", k), (uint32_t)a->ctx)) ||
           (st = ember_gguf_add_u32(w, akey(a, "embedding_length", k), (uint32_t)a->dim)) ||
           (st = ember_gguf_add_u32(w, akey(a, "block_count", k), (uint32_t)a->layers)) ||
           (st = ember_gguf_add_u32(w, akey(a, "feed_forward_length", k), (uint32_t)a->ffn)) ||
           (st = ember_gguf_add_u32(w, akey(a, "attention.head_count", k), (uint32_t)a->heads)) ||
           (st = ember_gguf_add_u32(w, akey(a, "attention.head_count_kv", k), (uint32_t)a->kv_heads)) ||
           (st = ember_gguf_add_f32(w, akey(a, "rope.freq_base", k), a->rope_base)) ||
           (st = ember_gguf_add_u32(w, akey(a, "rope.dimension_count", k), (uint32_t)(a->dim / a->heads))) ||
           (st = ember_gguf_add_f32(w, akey(a, "attention.layer_norm_rms_epsilon", k), 1e-5f)) ||
           (st = ember_gguf_add_u32(w, akey(a, "vocab_size", k), (uint32_t)a->vocab)));
    if (!st && a->rope_scale > 0) /* as llama.cpp's converter writes linear scaling */
        (void)((st = ember_gguf_add_str(w, akey(a, "rope.scaling.type", k), "linear")) ||
               (st = ember_gguf_add_f32(w, akey(a, "rope.scaling.factor", k), a->rope_scale)));
    if (!st && a->pooling >= 0) st = ember_gguf_add_u32(w, akey(a, "pooling_type", k), (uint32_t)a->pooling);
    if (!st && ember_dtype_block(a->type) > 1)
        st = ember_gguf_add_u32(w, "general.quantization_version", 2);
    return st;
}

/* ---- command line ---------------------------------------------------------------- */

static int usage(FILE *out, int code)
{
    fprintf(out,
        "usage: ember make-test-model OUT.gguf [options]\n"
        "  --dim N        embedding length (64)\n"
        "  --layers N     transformer blocks (2)\n"
        "  --heads N      attention heads; must divide --dim, head size even (4)\n"
        "  --kv-heads N   key/value heads; must divide --heads (2)\n"
        "  --ffn N        feed-forward length (128)\n"
        "  --vocab N      vocabulary size, %d..%d (512)\n"
        "  --ctx N        context length (256)\n"
        "  --type T       the matrices' type, any that ember quantize writes (f32); norms stay\n"
        "                 f32; rows that are not whole blocks get llama.cpp's fallback; a\n"
        "                 preset (q4_k_m, ...) gives llama-quantize's per-tensor mix\n"
        "  --seed N       random seed (1)\n"
        "  --rope-base F  RoPE frequency base (10000)\n"
        "  --tied         no output.weight: the LM head reuses token_embd\n"
        "  --arch A       llama or qwen2 (llama); qwen2 adds Q/K/V biases, NeoX RoPE\n"
        "  --rope-freqs   write rope_freqs.weight (Llama 3.1-style factors 1..8)\n"
        "  --rope-scale F linear RoPE scaling factor (none)\n"
        "  --chat-template FILE  its tokenizer.chat_template (Jinja), for chat tests (none)\n"
        "  --pooling N    <arch>.pooling_type for embeddings: 0 none, 1 mean, 2 cls, 3 last,\n"
        "                 4 rank (none written)\n"
        "Tensors are made one at a time as the file is written, so a model larger than\n"
        "memory can be made (an 8B shape: --dim 4096 --layers 32 --heads 32 --kv-heads 8\n"
        "--ffn 14336 --vocab 128256 --type q4_k_m).\n",
        VOCAB_MIN, VOCAB_MAX);
    return code;
}

/* A single type (every matrix in it, as --pure) or a preset's mix (q4_k_m, ...). */
static bool parse_type(const char *s, tm_args *a)
{
    const ember_dtype_info *t = ember_dtype_writable(s);
    const quant_preset *p = t ? NULL : quant_preset_find(s);
    char names[512];
    if (t) a->type = t->type, a->preset = NULL;
    else if (p) a->type = p->type, a->preset = p;
    else fprintf(stderr, "ember: --type is one of %s, got '%s'\n", quant_preset_names(names, sizeof names), s);
    return t || p;
}

static bool parse_arch(const char *s, const char **out)
{
    if (strcmp(s, "llama") != 0 && strcmp(s, "qwen2") != 0) {
        fprintf(stderr, "ember: --arch is llama or qwen2, got '%s'\n", s);
        return false;
    }
    *out = strcmp(s, "llama") == 0 ? "llama" : "qwen2";
    return true;
}

/* Returns 1 when argv[*i] was a known flag and parsed, 0 when unknown, -1 on error. */
static int parse_flag(int argc, char **argv, int *i, tm_args *a)
{
    static const struct { const char *flag; size_t off; long lo, hi; } ints[] = {
        { "--dim", offsetof(tm_args, dim), 2, 1 << 20 },
        { "--layers", offsetof(tm_args, layers), 1, 4096 },
        { "--heads", offsetof(tm_args, heads), 1, 1 << 16 },
        { "--kv-heads", offsetof(tm_args, kv_heads), 1, 1 << 16 },
        { "--ffn", offsetof(tm_args, ffn), 1, 1 << 22 },
        { "--vocab", offsetof(tm_args, vocab), VOCAB_MIN, VOCAB_MAX },
        { "--ctx", offsetof(tm_args, ctx), 1, 1 << 24 },
        { "--seed", offsetof(tm_args, seed), 0, 0x7fffffffL },
        { "--pooling", offsetof(tm_args, pooling), 0, 4 },
    };
    const char *f = argv[*i], *v;
    if (strcmp(f, "--tied") == 0) {
        a->tied = true;
        return 1;
    }
    for (size_t k = 0; k < sizeof ints / sizeof *ints; k++) {
        if (strcmp(f, ints[k].flag) != 0)
            continue;
        if (!(v = cli_value(argc, argv, i)))
            return -1;
        return cli_int(f, v, ints[k].lo, ints[k].hi, (long *)((char *)a + ints[k].off)) ? 1 : -1;
    }
    if (strcmp(f, "--type") == 0)
        return (v = cli_value(argc, argv, i)) && parse_type(v, a) ? 1 : -1;
    if (strcmp(f, "--rope-freqs") == 0) {
        a->rope_freqs = true;
        return 1;
    }
    if (strcmp(f, "--arch") == 0)
        return (v = cli_value(argc, argv, i)) && parse_arch(v, &a->arch) ? 1 : -1;
    if (strcmp(f, "--chat-template") == 0) {
        free(a->chat_template);
        return (v = cli_value(argc, argv, i)) && (a->chat_template = cli_read_file("make-test-model", v)) ? 1 : -1;
    }
    if (strcmp(f, "--rope-scale") == 0) {
        if (!(v = cli_value(argc, argv, i)) || !cli_float(f, v, &a->rope_scale))
            return -1;
        if (!(a->rope_scale > 0.0f) || !isfinite(a->rope_scale)) {
            fprintf(stderr, "ember: --rope-scale must be a finite number above 0\n");
            return -1;
        }
        return 1;
    }
    if (strcmp(f, "--rope-base") == 0) {
        if (!(v = cli_value(argc, argv, i)) || !cli_float(f, v, &a->rope_base))
            return -1;
        if (!(a->rope_base > 1.0f) || !isfinite(a->rope_base)) {
            fprintf(stderr, "ember: --rope-base must be a finite number above 1\n");
            return -1;
        }
        return 1;
    }
    return 0;
}

static bool check_shape(const tm_args *a)
{
    if (a->dim % a->heads) {
        fprintf(stderr, "ember: --heads %ld does not divide --dim %ld\n", a->heads, a->dim);
        return false;
    }
    if (a->heads % a->kv_heads) {
        fprintf(stderr, "ember: --kv-heads %ld does not divide --heads %ld\n", a->kv_heads, a->heads);
        return false;
    }
    if ((a->dim / a->heads) % 2) {
        fprintf(stderr, "ember: head size --dim/--heads = %ld must be even (RoPE rotates pairs)\n",
                a->dim / a->heads);
        return false;
    }
    return true;
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
    double kv = dim / (double)a->heads * (double)a->kv_heads;
    double rows = ffn > vocab ? ffn : vocab;
    *params = layers * (2 * dim * dim + 2 * dim * kv + 3 * dim * ffn + 2 * dim) + dim * vocab * (a->tied ? 1 : 2) + dim;
    return dim * rows * 4 + matrix_bytes(a, dim, rows) + vocab * (PIECE_MAX + 4 + 4 + 2 * 2 * 4);
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

static int write_model(const tm_args *a)
{
    vocab v;
    ember_gguf_writer *w = NULL;
    ember_err err = {{0}};
    if (!vocab_build(&v, (uint32_t)a->vocab)) {
        fprintf(stderr, "ember: make-test-model: out of memory building the vocabulary\n");
        return 1;
    }
    plan p = {0}; /* the writer reads it while it writes: freed after */
    ember_status st = ember_gguf_writer_create(&w, &err);
    if (!st && !(st = add_hparams(w, a)) && !(st = add_vocab(w, &v)) && !(st = add_tensors(w, a, &p)))
        st = ember_gguf_write(w, a->out, &err);
    else if (st && !err.msg[0])
        snprintf(err.msg, sizeof err.msg, "%s", ember_status_name(st));
    ember_gguf_writer_free(w);
    free(p.s);
    vocab_free(&v);
    if (st) {
        fprintf(stderr, "ember: make-test-model: %s\n", err.msg);
        return 1;
    }
    return 0;
}

int ember_cmd_make_test_model(int argc, char **argv)
{
    tm_args a = { NULL, 64, 2, 4, 2, 128, 512, 256, 1, 10000.0f, EMBER_DTYPE_F32, NULL, false,
                  "llama", false, 0.0f, NULL, -1 };
    for (int i = 1; i < argc; i++)
        if (cli_is_help(argv[i]))
            return usage(stdout, CLI_OK);
    for (int i = 1; i < argc; i++) {
        int r = argv[i][0] == '-' ? parse_flag(argc, argv, &i, &a) : 0;
        if (r < 0)
            return usage(stderr, CLI_USAGE);
        if (r == 0 && (argv[i][0] == '-' || a.out)) {
            cli_unknown("make-test-model", argv[i]);
            return usage(stderr, CLI_USAGE);
        }
        if (r == 0)
            a.out = argv[i];
    }
    if (!a.out) {
        fprintf(stderr, "ember make-test-model: no output file given\n");
        return usage(stderr, CLI_USAGE);
    }
    if (!check_shape(&a))
        return CLI_USAGE;
    if (!check_size(&a))
        return CLI_FAILED;
    int code = write_model(&a);
    free(a.chat_template);
    return code;
}
