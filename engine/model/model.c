/* model.c — the `llama` and `qwen2` architectures read from an opened GGUF file:
 * hyper-parameters from the <arch>.* keys, then every tensor looked up and its shape
 * checked against them, so that the forward passes can trust every size without
 * checking again. The two differ only in Q/K/V biases (required for qwen2) and in the
 * RoPE pairing (NeoX for qwen2); see docs/models.md. */
#include "common/alloc.h"
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

/* ---- hyper-parameters ----------------------------------------------------------- */

/* "<arch>.<name>": the keys of every architecture share their suffixes. Returned by
 * value, so K(a, "block_count").s lives until the end of the enclosing expression. */
typedef struct keyname { char s[96]; } keyname;

static keyname K(const char *arch, const char *name)
{
    keyname k;
    snprintf(k.s, sizeof k.s, "%s.%s", arch, name);
    return k;
}

/* A string from the file, made printable and at most 64 bytes for a message. */
static void printable(ember_gguf_str s, char out[72])
{
    size_t n = s.len < 64 ? (size_t)s.len : 64;
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)s.ptr[i] < 0x20 ? '?' : s.ptr[i];
    out[n] = 0;
}

static ember_status check_arch(const ember_gguf *g, ember_arch *out, ember_err *err)
{
    ember_gguf_str arch;
    ember_status st = ember_gguf_get_str(g, "general.architecture", &arch, err);
    if (st) return st;
    *out = EMBER_ARCH_LLAMA;
    if (ember_gguf_str_eq(arch, "llama")) return EMBER_OK;
    *out = EMBER_ARCH_QWEN2;
    if (ember_gguf_str_eq(arch, "qwen2")) return EMBER_OK;
    char name[72];
    printable(arch, name);
    return ember_fail(err, EMBER_ERR_UNSUPPORTED, "%s: unsupported architecture '%s' (Ember runs "
                      "'llama' and 'qwen2')", g->path, name);
}

static ember_status read_keys(const ember_gguf *g, const char *a, ember_hparams *hp, ember_err *err)
{
    ember_status st;
    if ((st = ember_gguf_get_u32(g, K(a, "embedding_length").s, &hp->dim, err)) ||
        (st = ember_gguf_get_u32(g, K(a, "block_count").s, &hp->n_layers, err)) ||
        (st = ember_gguf_get_u32(g, K(a, "feed_forward_length").s, &hp->ffn_dim, err)) ||
        (st = ember_gguf_get_u32(g, K(a, "attention.head_count").s, &hp->n_heads, err)) ||
        (st = ember_gguf_get_u32(g, K(a, "context_length").s, &hp->ctx_len, err)))
        return st;
    hp->n_kv_heads = hp->n_heads;
    hp->rope_base = 10000.0f;
    hp->rms_eps = 1e-5f;
    if ((st = ember_gguf_opt_u32(g, K(a, "attention.head_count_kv").s, &hp->n_kv_heads, err)) ||
        (st = ember_gguf_opt_f32(g, K(a, "rope.freq_base").s, &hp->rope_base, err)) ||
        (st = ember_gguf_opt_f32(g, K(a, "attention.layer_norm_rms_epsilon").s, &hp->rms_eps, err)))
        return st;
    return EMBER_OK;
}

/* <arch>.rope.scaling.*, as llama.cpp reads them: a factor without a type is linear;
 * the older key rope.scale_linear stands in for a missing factor; factor 0 means none.
 * Only linear scaling is implemented: YaRN and LongRoPE change more than positions
 * (per-dimension ramps, attention temperature), so they are refused, not approximated. */
