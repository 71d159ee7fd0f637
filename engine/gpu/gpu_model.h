/* gpu_model.h — a model's weights in GPU memory (gpu_model.c): Q/K/V stacked into one
 * matrix and gate/up into another, so that each is one dispatch. Library-internal. */
#ifndef EMBER_GPU_MODEL_H
#define EMBER_GPU_MODEL_H

#include "engine/model/model.h"
#include "gpu_weight.h"
#include "kernels.h"

typedef struct ember_gpu_layer {
    ember_vk_span attn_norm, ffn_norm;         /* f32 [dim]; size 0 without pre-norms */
    ember_vk_span bias_qkv;                    /* f32 [bq | bk | bv] (zeros for an absent
                                                  one); size 0 when the layer has none */
    ember_vk_span qk_norm;                     /* f32 [q_norm | k_norm]; size 0 without */
    ember_vk_span attn_post_norm, ffn_post_norm; /* f32 [dim]; size 0 without post-norms */
    ember_gpu_weight qkv, wo, gate_up, down;   /* qkv and gate_up: the file's fused matrix
                                                  where it has one; no parts in a mixture */
    ember_gpu_weight router;                   /* a mixture's: {dim} -> n_expert logits */
    ember_gpu_weight gate_up_exps, down_exps;  /* its experts (expert_rows: 2 F and dim; gate
                                                  and up interleaved per expert) */
    /* gpt-oss (size 0 where the layer has none): wo's bias f32 [dim]; the sinks f32
     * [n_heads]; the router's bias f32 [n_expert]; the experts' biases in their stacks' row
     * order: f32 [n_expert][gate F | up F] and [n_expert][dim]. */
    ember_vk_span bo, sinks, router_b, gate_up_exps_b, down_exps_b;
} ember_gpu_layer;

typedef struct ember_gpu_model {
    ember_vk *vk;                 /* borrowed */
    ember_kernels *kernels;       /* owned */
    ember_vk_arena *arena;        /* owned: all weights */
    ember_hparams hp;
    ember_gpu_weight tok_embd, output; /* output is a copy of tok_embd's descriptor if tied */
    ember_vk_span output_norm;
    ember_vk_span rope_freqs;     /* f32 [rope_dim / 2]; size 0 when the model has none */
    ember_gpu_layer *layers;
    const ember_gguf *uploading;  /* while create uploads: ember_gpu_model_opts.file */
} ember_gpu_model;

/* Reports upload progress (fraction of weight bytes done, 0..1); fn may be NULL. */
typedef struct ember_progress {
    void (*fn)(void *user, float fraction);
    void *user;
} ember_progress;

typedef struct ember_gpu_model_opts {
    uint64_t max_part_bytes;        /* bounds each binding (0 = device limit; tests use a
                                       small value to exercise tensors bound in parts) */
    ember_progress progress;        /* fn may be NULL */
    const char *pipeline_cache_dir; /* folder of the on-disk pipeline cache; NULL: none */
    const ember_gguf *file;         /* the file m was read from: each matrix's pages are
                                       released once uploaded (ember_gguf_release); NULL:
                                       they stay */
    int norm_fusion;                /* ember_kernels_opts.norm_fusion, attn_split, */
    int attn_split;                 /* attn_chunk, linear_lanes, int_dot, */
    uint32_t attn_chunk;            /* fp16_dot, linear_stage, matrix and coop (tests force
                                       them) */
    uint32_t linear_lanes;
    int int_dot;
    int fp16_dot;
    int linear_stage;
    int matrix;
    int coop;
} ember_gpu_model_opts;

/* Uploads m's weights and makes the pipelines its forward pass records, but for
 * attention's (per KV type: ember_kernels_check_attn, when an engine is made). */
ember_status ember_gpu_model_create_opts(ember_vk *vk, const ember_llama *m, const ember_gpu_model_opts *o,
                                         ember_gpu_model **out, ember_err *err);
/* The same without an on-disk pipeline cache. progress may be NULL. */
ember_status ember_gpu_model_create(ember_vk *vk, const ember_llama *m, uint64_t max_part_bytes,
                                    const ember_progress *progress, ember_gpu_model **out, ember_err *err);
void ember_gpu_model_free(ember_gpu_model *g);
/* Device bytes of m's weights as ember_gpu_model_create uploads them (bar alignment), read
 * from the file's description alone: a model's size before it is loaded. */
uint64_t ember_gpu_model_bytes(const ember_llama *m);
/* Of those, a mixture's expert matrices (0 for a dense model). */
uint64_t ember_gpu_model_expert_bytes(const ember_llama *m);

#endif
