/* model.c — a model file read into its description (model.h): the family from
 * general.architecture (arch.h), the hyper-parameters from its keys (hparams.c), then
 * every tensor the family's layers have (arch.c) looked up and its shape checked against
 * them, so that the forward passes can trust every size without checking again. A tensor
 * the family does not use is refused by name: ignoring one would silently compute another
 * model. See docs/models.md. */
#include "common/alloc.h"
#include "hparams.h"
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

/* The file being read, and which of its tensors the description has taken. */
typedef struct loader {
    const ember_gguf *g;
    bool *used;          /* one per tensor of g */
    ember_err *err;
} loader;

static ember_status check_arch(const ember_gguf *g, const ember_arch **out, ember_err *err)
{
    ember_gguf_str arch;
    ember_status st = ember_gguf_get_str(g, "general.architecture", &arch, err);
    if (st) return st;
    if ((*out = ember_arch_find(arch.ptr, (size_t)arch.len))) return EMBER_OK;
    char name[72];
    ember_printable(arch, name);
    return ember_fail(err, EMBER_ERR_UNSUPPORTED, "%s: unsupported architecture '%s' (Ember runs %s)", g->path,
                      name, ember_arch_names());
}

/* <arch>.vocab_size, else the tokenizer's token list, else the embedding's rows. */
static ember_status read_vocab(const ember_gguf *g, const char *a, const ember_gguf_tensor *embd,
                               ember_hparams *hp, ember_err *err)
{
    const ember_gguf_kv *tokens = ember_gguf_find(g, "tokenizer.ggml.tokens");
    uint64_t n = embd->ne[1];
    if (tokens && (tokens->type != EMBER_GGUF_ARRAY || tokens->arr_type != EMBER_GGUF_STRING))
        tokens = NULL; /* not a token list: the tokenizer will say so */
    if (ember_gguf_find(g, ember_key(a, "vocab_size").s)) {
        ember_status st = ember_gguf_get_u32(g, ember_key(a, "vocab_size").s, &hp->n_vocab, err);
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
static ember_status get_tensor3(loader *l, const char *name, const char *f32_what, uint64_t ne0, uint64_t ne1,
                                uint64_t ne2, const ember_gguf_tensor **out)
{
    const ember_gguf *g = l->g;
    const ember_gguf_tensor *t = ember_gguf_find_tensor(g, name);
    if (!t) return ember_fail(l->err, EMBER_ERR_FORMAT, "%s: missing tensor '%s'", g->path, name);
    const uint64_t want[4] = { ne0, ne1, ne2, 1 };
    if (memcmp(t->ne, want, sizeof want) != 0) {
        char have_s[96], want_s[96];
        shape_str(t->ne, have_s, sizeof have_s);
        shape_str(want, want_s, sizeof want_s);
        return ember_fail(l->err, EMBER_ERR_FORMAT, "%s: tensor '%s' has shape %s, expected %s",
                          g->path, name, have_s, want_s);
    }
    if (f32_what && t->type != EMBER_DTYPE_F32)
        return ember_fail(l->err, EMBER_ERR_FORMAT, "%s: tensor '%s' is %s, %s must be F32",
                          g->path, name, ember_dtype_name(t->type), f32_what);
    uint32_t block = ember_dtype_block(t->type);
    if (t->ne[0] % block)
        return ember_fail(l->err, EMBER_ERR_UNSUPPORTED,
                          "%s: tensor '%s' is %s with rows of %llu values, not a multiple of %u: its "
                          "%s blocks cross rows (an old llama.cpp quantization); quantize the model "
                          "again from F32 or F16", g->path, name, ember_dtype_name(t->type),
                          (ull)t->ne[0], block, ember_dtype_name(t->type));
    l->used[t - g->tensors] = true;
    *out = t;
    return EMBER_OK;
}

static ember_status get_tensor(loader *l, const char *name, const char *f32_what, uint64_t ne0, uint64_t ne1,
                               const ember_gguf_tensor **out)
{
    return get_tensor3(l, name, f32_what, ne0, ne1, 1, out);
}

/* One tensor of a layer's spec (arch.c): taken when the file has it; a missing one is an
 * error when the family requires it. */
static ember_status get_spec(loader *l, const ember_arch *a, uint32_t il, const ember_tensor_spec *s,
                             ember_layer_tensors *lt)
{
    char name[64];
    bool bias = s->bias;
    snprintf(name, sizeof name, "blk.%u.%.24s.%s", il, s->part, bias ? "bias" : "weight");
    const ember_gguf_tensor **slot = (const ember_gguf_tensor **)((char *)lt + s->slot);
    *slot = NULL;
    if (ember_gguf_find_tensor(l->g, name))
        return get_tensor3(l, name, !s->vector ? NULL : bias ? "biases" : "norms", s->ne0, s->ne1, s->ne2, slot);
    if (!s->required) return EMBER_OK;
    bool qkv = s->part[0] == 'a' && strlen(s->part) <= 8; /* attn_q, attn_k, attn_v, attn_qkv */
    if (bias && qkv)
        return ember_fail(l->err, EMBER_ERR_FORMAT, "%s: missing tensor '%s' (%s models have Q, K and V biases)",
                          l->g->path, name, a->name);
    if (bias)
        return ember_fail(l->err, EMBER_ERR_FORMAT, "%s: missing tensor '%s' (%s models have a bias on %s)",
                          l->g->path, name, a->name, s->part);
    return ember_fail(l->err, EMBER_ERR_FORMAT, "%s: missing tensor '%s'", l->g->path, name);
}

static ember_status get_layer(loader *l, const ember_arch *a, const ember_hparams *hp, uint32_t il,
                              ember_layer_tensors *lt)
{
    char name[64];
    snprintf(name, sizeof name, "blk.%u.attn_qkv.weight", il);
    ember_tensor_spec specs[EMBER_MAX_LAYER_TENSORS];
    uint32_t n = ember_arch_layer_tensors(a, hp, ember_gguf_find_tensor(l->g, name) != NULL, specs);
    for (uint32_t i = 0; i < n; i++) {
        ember_status st = get_spec(l, a, il, &specs[i], lt);
        if (st) return st;
    }
    return EMBER_OK;
}

/* A RoPE frequency-factor tensor: F32, rope_dim/2 values, each finite and positive (a
 * zero, negative or non-finite one would put inf or NaN into every rotated query). */
static ember_status get_factors(loader *l, const ember_hparams *hp, const char *name, const ember_gguf_tensor **out)
{
    *out = NULL;
    if (!ember_gguf_find_tensor(l->g, name)) return EMBER_OK;
    ember_status st = get_tensor(l, name, "RoPE frequency factors", hp->rope_dim / 2, 1, out);
    if (st) return st;
    const float *f = (*out)->data;
    for (uint32_t i = 0; i < hp->rope_dim / 2; i++)
        if (!(f[i] > 0) || !isfinite(f[i])) {
            *out = NULL;
            return ember_fail(l->err, EMBER_ERR_FORMAT, "%s: tensor '%s' value %u is %g; "
                              "RoPE frequency factors must be positive", l->g->path, name, i, f[i]);
        }
    return EMBER_OK;
}

/* rope_freqs.weight (Llama 3.1+: the divisors llama.cpp's converter computes from
 * rope_scaling), or LongRoPE's long and short factors (phi3), of which llama.cpp takes
 * the long ones when the context exceeds the original one: here the file's context. */
static ember_status get_rope_freqs(loader *l, const ember_arch *a, const ember_hparams *hp,
                                   const ember_gguf_tensor **out)
{
    const ember_gguf_tensor *lo = NULL, *sh = NULL;
    ember_status st = EMBER_OK;
    *out = NULL;
    if (a->flags & EMBER_ARCH_ROPE_FREQS) st = get_factors(l, hp, "rope_freqs.weight", out);
    if (!st && (a->flags & EMBER_ARCH_LONGROPE) && !(st = get_factors(l, hp, "rope_factors_long.weight", &lo)))
        st = get_factors(l, hp, "rope_factors_short.weight", &sh);
    if (!st && (lo || sh)) *out = hp->ctx_len > hp->rope_orig_ctx ? lo : sh;
    return st;
}

/* The LM head: output.weight, or token_embd where the file has none (tied). gemma2's is
 * always token_embd; olmo2 always has its own. */
static ember_status get_output(loader *l, const ember_arch *a, const ember_hparams *hp, ember_llama *m)
{
    bool has = ember_gguf_find_tensor(l->g, "output.weight") != NULL;
    m->output = m->tok_embd;
    if (!has && (a->flags & EMBER_ARCH_OUTPUT))
        return ember_fail(l->err, EMBER_ERR_FORMAT, "%s: missing tensor 'output.weight' (%s models have one)",
                          l->g->path, a->name);
    if (!has || (a->flags & EMBER_ARCH_TIED)) return EMBER_OK; /* gemma2's: refused as unused */
    return get_tensor(l, "output.weight", NULL, hp->dim, hp->n_vocab, &m->output);
}

/* Every tensor of the file is one the description took: another is refused by name. */
static ember_status check_unused(loader *l, const ember_arch *a)
{
    for (uint64_t i = 0; i < l->g->n_tensors; i++) {
        if (l->used[i]) continue;
        const char *name = l->g->tensors[i].name;
        size_t n = strlen(name);
        if (n > 5 && strcmp(name + n - 5, ".bias") == 0)
            return ember_fail(l->err, EMBER_ERR_UNSUPPORTED, "%s: tensor '%s': a %s model has no such bias (Ember "
                              "applies the biases its family's table lists)", l->g->path, name, a->name);
        return ember_fail(l->err, EMBER_ERR_UNSUPPORTED, "%s: tensor '%s' is not part of a %s model as Ember (and "
                          "llama.cpp) computes it: refused rather than ignored", l->g->path, name, a->name);
    }
    return EMBER_OK;
}

static ember_status load_tensors(loader *l, ember_llama *m)
{
    const ember_arch *a = m->desc;
    ember_hparams *hp = &m->hp;
    const ember_gguf *g = l->g;
    ember_status st;
    m->tok_embd = ember_gguf_find_tensor(g, "token_embd.weight");
    if (!m->tok_embd) return ember_fail(l->err, EMBER_ERR_FORMAT, "%s: missing tensor 'token_embd.weight'", g->path);
    if ((st = read_vocab(g, a->name, m->tok_embd, hp, l->err)) ||
        (st = get_tensor(l, "token_embd.weight", NULL, hp->dim, hp->n_vocab, &m->tok_embd)) ||
        (st = get_tensor(l, "output_norm.weight", "norms", hp->dim, 1, &m->output_norm)) ||
        (st = get_rope_freqs(l, a, hp, &m->rope_freqs)) || (st = get_output(l, a, hp, m)))
        return st;
    m->layers = ember_calloc(hp->n_layers, sizeof *m->layers);
    if (!m->layers) return ember_fail(l->err, EMBER_ERR_OUT_OF_MEMORY, "%s: out of memory", g->path);
    for (uint32_t il = 0; il < hp->n_layers; il++)
        if ((st = get_layer(l, a, hp, il, &m->layers[il]))) return st;
    return check_unused(l, a);
}

static ember_status load(const ember_gguf *g, ember_llama *m, ember_err *err)
{
    ember_hparams *hp = &m->hp;
    ember_status st = check_arch(g, &m->desc, err);
    if (st) return st;
    m->arch = m->desc->id;
    const char *a = m->desc->name;
    if ((st = ember_hparams_read(g, m->desc, hp, err)) ||
        (st = ember_gguf_opt_u32(g, ember_key(a, "pooling_type").s, &m->pooling, err)))
        return st;
    if (m->pooling > 4)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: %s.pooling_type %u is not one of 0..4", g->path, a, m->pooling);
    loader l = {g, ember_calloc(g->n_tensors ? g->n_tensors : 1, sizeof(bool)), err};
    if (!l.used) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "%s: out of memory", g->path);
    st = load_tensors(&l, m);
    ember_free(l.used);
    return st;
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

uint32_t ember_layer_tensor_list(const ember_layer_tensors *lt, const ember_gguf_tensor *out[EMBER_MAX_LAYER_TENSORS])
{
    const ember_gguf_tensor *all[] = {lt->attn_norm, lt->wq, lt->wk, lt->wv, lt->wo, lt->ffn_norm, lt->w_gate,
                                      lt->w_up, lt->w_down, lt->bq, lt->bk, lt->bv, lt->wqkv, lt->bqkv,
                                      lt->q_norm, lt->k_norm, lt->attn_post_norm, lt->ffn_post_norm,
                                      lt->ffn_router, lt->gate_exps, lt->up_exps, lt->down_exps,
                                      lt->bo, lt->sinks, lt->router_b, lt->gate_exps_b, lt->up_exps_b,
                                      lt->down_exps_b};
    _Static_assert(sizeof all / sizeof *all <= EMBER_MAX_LAYER_TENSORS, "EMBER_MAX_LAYER_TENSORS");
    uint32_t n = 0;
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i]) out[n++] = all[i];
    return n;
}

