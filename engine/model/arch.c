/* arch.c — the table of architectures (arch.h): one entry per family, and the tensors a
 * layer of each has. The entries transcribe llama.cpp's src/models/<family>.cpp
 * (load_arch_hparams: the keys and their defaults; load_arch_tensors: the tensors;
 * the graph: the recipe); docs/models.md lists them side by side. */
#include "arch.h"

#include <stdio.h>
#include <string.h>


#define HP(f) offsetof(ember_hparams, f)
#define NO_KEYS {{NULL, 0, EMBER_KEY_F32, false, 0}}

static const ember_arch TABLE[EMBER_ARCH_COUNT] = {
    {EMBER_ARCH_LLAMA, "llama", "Llama 2/3/3.1/3.2, TinyLlama, SmolLM/SmolLM2, Mistral 7B, Mistral-Nemo, Ministral, Mixtral",
     EMBER_ROPE_NORM, EMBER_QK_NORM_NONE, EMBER_FFN_SILU, EMBER_ARCH_ROPE_FREQS | EMBER_ARCH_EXPERTS, 0, 0, NO_KEYS, NULL},
    {EMBER_ARCH_QWEN2, "qwen2", "Qwen 1.5, Qwen2, Qwen2.5 (dense)",
     EMBER_ROPE_NEOX, EMBER_QK_NORM_NONE, EMBER_FFN_SILU, EMBER_ARCH_QKV_BIAS, 0, 0, NO_KEYS, NULL},
    {EMBER_ARCH_QWEN3, "qwen3", "Qwen3 (dense)",
     EMBER_ROPE_NEOX, EMBER_QK_NORM_HEAD, EMBER_FFN_SILU, 0, 0, 0, NO_KEYS, NULL},
    {EMBER_ARCH_GEMMA2, "gemma2", "Gemma 2",
     EMBER_ROPE_NEOX, EMBER_QK_NORM_NONE, EMBER_FFN_GELU_TANH,
     EMBER_ARCH_POST_NORMS | EMBER_ARCH_EMBED_SQRT | EMBER_ARCH_TIED | EMBER_ARCH_SWA_COPY_SCALE, 0, 46,
     {{"attention.sliding_window", HP(swa_window), EMBER_KEY_U32, false, 4096},
      {"attention.sliding_window_pattern", HP(swa_period), EMBER_KEY_U32, false, 2},
      {"rope.freq_base_swa", HP(rope_base_swa), EMBER_KEY_F32, false, 0},
      {"attn_logit_softcapping", HP(attn_softcap), EMBER_KEY_F32, false, 50},
      {"final_logit_softcapping", HP(final_softcap), EMBER_KEY_F32, false, 30},
      {NULL, 0, EMBER_KEY_F32, false, 0}},
     NULL},
    {EMBER_ARCH_GEMMA3, "gemma3", "Gemma 3 (text)",
     EMBER_ROPE_NEOX, EMBER_QK_NORM_HEAD, EMBER_FFN_GELU_TANH, EMBER_ARCH_POST_NORMS | EMBER_ARCH_EMBED_SQRT, 0, 62,
     {{"attention.sliding_window", HP(swa_window), EMBER_KEY_U32, false, 0},
      {"attention.sliding_window_pattern", HP(swa_period), EMBER_KEY_U32, false, 6},
      {"rope.freq_base_swa", HP(rope_base_swa), EMBER_KEY_F32, false, 10000},
      {"final_logit_softcapping", HP(final_softcap), EMBER_KEY_F32, false, 0},
      {NULL, 0, EMBER_KEY_F32, false, 0}},
     NULL},
    {EMBER_ARCH_PHI3, "phi3", "Phi-3, Phi-3.5, Phi-4-mini",
     EMBER_ROPE_NEOX, EMBER_QK_NORM_NONE, EMBER_FFN_SILU,
     EMBER_ARCH_FUSED_UP | EMBER_ARCH_FUSED_QKV | EMBER_ARCH_LONGROPE, 0, 0,
     {{"attention.sliding_window", EMBER_KEY_IGNORED, EMBER_KEY_U32, false, 0}, {NULL, 0, EMBER_KEY_F32, false, 0}},
     "the sliding window a phi3 file declares is not applied: llama.cpp disables it (its pull request 13676)"},
    {EMBER_ARCH_MISTRAL3, "mistral3", "Mistral 3 (Ministral 3, Mistral Small 3.x text)",
     EMBER_ROPE_NORM, EMBER_QK_NORM_NONE, EMBER_FFN_SILU, EMBER_ARCH_ROPE_FREQS, 0, 0,
     {{"attention.temperature_scale", HP(attn_temp_scale), EMBER_KEY_F32, false, 0},
      {"rope.scaling.yarn_beta_fast", HP(yarn_beta_fast), EMBER_KEY_F32, false, 32},
      {"rope.scaling.yarn_beta_slow", HP(yarn_beta_slow), EMBER_KEY_F32, false, 1},
      {"rope.scaling.yarn_log_multiplier", HP(yarn_log_mul), EMBER_KEY_F32, false, 0},
      {NULL, 0, EMBER_KEY_F32, false, 0}},
     NULL},
    {EMBER_ARCH_SMOLLM3, "smollm3", "SmolLM3",
     EMBER_ROPE_NORM, EMBER_QK_NORM_NONE, EMBER_FFN_SILU, 0, 4, 0, NO_KEYS, NULL},
    {EMBER_ARCH_OLMO2, "olmo2", "OLMo 2, OLMo 3",
     EMBER_ROPE_NEOX, EMBER_QK_NORM_FULL, EMBER_FFN_SILU,
     EMBER_ARCH_POST_NORMS | EMBER_ARCH_NO_PRE_NORMS | EMBER_ARCH_OUTPUT | EMBER_ARCH_SWA_PLAIN_ROPE, 0, 0,
     {{"attention.sliding_window", HP(swa_window), EMBER_KEY_U32, false, 0},
      {"attention.sliding_window_pattern", HP(swa_period), EMBER_KEY_U32, false, 4},
      {"rope.freq_base_swa", EMBER_KEY_IGNORED, EMBER_KEY_F32, false, 0},
      {NULL, 0, EMBER_KEY_F32, false, 0}},
     "olmo2's local layers rotate with the global base (llama.cpp reads rope.freq_base_swa and does not use it)"},
    {EMBER_ARCH_GRANITE, "granite", "Granite 3.x (dense)",
     EMBER_ROPE_NORM, EMBER_QK_NORM_NONE, EMBER_FFN_SILU, EMBER_ARCH_ROPE_FREQS, 0, 0,
     {{"logit_scale", HP(logit_scale), EMBER_KEY_F32, true, 1},
      {"residual_scale", HP(residual_scale), EMBER_KEY_F32, false, 0},
      {"embedding_scale", HP(embed_scale), EMBER_KEY_F32, false, 0},
      {"attention.scale", HP(attn_scale), EMBER_KEY_F32, false, 0},
      {"rope.scaling.finetuned", HP(nope_step), EMBER_KEY_BOOL, false, 1},
      {NULL, 0, EMBER_KEY_F32, false, 0}},
     "granite's rope.scaling.finetuned = false turns RoPE off in every layer, as in llama.cpp"},
    {EMBER_ARCH_QWEN3MOE, "qwen3moe", "Qwen3-MoE (Qwen3-30B-A3B, Qwen3-235B-A22B, Qwen3-Coder-30B-A3B)",
     EMBER_ROPE_NEOX, EMBER_QK_NORM_HEAD, EMBER_FFN_SILU, EMBER_ARCH_MOE, 0, 0,
     {{"expert_feed_forward_length", HP(expert_ffn), EMBER_KEY_U32, false, 0}, {NULL, 0, EMBER_KEY_F32, false, 0}},
     NULL},
    {EMBER_ARCH_GPT_OSS, "gpt-oss", "gpt-oss (gpt-oss-20b, gpt-oss-120b)",
     EMBER_ROPE_NEOX, EMBER_QK_NORM_NONE, EMBER_FFN_SWIGLU_OAI,
     EMBER_ARCH_MOE | EMBER_ARCH_QKV_BIAS | EMBER_ARCH_OUT_BIAS | EMBER_ARCH_SINKS | EMBER_ARCH_EXPERT_BIAS |
         EMBER_ARCH_FFN_NORM_POST | EMBER_ARCH_OUTPUT | EMBER_ARCH_SWA_COPY_SCALE, 0, 0,
     {{"expert_feed_forward_length", HP(expert_ffn), EMBER_KEY_U32, true, 0},
      {"attention.sliding_window", HP(swa_window), EMBER_KEY_U32, true, 128},
      {"attention.sliding_window_pattern", HP(swa_period), EMBER_KEY_U32, false, 2},
      {"rope.freq_base_swa", HP(rope_base_swa), EMBER_KEY_F32, false, 0},
      {NULL, 0, EMBER_KEY_F32, false, 0}},
     "gpt-oss's local layers rotate as its global ones (YaRN included), as llama.cpp copies the scale"},
};

