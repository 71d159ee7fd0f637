/* hparams.c — the <arch>.* keys of a model file into ember_hparams: the keys every family
 * shares (as llama.cpp's llama_model_base::load_hparams reads them), RoPE scaling, then
 * the family's own keys from its table entry (arch.c), then the keys that change what a
 * model computes which the family does not read: refused by name unless neutral, so that
 * a file is never run as something it does not say. */
#include "hparams.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef unsigned long long ull;

ember_keyname ember_key(const char *arch, const char *name)
{
    ember_keyname k;
    snprintf(k.s, sizeof k.s, "%s.%s", arch, name);
    return k;
}
#define K(a, name) ember_key(a, name).s

void ember_printable(ember_gguf_str s, char out[72])
{
    size_t n = s.len < 64 ? (size_t)s.len : 64;
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)s.ptr[i] < 0x20 ? '?' : s.ptr[i];
    out[n] = 0;
}

static ember_status read_common(const ember_gguf *g, const char *a, ember_hparams *hp, ember_err *err)
{
    ember_status st;
    if ((st = ember_gguf_get_u32(g, K(a, "embedding_length"), &hp->dim, err)) ||
        (st = ember_gguf_get_u32(g, K(a, "block_count"), &hp->n_layers, err)) ||
        (st = ember_gguf_get_u32(g, K(a, "feed_forward_length"), &hp->ffn_dim, err)) ||
        (st = ember_gguf_get_u32(g, K(a, "attention.head_count"), &hp->n_heads, err)) ||
        (st = ember_gguf_get_u32(g, K(a, "context_length"), &hp->ctx_len, err)))
        return st;
    hp->n_kv_heads = hp->n_heads;
    hp->rope_base = 10000.0f;
    hp->rms_eps = 1e-5f;
    return (st = ember_gguf_opt_u32(g, K(a, "attention.head_count_kv"), &hp->n_kv_heads, err)) ||
                   (st = ember_gguf_opt_f32(g, K(a, "rope.freq_base"), &hp->rope_base, err)) ||
                   (st = ember_gguf_opt_f32(g, K(a, "attention.layer_norm_rms_epsilon"), &hp->rms_eps, err))
               ? st
               : EMBER_OK;
}

static ember_status bad(const ember_gguf *g, ember_err *err, const char *a, const char *key, ull v)
{
    return ember_fail(err, EMBER_ERR_FORMAT, "%s: %s.%s must not be 0 (%llu)", g->path, a, key, v);
}

/* The head size: <arch>.attention.key_length, else dim / heads (which must then divide);
 * value_length must be the same (one head size for K and V is all the kernels know). */
static ember_status read_head_dim(const ember_gguf *g, const char *a, ember_hparams *hp, ember_err *err)
{
    bool has_k = ember_gguf_find(g, K(a, "attention.key_length")) != NULL;
    uint32_t k = hp->dim / hp->n_heads, v = k;
    if (!has_k && hp->dim % hp->n_heads)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: %s.attention.head_count %u does not divide %s.embedding_length "
                          "%u (and no %s.attention.key_length gives the head size)", g->path, a, hp->n_heads, a,
                          hp->dim, a);
    ember_status st;
    if ((st = ember_gguf_opt_u32(g, K(a, "attention.key_length"), &k, err)) ||
        (st = ember_gguf_opt_u32(g, K(a, "attention.value_length"), &v, err)))
        return st;
    if (!k) return bad(g, err, a, "attention.key_length", k);
    if (v != k)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "%s: %s.attention.value_length %u differs from the key length "
                          "%u: Ember's attention has one head size for K and V", g->path, a, v, k);
    hp->head_dim = k;
    return EMBER_OK;
}