static ember_status read_rope_scaling(const ember_gguf *g, const char *a, ember_hparams *hp,
                                      ember_err *err)
{
    float factor = 0.0f;
    bool linear = true;
    ember_status st;
    if (ember_gguf_find(g, K(a, "rope.scaling.type").s)) {
        ember_gguf_str type;
        if ((st = ember_gguf_get_str(g, K(a, "rope.scaling.type").s, &type, err))) return st;
        linear = ember_gguf_str_eq(type, "linear");
        if (!linear && !ember_gguf_str_eq(type, "none")) {
            char name[72];
            printable(type, name);
            return ember_fail(err, EMBER_ERR_UNSUPPORTED,
                              "%s: %s.rope.scaling.type '%s' is not supported (Ember implements "
                              "'none' and 'linear'; YaRN and LongRoPE scaling are not "
                              "implemented)", g->path, a, name);
        }
    }
    if ((st = ember_gguf_opt_f32(g, K(a, "rope.scale_linear").s, &factor, err)) ||
        (st = ember_gguf_opt_f32(g, K(a, "rope.scaling.factor").s, &factor, err)) ||
        (st = ember_gguf_opt_u32(g, K(a, "rope.scaling.original_context_length").s,
                                 &hp->rope_orig_ctx, err)))
        return st;
    if (!(factor >= 0) || !isfinite(factor))
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: %s.rope.scaling.factor %g must be positive",
                          g->path, a, factor);
    hp->rope_scale = linear && factor > 0 ? factor : 1.0f;
    return EMBER_OK;
}

static ember_status bad(const ember_gguf *g, ember_err *err, const char *a, const char *key, ull v)
{
    return ember_fail(err, EMBER_ERR_FORMAT, "%s: %s.%s must not be 0 (%llu)", g->path, a, key, v);
}

/* The relations the forward pass relies on; head_dim and rope_dim are derived here. */
static ember_status check_hparams(const ember_gguf *g, const char *a, ember_hparams *hp,
                                  ember_err *err)
{
    if (!hp->dim) return bad(g, err, a, "embedding_length", hp->dim);
    if (!hp->n_layers) return bad(g, err, a, "block_count", hp->n_layers);
    if (!hp->ffn_dim) return bad(g, err, a, "feed_forward_length", hp->ffn_dim);
    if (!hp->ctx_len) return bad(g, err, a, "context_length", hp->ctx_len);
    if (!hp->n_heads || hp->dim % hp->n_heads)
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "%s: %s.attention.head_count %u does not divide "
                          "%s.embedding_length %u", g->path, a, hp->n_heads, a, hp->dim);
    if (!hp->n_kv_heads || hp->n_heads % hp->n_kv_heads)
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "%s: %s.attention.head_count_kv %u does not divide "
                          "%s.attention.head_count %u", g->path, a, hp->n_kv_heads, a, hp->n_heads);
    hp->head_dim = hp->dim / hp->n_heads;
    hp->rope_dim = hp->head_dim;
    ember_status st = ember_gguf_opt_u32(g, K(a, "rope.dimension_count").s, &hp->rope_dim, err);
    if (st) return st;
    if (!hp->rope_dim || hp->rope_dim % 2 || hp->rope_dim > hp->head_dim)
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "%s: %s.rope.dimension_count %u must be even, non-zero and at "
                          "most head_dim %u", g->path, a, hp->rope_dim, hp->head_dim);
    if (!(hp->rope_base > 0) || !isfinite(hp->rope_base))
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: %s.rope.freq_base %g must be positive",
                          g->path, a, hp->rope_base);
    if (!(hp->rms_eps > 0) || !isfinite(hp->rms_eps))
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "%s: %s.attention.layer_norm_rms_epsilon %g must be positive",
                          g->path, a, hp->rms_eps);
    /* Each layer has at least nine tensors: a huge block_count in a small file is
     * refused before the layer table is allocated. */
    if (hp->n_layers > g->n_tensors / 9)
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "%s: %s.block_count %u needs %llu tensors, the file has %llu",
                          g->path, a, hp->n_layers, 9ull * hp->n_layers, (ull)g->n_tensors);
    return EMBER_OK;
}