const ember_semantic_key ember_semantic_keys[] = {
    {"attention.sliding_window", 0, 0, false},
    {"attn_logit_softcapping", 0, 0, false},
    {"final_logit_softcapping", 0, 0, false},
    {"logit_scale", 1, 0, false},
    {"residual_scale", 0, 1, false},
    {"embedding_scale", 0, 1, false},
    {"attention.scale", 0, 0, false},
    {"attention.temperature_scale", 0, 0, false},
    {"rope.scaling.yarn_beta_fast", 32, 32, false},
    {"rope.scaling.yarn_beta_slow", 1, 1, false},
    {"rope.scaling.yarn_log_multiplier", 0, 0, false},
    {"rope.scaling.yarn_ext_factor", 0, 0, true},
    {"rope.scaling.yarn_attn_factor", 0, 0, true},
    {"attention.key_length_swa", 0, 0, true},
    {"attention.value_length_swa", 0, 0, true},
    {"rope.dimension_count_swa", 0, 0, true},
    {"expert_shared_count", 0, 0, false},
    {"expert_weights_scale", 0, 1, false},
    {"expert_group_count", 0, 1, false},
    {"expert_shared_feed_forward_length", 0, 0, false},
    {NULL, 0, 0, false},
};

const ember_arch *ember_arch_find(const char *name, size_t n)
{
    for (int i = 0; i < EMBER_ARCH_COUNT; i++)
        if (strlen(TABLE[i].name) == n && memcmp(TABLE[i].name, name, n) == 0) return &TABLE[i];
    return NULL;
}