/* The relations the forward pass relies on; head_dim and rope_dim are derived here. */
static ember_status check_hparams(const ember_gguf *g, const char *a, ember_hparams *hp, ember_err *err)
{
    if (!hp->dim) return bad(g, err, a, "embedding_length", hp->dim);
    if (!hp->n_layers) return bad(g, err, a, "block_count", hp->n_layers);
    if (!hp->ffn_dim) return bad(g, err, a, "feed_forward_length", hp->ffn_dim);
    if (!hp->ctx_len) return bad(g, err, a, "context_length", hp->ctx_len);
    if (!hp->n_heads) return bad(g, err, a, "attention.head_count", hp->n_heads);
    ember_status st = read_head_dim(g, a, hp, err);
    if (st) return st;
    if (!hp->n_kv_heads || hp->n_heads % hp->n_kv_heads)
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "%s: %s.attention.head_count_kv %u does not divide "
                          "%s.attention.head_count %u", g->path, a, hp->n_kv_heads, a, hp->n_heads);
    hp->rope_dim = hp->head_dim;
    if ((st = ember_gguf_opt_u32(g, K(a, "rope.dimension_count"), &hp->rope_dim, err))) return st;
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
    /* Each layer has at least five tensors: a huge block_count in a small file is
     * refused before the layer table is allocated. */
    if (hp->n_layers > g->n_tensors / 5)
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "%s: %s.block_count %u needs %llu tensors, the file has %llu",
                          g->path, a, hp->n_layers, 5ull * hp->n_layers, (ull)g->n_tensors);
    return EMBER_OK;
}

/* <arch>.rope.scaling.*, as llama.cpp reads them: the type defaults to linear; the older
 * key rope.scale_linear stands in for a missing factor; factor 0 means none. "longrope"
 * is the frequency-factor tensors of a family that has them (phi3), positions unscaled. */
static ember_status read_rope_scaling(const ember_gguf *g, const ember_arch *arch, ember_hparams *hp,
                                      ember_err *err)
{
    const char *a = arch->name;
    float factor = 0.0f;
    ember_status st;
    hp->rope_scaling = EMBER_ROPE_SCALING_LINEAR;
    if (ember_gguf_find(g, K(a, "rope.scaling.type"))) {
        ember_gguf_str type;
        if ((st = ember_gguf_get_str(g, K(a, "rope.scaling.type"), &type, err))) return st;
        bool longrope = ember_gguf_str_eq(type, "longrope") && (arch->flags & EMBER_ARCH_LONGROPE);
        if (ember_gguf_str_eq(type, "yarn")) hp->rope_scaling = EMBER_ROPE_SCALING_YARN;
        else if (ember_gguf_str_eq(type, "none") || longrope) hp->rope_scaling = EMBER_ROPE_SCALING_NONE;
        else if (!ember_gguf_str_eq(type, "linear")) {
            char name[72];
            ember_printable(type, name);
            return ember_fail(err, EMBER_ERR_UNSUPPORTED,
                              "%s: %s.rope.scaling.type '%s' is not supported (Ember implements "
                              "'none', 'linear' and 'yarn'%s)", g->path, a, name,
                              arch->flags & EMBER_ARCH_LONGROPE ? " and 'longrope'" : "; 'longrope' is phi3's");
        }
    }
    hp->rope_attn_factor = 1.0f;
    if ((st = ember_gguf_opt_f32(g, K(a, "rope.scale_linear"), &factor, err)) ||
        (st = ember_gguf_opt_f32(g, K(a, "rope.scaling.factor"), &factor, err)) ||
        (st = ember_gguf_opt_f32(g, K(a, "rope.scaling.attn_factor"), &hp->rope_attn_factor, err)) ||
        (st = ember_gguf_opt_u32(g, K(a, "rope.scaling.original_context_length"), &hp->rope_orig_ctx, err)))
        return st;
    if (!(factor >= 0) || !isfinite(factor))
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: %s.rope.scaling.factor %g must be positive", g->path, a, factor);
    if (!(hp->rope_attn_factor > 0) || !isfinite(hp->rope_attn_factor))
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: %s.rope.scaling.attn_factor %g must be positive", g->path, a,
                          hp->rope_attn_factor);
    hp->rope_scale = hp->rope_scaling != EMBER_ROPE_SCALING_NONE && factor > 0 ? factor : 1.0f;
    return EMBER_OK;
}

