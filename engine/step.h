/* step.h — the one interface a model's step runs through: a ragged batch in, logits and
 * argmax out, over a pool of KV blocks (step.c). The engine, the speculative draft and
 * ember_score use it alike; behind it is the GPU forward pass (gpu/forward.c) for the
 * Vulkan backend and the plain-C reference (cpu/reference.c) for the CPU backend, both
 * taking the same batch and the same block tables. Library-internal. */
#ifndef EMBER_STEP_H
#define EMBER_STEP_H

#include "batch.h"
#include "model_handle.h"

typedef struct ember_step_opts {
    uint32_t max_tokens;          /* tokens per step */
    uint32_t max_seqs;            /* sequence slots (block-table rows) */
    uint32_t n_blocks, block_size;/* the KV pool */
    uint32_t max_blocks_per_seq;  /* block-table width */
    ember_kv_type kv_type;        /* how the pool stores K and V (the CPU: F32 only) */
    uint32_t n_local, window;     /* the pool's local slots and the window they serve
                                     (kv_cache.h; 0: none) */
} ember_step_opts;

typedef struct ember_step ember_step;

/* A step of model m on its backend; m must outlive it. */
ember_status ember_step_create(const ember_model *m, const ember_step_opts *o, ember_step **out,
                               ember_err *err);
void ember_step_free(ember_step *s);

/* Runs batch b (at most max_tokens tokens). logits (b->n_logits x n_vocab floats) and
 * argmax (b->n_logits ids) are optional outputs for the rows b->logit_rows lists. */
ember_status ember_step_run(ember_step *s, const ember_batch *b, float *logits, uint32_t *argmax,
                            ember_err *err);
/* The same in two halves, with any outputs (batch.h): submit hands the step to the device
 * and returns (the CPU backend computes it right there); wait waits at most timeout_ns
 * (UINT64_MAX: until done) and returns EMBER_NOT_READY while it is still running, EMBER_OK
 * once out's arrays (which must stay valid) are written. */
ember_status ember_step_submit(ember_step *s, const ember_batch *b, const ember_step_out *out, ember_err *err);
ember_status ember_step_wait(ember_step *s, uint64_t timeout_ns, ember_err *err);

/* Whether the step computes candidates (ember_step_out.cands): the GPU's does, so that a
 * sampler that needs only the best tokens reads 2 KiB a row instead of the row. */
bool ember_step_has_candidates(const ember_step *s);
/* Logits rows rows[0..n) of the last waited-for step, each into out + rows[i] x n_vocab
 * floats, before the next submit: rows whose candidates did not decide. GPU only. */
ember_status ember_step_fetch_logits(ember_step *s, const uint32_t *rows, uint32_t n, float *out, ember_err *err);
/* Copies KV blocks src[i] -> dst[i] (every layer, K and V): the copy on write of a shared
 * block before a sequence writes into it. src and dst must be distinct. lsrc/ldst: their
 * local slots (NULL without; ember_forward_copy_blocks). */
ember_status ember_step_copy_blocks(ember_step *s, const uint32_t *src, const uint32_t *dst, const uint32_t *lsrc,
                                    const uint32_t *ldst, uint32_t n, ember_err *err);

/* Moves the K/V of positions [p0, p1) of the sequence with block table blocks (local: its
 * blocks' local slots, NULL without; ember_forward_transfer_kv) between the pool and rows, rows of the step's KV type in a KV state's order ([layer][K, V]
 * [position][KV head], positions 0 .. rows_pos - 1; kv_state.h), and waits: write puts
 * rows into the pool (a restore), else the pool's into rows (a save). Between steps. */
ember_status ember_step_transfer_kv(ember_step *s, const uint32_t *blocks, const uint32_t *local, uint32_t p0,
                                    uint32_t p1, uint8_t *rows, uint32_t rows_pos, bool write, ember_err *err);

/* The next submitted step waits for / signals the application's timeline semaphore (a
 * VkSemaphore; GPU only). */
ember_status ember_step_sync_next(ember_step *s, void *timeline, uint64_t wait_value, uint64_t signal_value,
                                  ember_err *err);

/* The device memory of the KV pool (0 on the CPU), and remaking the pool at n blocks
 * (GPU only; the first keep blocks keep their K/V: ember_forward_resize_kv). */
uint64_t ember_step_kv_bytes(const ember_step *s);
ember_status ember_step_resize_kv(ember_step *s, uint32_t n, uint32_t keep, ember_err *err);

/* Profiling (GPU only; the CPU backend returns EMBER_ERR_UNSUPPORTED): every dispatch of
 * the steps timed from now on, and the last waited-for step's dispatches (vk_cmd.h). */
ember_status ember_step_set_profiling(ember_step *s, bool on, ember_err *err);
uint32_t ember_step_profile(const ember_step *s, const ember_vk_dispatch_time **d, uint32_t *n_barriers,
                            double *gpu_ns);

/* The most KV blocks of block_size positions and type t that a step of model m can hold:
 * on a GPU one layer's K (or V) pool must fit one storage binding; the CPU has no limit. */
uint32_t ember_step_max_blocks(const ember_model *m, uint32_t block_size, ember_kv_type t);

#endif