const ember_arch *ember_arch_get(ember_arch_id id)
{
    return id < EMBER_ARCH_COUNT ? &TABLE[id] : &TABLE[0];
}

const char *ember_arch_names(void)
{
    return "llama, qwen2, qwen3, gemma2, gemma3, phi3, mistral3, smollm3, olmo2, granite, qwen3moe, gpt-oss";
}

/* ---- the tensors of a layer ------------------------------------------------------ */

#define LT(f) offsetof(ember_layer_tensors, f)

typedef struct spec_list {
    ember_tensor_spec *s;
    uint32_t n;
} spec_list;

static ember_tensor_spec *add(spec_list *l, const char *part, const char *suffix, uint64_t ne0, uint64_t ne1,
                               bool required, size_t slot)
{
    ember_tensor_spec *t = &l->s[l->n++];
    snprintf(t->part, sizeof t->part, "%s", part);
    t->bias = strcmp(suffix, "bias") == 0;
    t->ne0 = ne0, t->ne1 = ne1, t->ne2 = 1;
    t->required = required;
    t->vector = ne1 == 1;
    t->slot = slot;
    return t;
}

static void attention_tensors(spec_list *l, const ember_arch *a, const ember_hparams *hp, bool fused_qkv)
{
    uint64_t dim = hp->dim, q = (uint64_t)hp->n_heads * hp->head_dim, kv = (uint64_t)hp->n_kv_heads * hp->head_dim;
    bool bias = (a->flags & EMBER_ARCH_QKV_BIAS) != 0;
    if (!(a->flags & EMBER_ARCH_NO_PRE_NORMS)) add(l, "attn_norm", "weight", dim, 1, true, LT(attn_norm));
    if (fused_qkv) {
        add(l, "attn_qkv", "weight", dim, q + 2 * kv, true, LT(wqkv));
        add(l, "attn_qkv", "bias", q + 2 * kv, 1, bias, LT(bqkv));
    } else {
        add(l, "attn_q", "weight", dim, q, true, LT(wq));
        add(l, "attn_k", "weight", dim, kv, true, LT(wk));
        add(l, "attn_v", "weight", dim, kv, true, LT(wv));
        add(l, "attn_q", "bias", q, 1, bias, LT(bq));
        add(l, "attn_k", "bias", kv, 1, bias, LT(bk));
        add(l, "attn_v", "bias", kv, 1, bias, LT(bv));
    }
    if (a->qk_norm == EMBER_QK_NORM_HEAD) {
        add(l, "attn_q_norm", "weight", hp->head_dim, 1, true, LT(q_norm));
        add(l, "attn_k_norm", "weight", hp->head_dim, 1, true, LT(k_norm));
    } else if (a->qk_norm == EMBER_QK_NORM_FULL) {
        add(l, "attn_q_norm", "weight", q, 1, true, LT(q_norm));
        add(l, "attn_k_norm", "weight", kv, 1, true, LT(k_norm));
    }
    add(l, "attn_output", "weight", q, dim, true, LT(wo));
    if (a->flags & EMBER_ARCH_OUT_BIAS) add(l, "attn_output", "bias", dim, 1, true, LT(bo));
    if (a->flags & EMBER_ARCH_SINKS) add(l, "attn_sinks", "weight", hp->n_heads, 1, true, LT(sinks));
    if (a->flags & EMBER_ARCH_POST_NORMS) add(l, "post_attention_norm", "weight", dim, 1, true, LT(attn_post_norm));
}