/* ---- the family's own keys, and those it does not read ----------------------------- */

static ember_status read_key(const ember_gguf *g, const char *a, const ember_arch_key *k, ember_hparams *hp,
                             ember_err *err)
{
    const char *name = K(a, k->suffix);
    if (!ember_gguf_find(g, name) && k->required)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: missing key %s (%s models have it)", g->path, name, a);
    float f = k->def;
    uint32_t u = (uint32_t)k->def;
    bool b = k->def != 0;
    ember_status st = k->kind == EMBER_KEY_F32   ? ember_gguf_opt_f32(g, name, &f, err)
                      : k->kind == EMBER_KEY_U32 ? ember_gguf_opt_u32(g, name, &u, err)
                                                 : ember_gguf_opt_bool(g, name, &b, err);
    if (st || k->field == EMBER_KEY_IGNORED) return st;
    char *field = (char *)hp + k->field;
    if (k->kind == EMBER_KEY_F32) {
        if (!isfinite(f) || f < 0)
            return ember_fail(err, EMBER_ERR_FORMAT, "%s: %s = %g must be finite and not negative", g->path, name, f);
        memcpy(field, &f, sizeof f);
    } else {
        /* A bool lands in a count: granite's rope.scaling.finetuned = false is "no RoPE in
         * any layer", nope_step 1. */
        if (k->kind == EMBER_KEY_BOOL) u = b ? 0 : 1;
        memcpy(field, &u, sizeof u);
    }
    return EMBER_OK;
}

static bool family_reads(const ember_arch *a, const char *suffix)
{
    for (const ember_arch_key *k = a->keys; k->suffix; k++)
        if (strcmp(k->suffix, suffix) == 0) return true;
    return false;
}

/* A key of ember_semantic_keys that family a does not read, set to a value that would
 * change the computation: refused by name and value. */
static ember_status refuse_unread(const ember_gguf *g, const ember_arch *a, ember_err *err)
{
    for (const ember_semantic_key *s = ember_semantic_keys; s->suffix; s++) {
        const char *name = K(a->name, s->suffix);
        if (family_reads(a, s->suffix) || !ember_gguf_find(g, name)) continue;
        float v = s->neutral;
        if (!s->any_presence) {
            ember_status st = ember_gguf_opt_f32(g, name, &v, err);
            if (st) return st;
            if (v == s->neutral || v == s->neutral2) continue;
        }
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "%s: %s = %g: the %s architecture does not apply it (as in "
                          "llama.cpp), so Ember refuses the file rather than run it without", g->path, name, v,
                          a->name);
    }
    return EMBER_OK;
}

/* What the table says without keys, and the keys' values turned into what the passes use. */
static void derive(const ember_arch *a, ember_hparams *hp)
{
    hp->rope_style = a->rope;
    hp->qk_norm = a->qk_norm;
    hp->act = a->act;
    if (!hp->nope_step) hp->nope_step = a->nope_step;
    hp->recipe = (a->flags & EMBER_ARCH_POST_NORMS ? EMBER_RECIPE_POST_NORMS : 0) |
                 (a->flags & EMBER_ARCH_NO_PRE_NORMS ? EMBER_RECIPE_NO_PRE_NORMS : 0) |
                 (a->flags & EMBER_ARCH_SWA_PLAIN_ROPE ? EMBER_RECIPE_SWA_PLAIN_ROPE : 0);
    hp->swa_scaled = (a->flags & EMBER_ARCH_SWA_COPY_SCALE) != 0;
    if (a->flags & EMBER_ARCH_EMBED_SQRT) hp->embed_scale = sqrtf((float)hp->dim);
    if (a->big_layers && hp->n_layers == a->big_layers)
        hp->attn_scale = 1.0f / sqrtf((float)(hp->dim / hp->n_heads));
    else if (a->big_layers)
        hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    if (a->id == EMBER_ARCH_GRANITE && hp->logit_scale > 0) hp->logit_scale = 1.0f / hp->logit_scale;
    if (!hp->rope_orig_ctx) hp->rope_orig_ctx = hp->ctx_len;
}