/* <arch>.vocab_size, else the tokenizer's token list, else the embedding's rows. */
static ember_status read_vocab(const ember_gguf *g, const char *a, const ember_gguf_tensor *embd,
                               ember_hparams *hp, ember_err *err)
{
    const ember_gguf_kv *tokens = ember_gguf_find(g, "tokenizer.ggml.tokens");
    uint64_t n = embd->ne[1];
    if (tokens && (tokens->type != EMBER_GGUF_ARRAY || tokens->arr_type != EMBER_GGUF_STRING))
        tokens = NULL; /* not a token list: the tokenizer will say so */
    if (ember_gguf_find(g, K(a, "vocab_size").s)) {
        ember_status st = ember_gguf_get_u32(g, K(a, "vocab_size").s, &hp->n_vocab, err);
        if (st) return st;
        n = hp->n_vocab;
    } else if (tokens) {
        n = tokens->arr_n;
    }
    if (n == 0 || n > UINT32_MAX)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: the vocabulary size must be in "
                          "1..2^32-1 (%llu)", g->path, (ull)n);
    hp->n_vocab = (uint32_t)n;
    /* A token id without an embedding row would read past the weights. */
    if (tokens && tokens->arr_n > n)
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "%s: tokenizer.ggml.tokens has %llu tokens, more than the "
                          "vocabulary size %u", g->path, (ull)tokens->arr_n, hp->n_vocab);
    return EMBER_OK;
}

/* ---- tensors -------------------------------------------------------------------- */

/* "[64, 32]": the dimensions up to the last one that is not 1. */
static void shape_str(const uint64_t *ne, char *buf, size_t cap)
{
    int n = 4, len;
    while (n > 1 && ne[n - 1] == 1) n--;
    len = snprintf(buf, cap, "[%llu", (ull)ne[0]);
    for (int i = 1; i < n && len > 0 && (size_t)len < cap; i++)
        len += snprintf(buf + len, cap - (size_t)len, ", %llu", (ull)ne[i]);
    if (len > 0 && (size_t)len < cap) snprintf(buf + len, cap - (size_t)len, "]");
}

/* Looks a tensor up and checks its shape is {ne0, ne1} (ne1 = 1 for a vector; extra
 * dimensions of 1 are allowed). Vectors the forward passes read as plain floats (norms,
 * biases, RoPE factors) must be F32: f32_what names them for the message, NULL for a
 * matrix. A block-quantized matrix must have whole blocks in each row, because the kernels
 * dequantize row by row. */
static ember_status get_tensor(const ember_gguf *g, const char *name, const char *f32_what,
                               uint64_t ne0, uint64_t ne1, const ember_gguf_tensor **out,
                               ember_err *err)
{
    const ember_gguf_tensor *t = ember_gguf_find_tensor(g, name);
    if (!t) return ember_fail(err, EMBER_ERR_FORMAT, "%s: missing tensor '%s'", g->path, name);
    const uint64_t want[4] = { ne0, ne1, 1, 1 };
    if (memcmp(t->ne, want, sizeof want) != 0) {
        char have_s[96], want_s[96];
        shape_str(t->ne, have_s, sizeof have_s);
        shape_str(want, want_s, sizeof want_s);
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: tensor '%s' has shape %s, expected %s",
                          g->path, name, have_s, want_s);
    }
    if (f32_what && t->type != EMBER_DTYPE_F32)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: tensor '%s' is %s, %s must be F32",
                          g->path, name, ember_dtype_name(t->type), f32_what);
    uint32_t block = ember_dtype_block(t->type);
    if (t->ne[0] % block)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED,
                          "%s: tensor '%s' is %s with rows of %llu values, not a multiple of %u: its "
                          "%s blocks cross rows (an old llama.cpp quantization); quantize the model "
                          "again from F32 or F16", g->path, name, ember_dtype_name(t->type),
                          (ull)t->ne[0], block, ember_dtype_name(t->type));
    *out = t;
    return EMBER_OK;
}

/* blk.il.<part>.bias: one F32 value per output row of the projection. qwen2 always has
 * Q/K/V biases; llama.cpp's llama loader takes them when present, so Ember does too. */
