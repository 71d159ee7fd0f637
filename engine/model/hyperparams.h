/* hyperparams.h — the numbers that describe a model and the recipe its layers follow,
 * as the loader (model.c, hparams.c) fills them from a GGUF file's keys: types only.
 * Zero in a field means its default or "none", so a hand-built ember_hparams is plain
 * llama. recipe.h derives each layer's attention from them; arch.h's table says what
 * each family sets. */
#ifndef EMBER_HYPERPARAMS_H
#define EMBER_HYPERPARAMS_H

#include <stdbool.h>
#include <stdint.h>

/* Which elements of a head RoPE pairs up (model.h, docs/models.md). Zero is the llama default. */
typedef enum ember_rope_style {
    EMBER_ROPE_NORM = 0,
    EMBER_ROPE_NEOX = 1,
} ember_rope_style;

/* RMSNorm of the queries and keys after their projections, before RoPE. */
typedef enum ember_qk_norm {
    EMBER_QK_NORM_NONE = 0,
    EMBER_QK_NORM_HEAD = 1,  /* each head over its head_dim values (qwen3, gemma3) */
    EMBER_QK_NORM_FULL = 2,  /* the whole projection at once (olmo2) */
} ember_qk_norm;

/* The activation of the gated FFN's gate: down(act(gate) * up). */
typedef enum ember_ffn_act {
    EMBER_FFN_SILU = 0,       /* SwiGLU */
    EMBER_FFN_GELU_TANH = 1,  /* GeGLU, GELU by its tanh approximation (gemma) */
    EMBER_FFN_SWIGLU_OAI = 2, /* gpt-oss: g = min(gate, L), u = clamp(up, -L, L),
                                 g * sigmoid(A g) * (u + 1), A and L below */
} ember_ffn_act;

/* gpt-oss's clamped SwiGLU (llama.cpp's ggml_swiglu_oai as build_moe_ffn calls it). */
#define EMBER_SWIGLU_OAI_ALPHA 1.702f
#define EMBER_SWIGLU_OAI_LIMIT 7.0f

/* The largest mixtures the kernels route (llama.cpp's LLAMA_MAX_EXPERTS is 512). */
#define EMBER_MAX_EXPERTS 512
#define EMBER_MAX_EXPERTS_USED 32

/* How a mixture of experts weighs the experts a token picks (llama.cpp's gating funcs). */
typedef enum ember_expert_gating {
    EMBER_GATING_SOFTMAX = 0,        /* softmax over every expert, then the top k (Mixtral,
                                        Qwen3-MoE), renormalised over the k where norm is set */
    EMBER_GATING_SOFTMAX_WEIGHT = 1, /* the top k of the logits, then softmax over those k (gpt-oss) */
} ember_expert_gating;

/* How RoPE is scaled beyond the base (<arch>.rope.scaling.type). */
typedef enum ember_rope_scaling {
    EMBER_ROPE_SCALING_LINEAR = 0,  /* positions divided by rope_scale (1: none) */
    EMBER_ROPE_SCALING_YARN = 1,    /* YaRN: per-pair blend of scaled and unscaled angles */
    EMBER_ROPE_SCALING_NONE = 2,    /* "none": no scaling whatever the factor */
} ember_rope_scaling;

/* Bits of ember_hparams.recipe: what a layer does beyond llama's block. */
enum {
    EMBER_RECIPE_POST_NORMS = 1u << 0,   /* RMSNorm of attention's and the FFN's outputs */
    EMBER_RECIPE_NO_PRE_NORMS = 1u << 1, /* no RMSNorm before attention and the FFN */
    EMBER_RECIPE_SWA_PLAIN_ROPE = 1u << 2, /* local layers: global base, no scaling */
};

typedef struct ember_hparams {
    uint32_t n_vocab, dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, ctx_len, rope_dim;
    float rope_base, rms_eps;
    /* Added for qwen2 and Llama 3; zero in a hand-built description means the default. */
    ember_rope_style rope_style;
    float rope_scale;        /* RoPE scaling factor (linear or YaRN): positions are divided
                                by it. 1 = none; 0 is read as 1 (use ember_rope_pos_scale) */
    uint32_t rope_orig_ctx;  /* <arch>.rope.scaling.original_context_length, 0 if absent
                                (YaRN's and LongRoPE's original context; ctx_len then) */
    /* Added for the families of arch.h; zero means none (or the default named). */
    ember_rope_scaling rope_scaling;
    float rope_attn_factor;  /* <arch>.rope.scaling.attn_factor: cos and sin times it (0 = 1) */
    float yarn_beta_fast, yarn_beta_slow; /* YaRN's ramp (0 = llama.cpp's 32 and 1) */
    float yarn_log_mul;      /* <arch>.rope.scaling.yarn_log_multiplier (mistral3) */
    float attn_scale;        /* q.k is multiplied by it; 0: 1/sqrt(head_dim) */
    float attn_softcap;      /* attention logits s -> c tanh(s / c); 0: none */
    float final_softcap;     /* the same on the output logits */
    float embed_scale;       /* embeddings times it; 0: 1 */
    float residual_scale;    /* a block's output times it before its residual add; 0: 1 */
    float logit_scale;       /* logits times it (granite: 1 / <arch>.logit_scale); 0: 1 */
    float attn_temp_scale;   /* queries times log(floor(pos / rope_orig_ctx) + 1) * it + 1
                                (mistral3's attention temperature); 0: none */
    uint32_t swa_window;     /* local layers attend to the last swa_window positions (the
                                token's own included); 0: every layer is global */
    uint32_t swa_period;     /* layer l is local when l % swa_period < swa_period - 1
                                (llama.cpp's pattern); 0: every layer local */
    float rope_base_swa;     /* local layers' RoPE base (0: rope_base) */
    uint32_t nope_step;      /* layer l has no RoPE when (l + 1) % nope_step == 0; 0: none */
    ember_qk_norm qk_norm;
    ember_ffn_act act;
    uint32_t recipe;         /* EMBER_RECIPE_* */
    bool swa_scaled;         /* local layers keep rope_scale (gemma2); else unscaled */
    /* Mixture of experts (docs/models.md); n_expert 0: a dense FFN. */
    uint32_t n_expert;       /* <arch>.expert_count */
    uint32_t n_expert_used;  /* <arch>.expert_used_count: experts a token runs (k) */
    uint32_t expert_ffn;     /* an expert's FFN width (qwen3moe: expert_feed_forward_length) */
    ember_expert_gating expert_gating;
    bool expert_norm;        /* the k weights divided by their sum (clamped at 2^-14) */
    float expert_scale;      /* the k weights times it (0: 1) */
} ember_hparams;

/* How one layer attends, derived from ember_hparams (ember_layer_attn_of): what both
 * passes give rope_store and attention for that layer. */
typedef struct ember_layer_attn {
    uint32_t window;         /* 0: every earlier position, else the last window */
    bool rope;               /* false: a NoPE layer (no rotation at all) */
    float rope_base;
    float pos_scale;         /* positions times it (1 / the layer's linear factor) */
    float ext_factor;        /* YaRN's blend of unscaled angles (0: none) */
    float corr_lo, corr_hi;  /* YaRN's ramp over pair indices */
    float mscale;            /* cos and sin times it (YaRN, LongRoPE attn_factor) */
} ember_layer_attn;

#endif