/* <arch>.expert_count and what goes with it, as llama.cpp reads them: expert_used_count
 * (required with experts, at most expert_count), an expert's FFN width (qwen3moe:
 * expert_feed_forward_length, else feed_forward_length / expert_used_count; llama's
 * Mixtral: feed_forward_length) and the family's gating (Mixtral and Qwen3-MoE: softmax,
 * the top k renormalised). A family without experts refuses a file that has them. */
static ember_status read_experts(const ember_gguf *g, const ember_arch *a, ember_hparams *hp, ember_err *err)
{
    ember_status st = ember_gguf_opt_u32(g, K(a->name, "expert_count"), &hp->n_expert, err);
    if (st) return st;
    bool moe = (a->flags & EMBER_ARCH_MOE) != 0;
    if (!hp->n_expert && !moe) return EMBER_OK;
    if (!(a->flags & (EMBER_ARCH_EXPERTS | EMBER_ARCH_MOE)))
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "%s: %s.expert_count = %u: Ember runs mixtures of experts "
                          "as llama (Mixtral), qwen3moe and gpt-oss models, not as %s", g->path, a->name, hp->n_expert,
                          a->name);
    if (!hp->n_expert)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: %s.expert_count is missing or 0 (%s models are mixtures of "
                          "experts)", g->path, a->name, a->name);
    if ((st = ember_gguf_get_u32(g, K(a->name, "expert_used_count"), &hp->n_expert_used, err))) return st;
    if (!hp->n_expert_used || hp->n_expert_used > hp->n_expert || hp->n_expert > EMBER_MAX_EXPERTS ||
        hp->n_expert_used > EMBER_MAX_EXPERTS_USED)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "%s: %s.expert_used_count %u of expert_count %u: Ember "
                          "runs 1 to %u of at most %u experts", g->path, a->name, hp->n_expert_used, hp->n_expert,
                          EMBER_MAX_EXPERTS_USED, EMBER_MAX_EXPERTS);
    if (!hp->expert_ffn) hp->expert_ffn = moe ? hp->ffn_dim / hp->n_expert_used : hp->ffn_dim;
    if (!hp->expert_ffn) return bad(g, err, a->name, "expert_feed_forward_length", 0);
    bool oai = (a->flags & EMBER_ARCH_EXPERT_BIAS) != 0; /* gpt-oss: softmax over the k, as is */
    hp->expert_gating = oai ? EMBER_GATING_SOFTMAX_WEIGHT : EMBER_GATING_SOFTMAX;
    hp->expert_norm = !oai;
    return EMBER_OK;
}

static ember_status read_family(const ember_gguf *g, const ember_arch *a, ember_hparams *hp, ember_err *err)
{
    hp->yarn_beta_fast = 32.0f;
    hp->yarn_beta_slow = 1.0f;
    for (const ember_arch_key *k = a->keys; k->suffix; k++) {
        ember_status st = read_key(g, a->name, k, hp, err);
        if (st) return st;
    }
    if (a->id == EMBER_ARCH_GRANITE && !(hp->logit_scale > 0))
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: granite.logit_scale must be positive", g->path);
    ember_status st = read_experts(g, a, hp, err);
    return st ? st : refuse_unread(g, a, err);
}

ember_status ember_hparams_read(const ember_gguf *g, const ember_arch *a, ember_hparams *hp, ember_err *err)
{
    ember_status st;
    if ((st = read_common(g, a->name, hp, err)) || (st = check_hparams(g, a->name, hp, err)) ||
        (st = read_rope_scaling(g, a, hp, err)) || (st = read_family(g, a, hp, err)))
        return st;
    derive(a, hp);
    return EMBER_OK;
}