/* A row of F32 biases per expert ({n, n_expert}): read as floats, as a vector is. */
static void add_expert_bias(spec_list *l, const char *part, uint64_t n, uint64_t e, size_t slot)
{
    add(l, part, "bias", n, e, true, slot)->vector = true;
}

/* A mixture of experts: the router, then each expert matrix kind as one 3-D tensor (and
 * their biases where the family has them). */
static void expert_tensors(spec_list *l, const ember_arch *a, const ember_hparams *hp)
{
    uint64_t dim = hp->dim, ffn = hp->expert_ffn, e = hp->n_expert;
    add(l, "ffn_gate_inp", "weight", dim, e, true, LT(ffn_router));
    add(l, "ffn_gate_exps", "weight", dim, ffn, true, LT(gate_exps))->ne2 = e;
    add(l, "ffn_up_exps", "weight", dim, ffn, true, LT(up_exps))->ne2 = e;
    add(l, "ffn_down_exps", "weight", ffn, dim, true, LT(down_exps))->ne2 = e;
    if (!(a->flags & EMBER_ARCH_EXPERT_BIAS)) return;
    add(l, "ffn_gate_inp", "bias", e, 1, true, LT(router_b));
    add_expert_bias(l, "ffn_gate_exps", ffn, e, LT(gate_exps_b));
    add_expert_bias(l, "ffn_up_exps", ffn, e, LT(up_exps_b));
    add_expert_bias(l, "ffn_down_exps", dim, e, LT(down_exps_b));
}

static void ffn_tensors(spec_list *l, const ember_arch *a, const ember_hparams *hp)
{
    uint64_t dim = hp->dim, ffn = hp->ffn_dim;
    const char *norm = a->flags & EMBER_ARCH_FFN_NORM_POST ? "post_attention_norm" : "ffn_norm";
    if (!(a->flags & EMBER_ARCH_NO_PRE_NORMS)) add(l, norm, "weight", dim, 1, true, LT(ffn_norm));
    if (hp->n_expert) {
        expert_tensors(l, a, hp);
    } else if (a->flags & EMBER_ARCH_FUSED_UP) {
        add(l, "ffn_up", "weight", dim, 2 * ffn, true, LT(w_up));
    } else {
        add(l, "ffn_gate", "weight", dim, ffn, true, LT(w_gate));
        add(l, "ffn_up", "weight", dim, ffn, true, LT(w_up));
    }
    if (!hp->n_expert) add(l, "ffn_down", "weight", ffn, dim, true, LT(w_down));
    if (a->flags & EMBER_ARCH_POST_NORMS) add(l, "post_ffw_norm", "weight", dim, 1, true, LT(ffn_post_norm));
}

uint32_t ember_arch_layer_tensors(const ember_arch *a, const ember_hparams *hp, bool fused_qkv,
                                  ember_tensor_spec out[EMBER_MAX_LAYER_TENSORS])
{
    spec_list l = {out, 0};
    attention_tensors(&l, a, hp, fused_qkv);
    ffn_tensors(&l, a, hp);
    return l.n;
}