static ember_status get_bias(const ember_gguf *g, ember_arch arch, uint32_t il, const char *part,
                             uint64_t rows, const ember_gguf_tensor **out, ember_err *err)
{
    char name[64];
    snprintf(name, sizeof name, "blk.%u.%s.bias", il, part);
    *out = NULL;
    if (ember_gguf_find_tensor(g, name))
        return get_tensor(g, name, "biases", rows, 1, out, err);
    if (arch == EMBER_ARCH_QWEN2)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: missing tensor '%s' (qwen2 models have "
                          "Q, K and V biases)", g->path, name);
    return EMBER_OK;
}

/* Biases llama.cpp accepts on other projections (attn_output, FFN): Ember does not
 * apply them, and ignoring one would silently compute another model. */
static ember_status refuse_other_biases(const ember_gguf *g, uint32_t il, ember_err *err)
{
    static const char *const parts[] = { "attn_output", "ffn_gate", "ffn_up", "ffn_down" };
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%u.%s.bias", il, parts[i]);
        if (ember_gguf_find_tensor(g, name))
            return ember_fail(err, EMBER_ERR_UNSUPPORTED, "%s: tensor '%s': Ember applies "
                              "biases only after the Q, K and V projections", g->path, name);
    }
    return EMBER_OK;
}

static ember_status get_layer(const ember_gguf *g, ember_arch arch, const ember_hparams *hp,
                              uint32_t il, ember_layer_tensors *l, ember_err *err)
{
    const uint64_t dim = hp->dim, q = (uint64_t)hp->n_heads * hp->head_dim,
                   kv = (uint64_t)hp->n_kv_heads * hp->head_dim, ffn = hp->ffn_dim;
    const struct {
        const char *name;
        bool is_norm;
        uint64_t ne0, ne1;
        const ember_gguf_tensor **slot;
    } spec[] = {
        { "attn_norm", true, dim, 1, &l->attn_norm },
        { "attn_q", false, dim, q, &l->wq },
        { "attn_k", false, dim, kv, &l->wk },
        { "attn_v", false, dim, kv, &l->wv },
        { "attn_output", false, q, dim, &l->wo },
        { "ffn_norm", true, dim, 1, &l->ffn_norm },
        { "ffn_gate", false, dim, ffn, &l->w_gate },
        { "ffn_up", false, dim, ffn, &l->w_up },
        { "ffn_down", false, ffn, dim, &l->w_down },
    };
    ember_status st;
    for (size_t i = 0; i < sizeof spec / sizeof *spec; i++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%u.%s.weight", il, spec[i].name);
        if ((st = get_tensor(g, name, spec[i].is_norm ? "norms" : NULL, spec[i].ne0,
                             spec[i].ne1, spec[i].slot, err)))
            return st;
    }
    if ((st = get_bias(g, arch, il, "attn_q", q, &l->bq, err)) ||
        (st = get_bias(g, arch, il, "attn_k", kv, &l->bk, err)) ||
        (st = get_bias(g, arch, il, "attn_v", kv, &l->bv, err)))
        return st;
    return refuse_other_biases(g, il, err);
}

/* rope_freqs.weight (optional): Llama 3.1+ files carry the frequency divisors llama.cpp's
 * converter computes from rope_scaling {factor, low/high_freq_factor}. A zero, negative
 * or non-finite one would put inf or NaN into every rotated query, so each is checked. */
static ember_status get_rope_freqs(const ember_gguf *g, const ember_hparams *hp,
                                   const ember_gguf_tensor **out, ember_err *err)
{
    const char *name = "rope_freqs.weight";
    *out = NULL;
    if (!ember_gguf_find_tensor(g, name)) return EMBER_OK;
    ember_status st = get_tensor(g, name, "RoPE frequency factors", hp->rope_dim / 2, 1, out, err);
    if (st) return st;
    const float *f = (*out)->data;
    for (uint32_t i = 0; i < hp->rope_dim / 2; i++)
        if (!(f[i] > 0) || !isfinite(f[i])) {
            *out = NULL;
            return ember_fail(err, EMBER_ERR_FORMAT, "%s: tensor '%s' value %u is %g; "
                              "RoPE frequency factors must be positive", g->path, name, i, f[i]);
        }
    return EMBER_OK;
}

