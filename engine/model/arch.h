/* arch.h — the architectures Ember runs, as one table (arch.c): for each family, the
 * GGUF key prefix, the keys it reads beyond the common ones, the tensors a layer has and
 * the recipe both forward passes follow (norms, QK-norm, RoPE style, sliding-window and
 * NoPE layers, soft-caps, scales, the FFN's activation). The loader (model.c) and
 * `ember make-test-model` read the same entries, so adding a family is its entry, the
 * kernels it needs that do not exist yet, and its tests (docs/models.md).
 *
 * Everything here follows llama.cpp's src/models/<family>.cpp at the release npm
 * node-llama-cpp 3.21.1 carries: its key names, its defaults, its layer formulas. */
#ifndef EMBER_ARCH_H
#define EMBER_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "hyperparams.h"

typedef enum ember_arch_id {
    EMBER_ARCH_LLAMA = 0,
    EMBER_ARCH_QWEN2,
    EMBER_ARCH_QWEN3,
    EMBER_ARCH_GEMMA2,
    EMBER_ARCH_GEMMA3,
    EMBER_ARCH_PHI3,
    EMBER_ARCH_MISTRAL3,
    EMBER_ARCH_SMOLLM3,
    EMBER_ARCH_OLMO2,
    EMBER_ARCH_GRANITE,
    EMBER_ARCH_QWEN3MOE,
    EMBER_ARCH_GPT_OSS,
    EMBER_ARCH_COUNT
} ember_arch_id;

/* What a family's layers do beyond llama's block (ember_arch.flags). */
enum {
    EMBER_ARCH_QKV_BIAS = 1u << 0,      /* Q, K and V biases are required (qwen2) */
    EMBER_ARCH_POST_NORMS = 1u << 1,    /* RMSNorm of attention's and the FFN's outputs
                                           before their residual adds (gemma2/3, olmo2) */
    EMBER_ARCH_NO_PRE_NORMS = 1u << 2,  /* no RMSNorm before attention and the FFN (olmo2) */
    EMBER_ARCH_EMBED_SQRT = 1u << 3,    /* embeddings times sqrt(dim) (gemma) */
    EMBER_ARCH_TIED = 1u << 4,          /* the LM head is token_embd: no output.weight (gemma2) */
    EMBER_ARCH_OUTPUT = 1u << 5,        /* output.weight is required (olmo2) */
    EMBER_ARCH_FUSED_UP = 1u << 6,      /* ffn_up holds gate | up (2 * ffn rows), no ffn_gate (phi3) */
    EMBER_ARCH_FUSED_QKV = 1u << 7,     /* its files hold attn_qkv (phi3): what make-test-model
                                           writes; every family loads fused or split Q/K/V */
    EMBER_ARCH_ROPE_FREQS = 1u << 8,    /* may have rope_freqs.weight (llama, mistral3, granite) */
    EMBER_ARCH_LONGROPE = 1u << 9,      /* may have rope_factors_long/short.weight (phi3) */
    EMBER_ARCH_SWA_PLAIN_ROPE = 1u << 10, /* local layers rotate with the global base, unscaled,
                                             no YaRN (olmo2) */
    EMBER_ARCH_SWA_COPY_SCALE = 1u << 11, /* local layers keep the global linear factor (gemma2);
                                             else they are unscaled */
    EMBER_ARCH_EXPERTS = 1u << 12,      /* an expert_count > 0 makes every FFN a mixture of
                                           experts of feed_forward_length each (llama: Mixtral) */
    EMBER_ARCH_MOE = 1u << 13,          /* every FFN is a mixture of experts (qwen3moe) */
    EMBER_ARCH_OUT_BIAS = 1u << 14,     /* attn_output has a bias (gpt-oss) */
    EMBER_ARCH_SINKS = 1u << 15,        /* attn_sinks: a logit per query head that joins
                                           every softmax's denominator (gpt-oss) */
    EMBER_ARCH_EXPERT_BIAS = 1u << 16,  /* the router and every expert matrix have biases,
                                           the k weights are a softmax over the k chosen
                                           logits, not renormalised (gpt-oss) */
    EMBER_ARCH_FFN_NORM_POST = 1u << 17, /* the FFN's pre-norm is named post_attention_norm
                                            (gpt-oss), as llama.cpp's loader reads it */
};

/* The tensors of one layer, as the family's table lists them (ember_arch_layer_tensors;
 * the loader checks every shape). */
