/* model.h — a decoder-only transformer as read from a GGUF file: hyper-parameters, the
 * recipe its layers follow and the tensors of each layer, with every shape checked
 * against the hyper-parameters. The families (llama, qwen2, qwen3, gemma2, gemma3, phi3,
 * mistral3, smollm3, olmo2, granite, qwen3moe) are entries of one table (arch.h); this description
 * is what both forward passes read (docs/models.md).
 *
 * Tensor names (llama.cpp's): token_embd.weight, output_norm.weight, output.weight
 * (absent = tied to token_embd), rope_freqs.weight or rope_factors_long/short.weight
 * (optional), and per layer blk.N.<part>.weight/.bias as arch.c lists them. Matrices are
 * row-major with ne[0] = input length: attn_q is ne = {dim, n_heads*head_dim}; a bias or
 * a norm is F32 with one value per output row.
 *
 * RoPE: for pair i (0 <= i < rope_dim/2) of each head at position pos,
 *   theta_i = (pos / rope_scale) * rope_base^(-2i/rope_dim) / freq_factor[i]
 * (freq_factor = rope_freqs.weight, all 1 when absent; rope_scale = 1 when unscaled;
 * YaRN blends it with the unscaled angle per pair, ember_layer_attn) rotates the pair
 *   EMBER_ROPE_NORM: (x[2i], x[2i+1])              llama.cpp's "normal" mode (llama)
 *   EMBER_ROPE_NEOX: (x[i], x[i + rope_dim/2])     llama.cpp's NeoX mode (qwen2)
 * as (a, b) -> (a cos - b sin, a sin + b cos). Dimensions from rope_dim on are left alone. */
#ifndef EMBER_MODEL_H
#define EMBER_MODEL_H

#include "arch.h"
#include "gguf.h"
#include "recipe.h"

typedef struct ember_llama {
    ember_hparams hp;
    const ember_gguf_tensor *tok_embd, *output_norm, *output; /* output == tok_embd if tied */
    ember_layer_tensors *layers;                               /* n_layers, owned */
    ember_arch_id arch;
    const ember_arch *desc;                                    /* its table entry (arch.h) */
    /* rope_freqs.weight: F32, rope_dim/2 finite positive values, theta_i is divided by
     * value i (Llama 3.1+ frequency scaling); for LongRoPE (phi3) rope_factors_long when
     * ctx_len exceeds rope_orig_ctx, else rope_factors_short, as llama.cpp picks them for
     * a context of the file's length; NULL when absent. */
    const ember_gguf_tensor *rope_freqs;
    uint32_t pooling;   /* <arch>.pooling_type as declared (llama.cpp's numbering, the
                           values of ember_pooling: 0 none, 1 mean, 2 cls, 3 last, 4 rank);
                           0 when absent. Embeddings use ember_llama_pooling. */
} ember_llama;

/* Reads general.architecture (a family of arch.h; anything else is
 * EMBER_ERR_UNSUPPORTED naming it and the families Ember runs), the <arch>.* keys and the
 * tensors. Common keys: <arch>.embedding_length, .block_count, .feed_forward_length,
 * .attention.head_count, .attention.head_count_kv (default = head_count),
 * .attention.key_length and .value_length (default dim / head_count; they must be
 * equal), .context_length, .rope.freq_base (default 10000), .rope.dimension_count
 * (default head_dim), .attention.layer_norm_rms_epsilon (default 1e-5), .vocab_size
 * (default: length of tokenizer.ggml.tokens, else token_embd rows),
 * .rope.scaling.type ("none", "linear", "yarn"; "longrope" with the factor tensors of a
 * family that has them; others refused by name), .rope.scaling.factor (or the older
 * .rope.scale_linear), .rope.scaling.attn_factor, .rope.scaling.original_context_length,
 * .pooling_type (0..4; embeddings' pooling); then the family's own keys (arch.c). A key
 * that changes the computation which the family does not read (ember_semantic_keys) is
 * refused by name unless neutral, and so is every tensor the family does not use.
 * Norms, biases and rope_freqs must be F32. Any disagreement is EMBER_ERR_FORMAT naming
 * the file and the tensor or key. */
ember_status ember_llama_load(const ember_gguf *g, ember_llama *out, ember_err *err);
void ember_llama_free(ember_llama *m);

/* The tensors layer lt has (its non-NULL fields) into out; returns their count. */
uint32_t ember_layer_tensor_list(const ember_layer_tensors *lt, const ember_gguf_tensor *out[EMBER_MAX_LAYER_TENSORS]);

/* "llama", "qwen2", ...: general.architecture of the family. */
const char *ember_arch_name(ember_arch_id a);

/* What a model uses beyond plain llama, so that a backend that lacks a feature can
 * refuse the model instead of computing something else. */
enum {
    EMBER_FEAT_QKV_BIAS = 1u << 0,     /* some layer has a Q, K or V bias */
    EMBER_FEAT_ROPE_NEOX = 1u << 1,    /* rope_style == EMBER_ROPE_NEOX */
    EMBER_FEAT_ROPE_FREQS = 1u << 2,   /* rope_freqs != NULL */
    EMBER_FEAT_ROPE_SCALE = 1u << 3,   /* ember_rope_pos_scale != 1 */
    EMBER_FEAT_QK_NORM = 1u << 4,      /* qk_norm != NONE */
    EMBER_FEAT_POST_NORMS = 1u << 5,   /* EMBER_RECIPE_POST_NORMS */
    EMBER_FEAT_NO_PRE_NORMS = 1u << 6, /* EMBER_RECIPE_NO_PRE_NORMS */
    EMBER_FEAT_WINDOW = 1u << 7,       /* sliding-window layers */
    EMBER_FEAT_NOPE = 1u << 8,         /* layers without RoPE */
    EMBER_FEAT_SOFTCAP = 1u << 9,      /* attention or final logit soft-capping */
    EMBER_FEAT_YARN = 1u << 10,        /* YaRN RoPE scaling */
    EMBER_FEAT_GEGLU = 1u << 11,       /* GeGLU FFN */
    EMBER_FEAT_SCALES = 1u << 12,      /* embedding, residual, logit or attention scales,
                                          or the attention temperature */
    EMBER_FEAT_FUSED = 1u << 13,       /* fused QKV or gate|up matrices */
    EMBER_FEAT_PARTIAL_ROPE = 1u << 14,/* rope_dim < head_dim */
    EMBER_FEAT_HEAD_DIM = 1u << 15,    /* head_dim != dim / n_heads (key_length) */
    EMBER_FEAT_MOE = 1u << 16,         /* mixture-of-experts FFNs */
    EMBER_FEAT_SINKS = 1u << 17,       /* attention sinks (gpt-oss) */
    EMBER_FEAT_SWIGLU_OAI = 1u << 18,  /* clamped SwiGLU (gpt-oss) */
    EMBER_FEAT_BIASES = 1u << 19,      /* biases of attn_output, the router or the experts */
};
uint32_t ember_llama_features(const ember_llama *m);
/* The pooling embeddings use by default (an ember_pooling): the declared one, LAST where
 * the file declares none (include/ember.h says why). */
uint32_t ember_llama_pooling(const ember_llama *m);
/* The name of feature bit i ("Q/K/V biases" for bit 0), NULL past the last. */
const char *ember_llama_feature_name(uint32_t i);
/* "Q/K/V biases, NeoX RoPE" for the bits set in features ("none" when 0). */
void ember_llama_features_str(uint32_t features, char *buf, size_t cap);

#endif
