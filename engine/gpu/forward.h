/* forward.h — the transformer forward pass on the GPU (forward.c).
 *
 * ember_forward holds what one engine needs per step: activations for up to max_tokens
 * tokens, the paged KV pool, the step inputs and the read-back buffers, and one command
 * buffer. One call to ember_forward_run = one command buffer = one submit: a ragged
 * batch of tokens from any number of sequences, each reading its KV through its block
 * table. Library-internal. */
#ifndef EMBER_FORWARD_H
#define EMBER_FORWARD_H

#include "engine/batch.h"
#include "gpu_model.h"

typedef struct ember_forward_opts {
    uint32_t max_tokens;          /* tokens per step */
    uint32_t max_seqs;            /* sequence slots */
    uint32_t n_blocks, block_size;/* the KV pool */
    uint32_t max_blocks_per_seq;  /* block table width */
    ember_kv_type kv_type;        /* how the pool stores K and V (default F32) */
    uint32_t n_local, window;     /* local slots of a pool kept for this window (kv_cache.h;
                                     0: none) */
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

/* The same in two halves, so that a caller need not wait: submit records and submits the
 * step; collect waits at most timeout_ns for it (EMBER_NOT_READY when it is still
 * running) and then copies the outputs out asks for (batch.h) into its arrays, which must
 * stay valid until then. The batch may be freed after submit. The logits stay on the
 * device; only the rows out asks for cross to the host. */
ember_status ember_forward_submit(ember_forward *f, const ember_batch *b, const ember_step_out *out,
                                  ember_err *err);
ember_status ember_forward_collect(ember_forward *f, uint64_t timeout_ns, ember_err *err);

/* Rows rows[0..n) of the last collected step's logits, each into out + rows[i] x n_vocab
 * floats, read after the step, before the next is submitted: rows whose candidates did
 * not decide their samplers. On a discrete GPU one submission of n copies and a wait. */
ember_status ember_forward_fetch_logits(ember_forward *f, const uint32_t *rows, uint32_t n, float *out,
                                        ember_err *err);

/* Copies KV blocks src[i] -> dst[i] (every layer, K and V) and waits: the copy on write
 * of a shared block before a sequence writes into it. src and dst must be distinct. With
 * local slots, lsrc[i] -> ldst[i] are the blocks' slots for the local layers (NULL: none;
 * an entry EMBER_NO_BLOCK: that local part is not needed, not copied). */
ember_status ember_forward_copy_blocks(ember_forward *f, const uint32_t *src, const uint32_t *dst, const uint32_t *lsrc,
                                       const uint32_t *ldst, uint32_t n, ember_err *err);

/* Moves the K/V of positions [p0, p1) of the sequence whose block table is blocks (and,
 * with local slots, local: the blocks' slots; NULL: blocks) between the pool and rows
 * (write: rows to the pool), and waits. rows holds rows of the pool's KV type in a KV
 * state's order, [layer][K, V][position][KV head], for positions 0 .. rows_pos - 1 (only
 * [p0, p1) are read or written). A local slot EMBER_NO_BLOCK (dropped: behind the
 * window) saves zeros and restores nothing. The other slots of the blocks are left as
 * they are. No step may be in flight. */
ember_status ember_forward_transfer_kv(ember_forward *f, const uint32_t *blocks, const uint32_t *local, uint32_t p0,
                                       uint32_t p1, uint8_t *rows, uint32_t rows_pos, bool write, ember_err *err);

/* Orders the next step against the application's timeline semaphore (vk_cmd.h). */
ember_status ember_forward_sync_next(ember_forward *f, VkSemaphore timeline, uint64_t wait_value,
                                     uint64_t signal_value, ember_err *err);

/* The KV pool: its device memory, and remaking it at n blocks, of which the first keep
 * (at most both sizes) keep their K/V: 0 when the pool holds nothing yet, so that nothing
 * is copied. No step may be in flight. */
uint64_t ember_forward_kv_bytes(const ember_forward *f);
ember_status ember_forward_resize_kv(ember_forward *f, uint32_t n, uint32_t keep, ember_err *err);

/* Device bytes of the step's buffers (activations, inputs, read-back) for a model of hp
 * with these options, on a device whose bindings reach max_storage_range bytes:
 * what ember_forward_create allocates beside the KV pool, before it is made. */
uint64_t ember_forward_buffer_bytes(const ember_hparams *hp, const ember_forward_opts *o, uint64_t max_storage_range);

/* Dispatches recorded by the last run (to keep the count per token in view). */
uint32_t ember_forward_dispatches(const ember_forward *f);

/* Profiling: time every dispatch of the steps from now on (vk_cmd.h); the last collected
 * step's dispatches, barriers and GPU time. In a mixture of experts a grouped product's
 * bytes are those of the experts the step chose (the step keeps its routing, as below). */
ember_status ember_forward_set_profiling(ember_forward *f, bool on, ember_err *err);
uint32_t ember_forward_profile(ember_forward *f, const ember_vk_dispatch_time **d, uint32_t *n_barriers,
                               double *gpu_ns);

/* A mixture of experts: with keep on, every later step copies its routing to the host
 * (a copy of 4 (2 n_expert + 2 T k) bytes a layer); after one is collected,
 * ember_forward_expert_picks gives a layer's: experts[t * k + j] (optional; T * k ids) is
 * the j-th expert of the step's token t in the router's order, counts[e] (optional;
 * n_expert) how many of the step's tokens chose expert e. EMBER_ERR_INVALID_ARG for a
 * dense model, a layer past the last, or a step that did not keep its routing. */
void ember_forward_keep_picks(ember_forward *f, bool keep);
ember_status ember_forward_expert_picks(ember_forward *f, uint32_t layer, uint32_t *experts, uint32_t *counts,
                                        ember_err *err);

#endif
