/* model.h — a decoder-only transformer as read from a GGUF file: hyper-parameters and
 * the tensors of each layer, with every shape checked against the hyper-parameters.
 * Two architectures share this description (docs/models.md):
 *
 *   llama  Llama 2/3, TinyLlama, SmolLM, Mistral-style: adjacent-pair RoPE; Q/K/V
 *          biases optional (absent in almost every llama file).
 *   qwen2  Qwen 1.5/2/2.5: the same block with Q/K/V biases (required) and NeoX RoPE.
 *
 * Tensor names (llama.cpp's): token_embd.weight, output_norm.weight, output.weight
 * (absent = tied to token_embd), rope_freqs.weight (optional), blk.N.{attn_norm,attn_q,
 * attn_k,attn_v,attn_output,ffn_norm,ffn_gate,ffn_up,ffn_down}.weight and
 * blk.N.{attn_q,attn_k,attn_v}.bias. Matrices are row-major with ne[0] = input length:
 * attn_q is ne = {dim, n_heads*head_dim}; a bias is F32 with one value per output row.
 *
 * RoPE: for pair i (0 <= i < rope_dim/2) of each head at position pos,
 *   theta_i = (pos / rope_scale) * rope_base^(-2i/rope_dim) / freq_factor[i]
 * (freq_factor = rope_freqs.weight, all 1 when absent; rope_scale = 1 when unscaled)
 * rotates the pair
 *   EMBER_ROPE_NORM: (x[2i], x[2i+1])              llama.cpp's "normal" mode (llama)
 *   EMBER_ROPE_NEOX: (x[i], x[i + rope_dim/2])     llama.cpp's NeoX mode (qwen2)
 * as (a, b) -> (a cos - b sin, a sin + b cos). Dimensions from rope_dim on are left alone. */
#ifndef EMBER_MODEL_H
#define EMBER_MODEL_H

#include "gguf.h"

typedef enum ember_arch {
    EMBER_ARCH_LLAMA = 0,
    EMBER_ARCH_QWEN2 = 1,
} ember_arch;

/* Which elements of a head RoPE pairs up (see above). Zero is the llama default, so a
 * hand-built ember_hparams gets it without saying so. */
typedef enum ember_rope_style {
    EMBER_ROPE_NORM = 0,
    EMBER_ROPE_NEOX = 1,
} ember_rope_style;

typedef struct ember_hparams {
    uint32_t n_vocab, dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, ctx_len, rope_dim;
    float rope_base, rms_eps;
    /* Added for qwen2 and Llama 3; zero in a hand-built description means the default. */
    ember_rope_style rope_style;
    float rope_scale;        /* linear RoPE scaling factor: positions are divided by it.
                                1 = none; 0 is read as 1 (use ember_rope_pos_scale) */
    uint32_t rope_orig_ctx;  /* <arch>.rope.scaling.original_context_length, 0 if absent
                                (recorded for messages; linear scaling does not use it) */
} ember_hparams;

typedef struct ember_layer_tensors {
    const ember_gguf_tensor *attn_norm, *wq, *wk, *wv, *wo;
    const ember_gguf_tensor *ffn_norm, *w_gate, *w_up, *w_down;
    /* F32 biases added right after the Q, K and V projections (before RoPE); each is
     * NULL when the file has none (llama: usually; qwen2: never). */
    const ember_gguf_tensor *bq, *bk, *bv;
} ember_layer_tensors;

typedef struct ember_llama {
    ember_hparams hp;
    const ember_gguf_tensor *tok_embd, *output_norm, *output; /* output == tok_embd if tied */
    ember_layer_tensors *layers;                               /* n_layers, owned */
    ember_arch arch;
    /* rope_freqs.weight: F32, rope_dim/2 finite positive values, theta_i is divided by
     * value i (Llama 3.1+ frequency scaling); NULL when absent. */
    const ember_gguf_tensor *rope_freqs;
    uint32_t pooling;   /* <arch>.pooling_type as declared (llama.cpp's numbering, the
                           values of ember_pooling: 0 none, 1 mean, 2 cls, 3 last, 4 rank);
                           0 when absent. Embeddings use ember_llama_pooling. */
} ember_llama;

/* Reads general.architecture ("llama" or "qwen2"; anything else is
 * EMBER_ERR_UNSUPPORTED naming it), the <arch>.* keys and the tensors.
 * Keys (<arch> = llama or qwen2): <arch>.embedding_length, <arch>.block_count,
 * <arch>.feed_forward_length, <arch>.attention.head_count, <arch>.attention.head_count_kv
 * (default = head_count), <arch>.context_length, <arch>.rope.freq_base (default 10000),
 * <arch>.rope.dimension_count (default head_dim), <arch>.attention.layer_norm_rms_epsilon
 * (default 1e-5), <arch>.vocab_size (default: length of tokenizer.ggml.tokens, else
 * token_embd rows), <arch>.rope.scaling.type ("none" or "linear"; "yarn", "longrope" and
 * any other type are EMBER_ERR_UNSUPPORTED naming it), <arch>.rope.scaling.factor (or the
 * older <arch>.rope.scale_linear), <arch>.rope.scaling.original_context_length,
 * <arch>.pooling_type (0..4; embeddings' pooling).
 * Norms, biases and rope_freqs must be F32. Bias tensors Ember does not apply
 * (attn_output, ffn_*) are refused rather than ignored. Any disagreement is
 * EMBER_ERR_FORMAT naming the file and the tensor or key. */
ember_status ember_llama_load(const ember_gguf *g, ember_llama *out, ember_err *err);
void ember_llama_free(ember_llama *m);

/* "llama", "qwen2". */
const char *ember_arch_name(ember_arch a);

/* The factor positions are multiplied by before RoPE: 1 / rope_scale, or 1 when
 * rope_scale is 0 or 1. */
float ember_rope_pos_scale(const ember_hparams *hp);

/* What a model uses beyond plain llama, so that a backend that lacks a feature can
 * refuse the model instead of computing something else. */
enum {
    EMBER_FEAT_QKV_BIAS = 1u << 0,     /* some layer has a Q, K or V bias */
    EMBER_FEAT_ROPE_NEOX = 1u << 1,    /* rope_style == EMBER_ROPE_NEOX */
    EMBER_FEAT_ROPE_FREQS = 1u << 2,   /* rope_freqs != NULL */
    EMBER_FEAT_ROPE_SCALE = 1u << 3,   /* ember_rope_pos_scale != 1 */
};
uint32_t ember_llama_features(const ember_llama *m);
/* The pooling embeddings use by default (an ember_pooling): the declared one, LAST where
 * the file declares none (include/ember.h says why). */
uint32_t ember_llama_pooling(const ember_llama *m);
/* "Q/K/V biases, NeoX RoPE" for the bits set in features ("none" when 0). */
void ember_llama_features_str(uint32_t features, char *buf, size_t cap);

#endif
