/* model.c — the `llama` architecture read from an opened GGUF file: hyper-parameters
 * from the llama.* keys, then every tensor looked up and its shape checked against
 * them, so that the forward passes can trust every size without checking again. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

/* ---- hyper-parameters ----------------------------------------------------------- */

static ember_status check_arch(const ember_gguf *g, ember_err *err)
{
    ember_gguf_str arch;
    ember_status st = ember_gguf_get_str(g, "general.architecture", &arch, err);
    if (st) return st;
    if (ember_gguf_str_eq(arch, "llama")) return EMBER_OK;
    char name[72];
    size_t n = arch.len < 64 ? (size_t)arch.len : 64;
    for (size_t i = 0; i < n; i++) /* the name is file data: keep the message printable */
        name[i] = (unsigned char)arch.ptr[i] < 0x20 ? '?' : arch.ptr[i];
    name[n] = 0;
    return ember_fail(err, EMBER_ERR_UNSUPPORTED,
                      "%s: unsupported architecture '%s' (Ember runs 'llama')", g->path, name);
}

static ember_status read_keys(const ember_gguf *g, ember_hparams *hp, ember_err *err)
{
    ember_status st;
    if ((st = ember_gguf_get_u32(g, "llama.embedding_length", &hp->dim, err)) ||
        (st = ember_gguf_get_u32(g, "llama.block_count", &hp->n_layers, err)) ||
        (st = ember_gguf_get_u32(g, "llama.feed_forward_length", &hp->ffn_dim, err)) ||
        (st = ember_gguf_get_u32(g, "llama.attention.head_count", &hp->n_heads, err)) ||
        (st = ember_gguf_get_u32(g, "llama.context_length", &hp->ctx_len, err)))
        return st;
    hp->n_kv_heads = hp->n_heads;
    hp->rope_base = 10000.0f;
    hp->rms_eps = 1e-5f;
    if ((st = ember_gguf_opt_u32(g, "llama.attention.head_count_kv", &hp->n_kv_heads, err)) ||
        (st = ember_gguf_opt_f32(g, "llama.rope.freq_base", &hp->rope_base, err)) ||
        (st = ember_gguf_opt_f32(g, "llama.attention.layer_norm_rms_epsilon", &hp->rms_eps, err)))
        return st;
    return EMBER_OK;
}

static ember_status bad(const ember_gguf *g, ember_err *err, const char *what, ull v)
{
    return ember_fail(err, EMBER_ERR_FORMAT, "%s: %s (%llu)", g->path, what, v);
}

/* The relations the forward pass relies on; head_dim and rope_dim are derived here. */
static ember_status check_hparams(const ember_gguf *g, ember_hparams *hp, ember_err *err)
{
    if (!hp->dim) return bad(g, err, "llama.embedding_length must not be 0", hp->dim);
    if (!hp->n_layers) return bad(g, err, "llama.block_count must not be 0", hp->n_layers);
    if (!hp->ffn_dim) return bad(g, err, "llama.feed_forward_length must not be 0", hp->ffn_dim);
    if (!hp->ctx_len) return bad(g, err, "llama.context_length must not be 0", hp->ctx_len);
    if (!hp->n_heads || hp->dim % hp->n_heads)
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "%s: llama.attention.head_count %u does not divide "
                          "llama.embedding_length %u", g->path, hp->n_heads, hp->dim);
    if (!hp->n_kv_heads || hp->n_heads % hp->n_kv_heads)
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "%s: llama.attention.head_count_kv %u does not divide "
                          "llama.attention.head_count %u", g->path, hp->n_kv_heads, hp->n_heads);
    hp->head_dim = hp->dim / hp->n_heads;
    hp->rope_dim = hp->head_dim;
    ember_status st = ember_gguf_opt_u32(g, "llama.rope.dimension_count", &hp->rope_dim, err);
    if (st) return st;
    if (!hp->rope_dim || hp->rope_dim % 2 || hp->rope_dim > hp->head_dim)
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "%s: llama.rope.dimension_count %u must be even, non-zero and at "
                          "most head_dim %u", g->path, hp->rope_dim, hp->head_dim);
    if (!(hp->rope_base > 0) || !isfinite(hp->rope_base))
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: llama.rope.freq_base %g must be positive",
                          g->path, hp->rope_base);
    if (!(hp->rms_eps > 0) || !isfinite(hp->rms_eps))
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "%s: llama.attention.layer_norm_rms_epsilon %g must be positive",
                          g->path, hp->rms_eps);
    /* Each layer has nine tensors: a huge block_count in a small file is refused
     * before the layer table is allocated. */
    if (hp->n_layers > g->n_tensors / 9)
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "%s: llama.block_count %u needs %llu tensors, the file has %llu",
                          g->path, hp->n_layers, 9ull * hp->n_layers, (ull)g->n_tensors);
    return EMBER_OK;
}