/* ---- what a model uses ------------------------------------------------------------ */

const char *ember_arch_name(ember_arch_id a)
{
    return ember_arch_get(a)->name;
}

static uint32_t layer_features(const ember_llama *m)
{
    uint32_t f = 0;
    for (uint32_t l = 0; m->layers && l < m->hp.n_layers; l++) {
        const ember_layer_tensors *t = &m->layers[l];
        if (t->bq || t->bk || t->bv || t->bqkv) f |= EMBER_FEAT_QKV_BIAS;
        if (t->wqkv || (t->w_up && !t->w_gate)) f |= EMBER_FEAT_FUSED;
        if (t->sinks) f |= EMBER_FEAT_SINKS;
        if (t->bo || t->router_b || t->gate_exps_b) f |= EMBER_FEAT_BIASES;
        ember_layer_attn at;
        ember_layer_attn_of(&m->hp, l, &at);
        if (at.window) f |= EMBER_FEAT_WINDOW;
        if (!at.rope) f |= EMBER_FEAT_NOPE;
    }
    return f;
}

uint32_t ember_llama_features(const ember_llama *m)
{
    const ember_hparams *hp = &m->hp;
    uint32_t f = layer_features(m);
    if (hp->rope_style == EMBER_ROPE_NEOX) f |= EMBER_FEAT_ROPE_NEOX;
    if (m->rope_freqs) f |= EMBER_FEAT_ROPE_FREQS;
    if (ember_rope_pos_scale(hp) != 1.0f) f |= EMBER_FEAT_ROPE_SCALE;
    if (hp->qk_norm != EMBER_QK_NORM_NONE) f |= EMBER_FEAT_QK_NORM;
    if (hp->recipe & EMBER_RECIPE_POST_NORMS) f |= EMBER_FEAT_POST_NORMS;
    if (hp->recipe & EMBER_RECIPE_NO_PRE_NORMS) f |= EMBER_FEAT_NO_PRE_NORMS;
    if (hp->attn_softcap > 0 || hp->final_softcap > 0) f |= EMBER_FEAT_SOFTCAP;
    if (hp->rope_scaling == EMBER_ROPE_SCALING_YARN) f |= EMBER_FEAT_YARN;
    if (hp->act == EMBER_FFN_GELU_TANH) f |= EMBER_FEAT_GEGLU;
    if ((hp->embed_scale > 0 && hp->embed_scale != 1) || (hp->residual_scale > 0 && hp->residual_scale != 1) ||
        (hp->logit_scale > 0 && hp->logit_scale != 1) || hp->attn_scale > 0 || hp->attn_temp_scale > 0)
        f |= EMBER_FEAT_SCALES;
    if (hp->rope_dim < hp->head_dim) f |= EMBER_FEAT_PARTIAL_ROPE;
    if (hp->head_dim * hp->n_heads != hp->dim) f |= EMBER_FEAT_HEAD_DIM;
    if (hp->n_expert) f |= EMBER_FEAT_MOE;
    if (hp->act == EMBER_FFN_SWIGLU_OAI) f |= EMBER_FEAT_SWIGLU_OAI;
    return f;
}

uint32_t ember_llama_pooling(const ember_llama *m)
{
    return m->pooling ? m->pooling : 3; /* ember_pooling's LAST */
}

const char *ember_llama_feature_name(uint32_t i)
{
    static const char *const names[] = {
        "Q/K/V biases", "NeoX RoPE", "RoPE frequency factors", "RoPE scaling", "QK-norm", "post-norms",
        "no pre-norms", "sliding window", "NoPE layers", "soft-capping", "YaRN", "GeGLU", "scales",
        "fused matrices", "partial rotary", "head size from key_length", "mixture of experts",
        "attention sinks", "clamped SwiGLU", "output and expert biases"};
    return i < sizeof names / sizeof *names ? names[i] : NULL;
}

void ember_llama_features_str(uint32_t features, char *buf, size_t cap)
{
    size_t len = 0;
    if (!cap) return;
    buf[0] = 0;
    for (uint32_t i = 0; ember_llama_feature_name(i); i++) {
        if (!(features & (1u << i))) continue;
        int n = snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", ember_llama_feature_name(i));
        if (n < 0 || (size_t)n >= cap - len) return; /* truncated: keep what fits */
        len += (size_t)n;
    }
    if (!len) snprintf(buf, cap, "none");
}
