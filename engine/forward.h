/* forward.h — the transformer forward pass on the GPU.
 *
 * ember_gpu_model holds the weights in GPU memory (Q/K/V stacked into one matrix and
 * gate/up into another, so each is one dispatch). ember_forward holds what one engine
 * needs per step: activations for up to max_tokens tokens, the paged KV pool, the step
 * inputs and the read-back buffers, and one command buffer.
 *
 * One call to ember_forward_run = one command buffer = one submit: a ragged batch of
 * tokens from any number of sequences, each reading its KV through its block table. */
#ifndef EMBER_FORWARD_H
#define EMBER_FORWARD_H

#include "kernels.h"
#include "model.h"

typedef struct ember_gpu_layer {
    ember_vk_span attn_norm, ffn_norm;         /* f32 [dim] */
    ember_vk_span bias_qkv;                    /* f32 [bq | bk | bv] (zeros for an absent
                                                  one); size 0 when the layer has none */
    ember_gpu_weight qkv, wo, gate_up, down;
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
} ember_gpu_model;

/* Reports upload progress (fraction of weight bytes done, 0..1); fn may be NULL. */
typedef struct ember_progress {
    void (*fn)(void *user, float fraction);
    void *user;
} ember_progress;

/* Uploads m's weights. max_part_bytes bounds each binding (0 = device limit; tests use a
 * small value to exercise tensors bound in parts). progress may be NULL. */
ember_status ember_gpu_model_create(ember_vk *vk, const ember_llama *m, uint64_t max_part_bytes,
                                    const ember_progress *progress, ember_gpu_model **out, ember_err *err);
void ember_gpu_model_free(ember_gpu_model *g);

/* One step's input, in host memory. Token i is at position pos[i] of sequence slot
 * seq[i]; block_tables is [max_seqs][max_blocks_per_seq] (only the rows of slots used in
 * this batch are read); logits are produced for the token rows listed in logit_rows. */
typedef struct ember_batch {
    uint32_t n_tokens;
    const uint32_t *tokens, *pos, *seq;
    const uint32_t *block_tables;
    uint32_t n_logits;
    const uint32_t *logit_rows;
} ember_batch;

typedef struct ember_forward_opts {
    uint32_t max_tokens;          /* tokens per step */
    uint32_t max_seqs;            /* sequence slots */
    uint32_t n_blocks, block_size;/* the KV pool */
    uint32_t max_blocks_per_seq;  /* block table width */
    ember_kv_type kv_type;        /* how the pool stores K and V (default F32) */
} ember_forward_opts;

typedef struct ember_forward ember_forward;

ember_status ember_forward_create(ember_gpu_model *g, const ember_forward_opts *o,
                                  ember_forward **out, ember_err *err);
void ember_forward_free(ember_forward *f);

/* Runs one step. logits (n_logits x n_vocab floats) and argmax (n_logits ids) are
 * optional outputs. *gpu_ms (optional) receives the GPU time of the step when the
 * device has timestamps, else -1. */
ember_status ember_forward_run(ember_forward *f, const ember_batch *b, float *logits,
                               uint32_t *argmax, double *gpu_ms, ember_err *err);

/* Copies KV blocks src[i] -> dst[i] (every layer, K and V) and waits: the copy on write
 * of a shared block before a sequence writes into it. src and dst must be distinct. */
ember_status ember_forward_copy_blocks(ember_forward *f, const uint32_t *src, const uint32_t *dst, uint32_t n,
                                       ember_err *err);

/* Dispatches recorded by the last run (to keep the count per token in view). */
uint32_t ember_forward_dispatches(const ember_forward *f);

#endif