static ember_status load(const ember_gguf *g, ember_llama *m, ember_err *err)
{
    ember_hparams *hp = &m->hp;
    ember_status st = check_arch(g, &m->arch, err);
    if (st) return st;
    const char *a = ember_arch_name(m->arch);
    hp->rope_style = m->arch == EMBER_ARCH_QWEN2 ? EMBER_ROPE_NEOX : EMBER_ROPE_NORM;
    if ((st = read_keys(g, a, hp, err)) || (st = check_hparams(g, a, hp, err)) ||
        (st = read_rope_scaling(g, a, hp, err)) || (st = ember_gguf_opt_u32(g, K(a, "pooling_type").s, &m->pooling, err)))
        return st;
    if (m->pooling > 4)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: %s.pooling_type %u is not one of 0..4", g->path, a, m->pooling);
    m->tok_embd = ember_gguf_find_tensor(g, "token_embd.weight");
    if (!m->tok_embd)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: missing tensor 'token_embd.weight'", g->path);
    if ((st = read_vocab(g, a, m->tok_embd, hp, err)) ||
        (st = get_tensor(g, "token_embd.weight", NULL, hp->dim, hp->n_vocab, &m->tok_embd, err)) ||
        (st = get_tensor(g, "output_norm.weight", "norms", hp->dim, 1, &m->output_norm, err)) ||
        (st = get_rope_freqs(g, hp, &m->rope_freqs, err)))
        return st;
    m->output = m->tok_embd; /* tied unless the file has its own */
    if (ember_gguf_find_tensor(g, "output.weight") &&
        (st = get_tensor(g, "output.weight", NULL, hp->dim, hp->n_vocab, &m->output, err)))
        return st;
    m->layers = ember_calloc(hp->n_layers, sizeof *m->layers);
    if (!m->layers) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "%s: out of memory", g->path);
    for (uint32_t il = 0; il < hp->n_layers; il++)
        if ((st = get_layer(g, m->arch, hp, il, &m->layers[il], err))) return st;
    return EMBER_OK;
}

ember_status ember_llama_load(const ember_gguf *g, ember_llama *out, ember_err *err)
{
    memset(out, 0, sizeof *out);
    ember_status st = load(g, out, err);
    if (st) ember_llama_free(out);
    return st;
}

void ember_llama_free(ember_llama *m)
{
    if (!m) return;
    ember_free(m->layers);
    memset(m, 0, sizeof *m);
}

/* ---- what a model uses ------------------------------------------------------------ */

const char *ember_arch_name(ember_arch a)
{
    return a == EMBER_ARCH_QWEN2 ? "qwen2" : "llama";
}

float ember_rope_pos_scale(const ember_hparams *hp)
{
    return hp->rope_scale > 0 ? 1.0f / hp->rope_scale : 1.0f;
}

uint32_t ember_llama_features(const ember_llama *m)
{
    uint32_t f = 0;
    for (uint32_t l = 0; m->layers && l < m->hp.n_layers; l++)
        if (m->layers[l].bq || m->layers[l].bk || m->layers[l].bv)
            f |= EMBER_FEAT_QKV_BIAS;
    if (m->hp.rope_style == EMBER_ROPE_NEOX) f |= EMBER_FEAT_ROPE_NEOX;
    if (m->rope_freqs) f |= EMBER_FEAT_ROPE_FREQS;
    if (ember_rope_pos_scale(&m->hp) != 1.0f) f |= EMBER_FEAT_ROPE_SCALE;
    return f;
}

uint32_t ember_llama_pooling(const ember_llama *m)
{
    return m->pooling ? m->pooling : 3; /* ember_pooling's LAST */
}

void ember_llama_features_str(uint32_t features, char *buf, size_t cap)
{
    static const char *const names[] = { "Q/K/V biases", "NeoX RoPE", "RoPE frequency factors",
                                         "linear RoPE scaling" };
    size_t len = 0;
    if (!cap) return;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if (!(features & (1u << i))) continue;
        int n = snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", names[i]);
        if (n < 0 || (size_t)n >= cap - len) return; /* truncated: keep what fits */
        len += (size_t)n;
    }
    if (!len) snprintf(buf, cap, "none");
}
