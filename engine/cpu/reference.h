/* reference.h — the plain-C forward pass: the oracle the GPU path is tested against, and
 * the CPU backend (--backend cpu). Clear rather than fast.
 *
 * Two ways to use it: one sequence with a contiguous cache of ctx_len positions
 * (ember_ref_create + ember_ref_forward), or, as the engine does through step.h, ragged
 * batches over a pool of KV blocks, the same batches the GPU forward pass takes
 * (ember_ref_create_paged + ember_ref_run). */
#ifndef EMBER_REFERENCE_H
#define EMBER_REFERENCE_H

#include "engine/batch.h"
#include "engine/model/model.h"

typedef struct ember_ref ember_ref;

/* m must outlive the returned object (it points into the GGUF mapping). */
ember_status ember_ref_create(const ember_llama *m, ember_ref **out, ember_err *err);
void ember_ref_free(ember_ref *r);

/* Runs n tokens at positions pos0..pos0+n-1 (the cache must hold pos0 earlier positions).
 * If logits is not NULL it receives n rows of n_vocab floats (all_logits = 1) or only the
 * last row (all_logits = 0). Fails with EMBER_ERR_CONTEXT_FULL past ctx_len. */
ember_status ember_ref_forward(ember_ref *r, const uint32_t *tokens, uint32_t n, uint32_t pos0,
                               float *logits, int all_logits, ember_err *err);

/* A pool of n_blocks KV blocks of block_size positions; batches give each sequence a
 * block table of max_blocks_per_seq entries. */
ember_status ember_ref_create_paged(const ember_llama *m, uint32_t n_blocks, uint32_t block_size,
                                    uint32_t max_blocks_per_seq, ember_ref **out, ember_err *err);
/* Runs batch b over the pool, token by token in batch order (a sequence's tokens come in
 * order of position). logits (n_logits x n_vocab) and argmax (n_logits ids, lowest on
 * ties) are optional outputs for the rows b->logit_rows lists, hidden (n_hidden x dim:
 * the final norm) for those b->hidden_rows lists. */
ember_status ember_ref_run(ember_ref *r, const ember_batch *b, float *logits, uint32_t *argmax, float *hidden,
                           ember_err *err);
/* Moves the K/V of positions [p0, p1) of the sequence with block table blocks between
 * the pool and rows (F32 rows in a KV state's order, for positions 0 .. rows_pos - 1):
 * ember_forward_transfer_kv's contract. */
ember_status ember_ref_transfer_kv(ember_ref *r, const uint32_t *blocks, uint32_t p0, uint32_t p1, uint8_t *rows,
                                   uint32_t rows_pos, bool write, ember_err *err);
/* Copies K and V of blocks src[i] -> dst[i] (all layers). */
ember_status ember_ref_copy_blocks(ember_ref *r, const uint32_t *src, const uint32_t *dst, uint32_t n,
                                   ember_err *err);

/* A mixture of experts: every later call writes the experts its tokens pick into picks
 * (the caller's, cap * n_layers * n_expert_used ids): picks[(layer * cap + i) * k + j] is
 * the j-th expert of the call's i-th token (its row in the batch), in the router's order;
 * rows from cap on are not kept. NULL stops it. For tests: the GPU must pick the same. */
void ember_ref_keep_picks(ember_ref *r, uint32_t *picks, uint32_t cap);

#endif