typedef struct ember_layer_tensors {
    const ember_gguf_tensor *attn_norm, *wq, *wk, *wv, *wo;
    const ember_gguf_tensor *ffn_norm, *w_gate, *w_up, *w_down;
    /* F32 biases added right after the Q, K and V projections (before RoPE); each is
     * NULL when the file has none (llama: usually; qwen2: never). */
    const ember_gguf_tensor *bq, *bk, *bv;
    /* Q, K and V as one matrix (attn_qkv: {dim, q + 2 kv}) and its bias; wq, wk, wv, bq,
     * bk, bv are NULL then. NULL when split. */
    const ember_gguf_tensor *wqkv, *bqkv;
    /* QK-norm weights ({head_dim} per head, or {q} and {kv} over the projection). */
    const ember_gguf_tensor *q_norm, *k_norm;
    /* Post-norms: of attention's output and of the FFN's, before the residual adds. */
    const ember_gguf_tensor *attn_post_norm, *ffn_post_norm;
    /* attn_norm and ffn_norm are NULL where the family has no pre-norms; w_gate is NULL
     * where ffn_up holds gate | up (2 * ffn_dim rows). */
    /* A mixture of experts (w_gate, w_up, w_down NULL then): the router ffn_gate_inp
     * {dim, n_expert} and the experts' matrices, 3-D in ggml's order: gate and up
     * {dim, expert_ffn, n_expert}, down {expert_ffn, dim, n_expert}; expert e's matrix is
     * the e-th slab of rows, laid out as a 2-D matrix of its type. */
    const ember_gguf_tensor *ffn_router, *gate_exps, *up_exps, *down_exps;
    /* gpt-oss: attn_output's bias {dim}; the sinks {n_heads}; the router's bias
     * {n_expert} and the experts' biases, F32 rows per expert: gate and up
     * {expert_ffn, n_expert}, down {dim, n_expert}. NULL where the family has none. */
    const ember_gguf_tensor *bo, *sinks, *router_b, *gate_exps_b, *up_exps_b, *down_exps_b;
} ember_layer_tensors;

/* How a layer reads a family's key (ember_arch_key.how). */
typedef enum ember_key_kind {
    EMBER_KEY_F32,
    EMBER_KEY_U32,
    EMBER_KEY_BOOL,
} ember_key_kind;

#define EMBER_KEY_IGNORED ((size_t)-1) /* read as llama.cpp reads it, then not applied */

/* A key "<arch>.<suffix>" a family reads beyond the common ones: the ember_hparams field
 * it fills (offsetof; EMBER_KEY_IGNORED: none) and the value when absent. */
typedef struct ember_arch_key {
    const char *suffix;
    size_t field;
    ember_key_kind kind;
    bool required;
    float def;
} ember_arch_key;

#define EMBER_ARCH_MAX_KEYS 8

typedef struct ember_arch {
    ember_arch_id id;
    const char *name;          /* general.architecture, and the prefix of its keys */
    const char *models;        /* the models it covers, for messages and docs */
    ember_rope_style rope;
    ember_qk_norm qk_norm;
    ember_ffn_act act;
    uint32_t flags;            /* EMBER_ARCH_* */
    uint32_t nope_step;        /* layer l has no RoPE when (l + 1) % nope_step == 0 (smollm3: 4) */
    uint32_t big_layers;       /* the block_count of the one size whose queries are scaled by
                                  1/sqrt(dim/heads) instead of 1/sqrt(head_dim) (Gemma 2 27B:
                                  46, Gemma 3 27B: 62), as llama.cpp decides; 0: none */
    ember_arch_key keys[EMBER_ARCH_MAX_KEYS]; /* up to the first with suffix NULL */
    const char *note;          /* what llama.cpp does differently from the Hugging Face model,
                                  and Ember with it (docs/models.md); NULL: nothing */
} ember_arch;

/* The family whose general.architecture is name (n bytes), or NULL. */
const ember_arch *ember_arch_find(const char *name, size_t n);
/* The table entry of id. */
const ember_arch *ember_arch_get(ember_arch_id id);
/* "llama, qwen2, qwen3, ...": every family, for messages. */
const char *ember_arch_names(void);

/* The keys that change what a model computes, which some family reads: a file of
 * another family that sets one to anything but its neutral value is refused by name
 * rather than run without it. Up to the entry with suffix NULL. */
typedef struct ember_semantic_key {
    const char *suffix;
    float neutral, neutral2;   /* values that change nothing (neutral2: a second one) */
    bool any_presence;         /* present at all is refused (no neutral value) */
} ember_semantic_key;
extern const ember_semantic_key ember_semantic_keys[];

/* One tensor of a layer: blk.N.<part>.weight (or .bias), of shape {ne0, ne1, ne2} (ne1 =
 * 1: a vector, F32 in the file; ne2 > 1: experts). slot: offsetof(ember_layer_tensors,
 * its field). */
typedef struct ember_tensor_spec {
    char part[24];
    bool bias;                 /* blk.N.<part>.bias, else .weight */
    uint64_t ne0, ne1, ne2;
    bool required;
    bool vector;               /* a norm or a bias: F32, read as floats */
    size_t slot;
} ember_tensor_spec;

#define EMBER_MAX_LAYER_TENSORS 32

/* The tensors a layer of family a has with hyper-parameters hp (head_dim, n_heads, ...),
 * Q/K/V fused into attn_qkv or not: written into out, returns their count. */
uint32_t ember_arch_layer_tensors(const ember_arch *a, const ember_hparams *hp, bool fused_qkv,
                                  ember_tensor_spec out[EMBER_MAX_LAYER_TENSORS]);

#endif