/* llama.vocab_size, else the tokenizer's token list, else the embedding's rows. */
static ember_status read_vocab(const ember_gguf *g, const ember_gguf_tensor *embd,
                               ember_hparams *hp, ember_err *err)
{
    const ember_gguf_kv *tokens = ember_gguf_find(g, "tokenizer.ggml.tokens");
    uint64_t n = embd->ne[1];
    if (tokens && (tokens->type != EMBER_GGUF_ARRAY || tokens->arr_type != EMBER_GGUF_STRING))
        tokens = NULL; /* not a token list: the tokenizer will say so */
    if (ember_gguf_find(g, "llama.vocab_size")) {
        ember_status st = ember_gguf_get_u32(g, "llama.vocab_size", &hp->n_vocab, err);
        if (st) return st;
        n = hp->n_vocab;
    } else if (tokens) {
        n = tokens->arr_n;
    }
    if (n == 0 || n > UINT32_MAX)
        return bad(g, err, "the vocabulary size must be in 1..2^32-1", (ull)n);
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
 * dimensions of 1 are allowed). A norm must be F32; a Q8_0 matrix must have whole
 * blocks in each row, because the kernels dequantize row by row. */
static ember_status get_tensor(const ember_gguf *g, const char *name, bool is_norm,
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
    if (is_norm && t->type != EMBER_DTYPE_F32)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: tensor '%s' is %s, norms must be F32",
                          g->path, name, ember_dtype_name(t->type));
    if (t->type == EMBER_DTYPE_Q8_0 && t->ne[0] % EMBER_Q8_0_BLOCK)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED,
                          "%s: tensor '%s' is Q8_0 with rows of %llu values, not a multiple "
                          "of 32: its Q8_0 blocks cross rows (an old llama.cpp quantization); "
                          "quantize the model again from F32 or F16", g->path, name,
                          (ull)t->ne[0]);
    *out = t;
    return EMBER_OK;
}

static ember_status get_layer(const ember_gguf *g, const ember_hparams *hp, uint32_t il,
                              ember_layer_tensors *l, ember_err *err)
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
    for (size_t i = 0; i < sizeof spec / sizeof *spec; i++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%u.%s.weight", il, spec[i].name);
        ember_status st = get_tensor(g, name, spec[i].is_norm, spec[i].ne0, spec[i].ne1,
                                     spec[i].slot, err);
        if (st) return st;
    }
    return EMBER_OK;
}

static ember_status load(const ember_gguf *g, ember_llama *m, ember_err *err)
{
    ember_hparams *hp = &m->hp;
    ember_status st = check_arch(g, err);
    if (!st) st = read_keys(g, hp, err);
    if (!st) st = check_hparams(g, hp, err);
    if (st) return st;
    m->tok_embd = ember_gguf_find_tensor(g, "token_embd.weight");
    if (!m->tok_embd)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: missing tensor 'token_embd.weight'", g->path);
    if ((st = read_vocab(g, m->tok_embd, hp, err)) ||
        (st = get_tensor(g, "token_embd.weight", false, hp->dim, hp->n_vocab, &m->tok_embd, err)) ||
        (st = get_tensor(g, "output_norm.weight", true, hp->dim, 1, &m->output_norm, err)))
        return st;
    m->output = m->tok_embd; /* tied unless the file has its own */
    if (ember_gguf_find_tensor(g, "output.weight") &&
        (st = get_tensor(g, "output.weight", false, hp->dim, hp->n_vocab, &m->output, err)))
        return st;
    m->layers = calloc(hp->n_layers, sizeof *m->layers);
    if (!m->layers) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "%s: out of memory", g->path);
    for (uint32_t il = 0; il < hp->n_layers; il++)
        if ((st = get_layer(g, hp, il, &m->layers[il], err))) return st;
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
    free(m->layers);
    memset(m, 0, sizeof *m);
}
