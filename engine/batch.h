/* batch.h — one step's input: a ragged batch of tokens from any number of sequences,
 * each reading its KV cache through its block table. What the engine hands a backend
 * (step.h) and both backends (gpu/forward.c, cpu/reference.c) take; and the host buffers
 * a batch is laid out in and read back into (batch.c). Library-internal. */
#ifndef EMBER_BATCH_H
#define EMBER_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/sampling/candidates.h"
#include "common/error.h"

/* One step's input, in host memory. Token i is at position pos[i] of sequence slot
 * seq[i]; block_tables is [max_seqs][max_blocks_per_seq] (only the rows of slots used in
 * this batch are read); logits are produced for the token rows listed in logit_rows,
 * hidden states for those in hidden_rows. */
typedef struct ember_batch {
    uint32_t n_tokens;
    const uint32_t *tokens, *pos, *seq;
    const uint32_t *block_tables;
    uint32_t n_logits;
    const uint32_t *logit_rows;
    /* rows whose hidden state (the final RMSNorm's output, dim floats) is delivered:
     * embeddings pool them */
    uint32_t n_hidden;
    const uint32_t *hidden_rows;
    /* block_tables' entries' local slots (kv_cache.h), for a sliding-window model's local
     * layers; NULL: the block ids themselves (no local slots) */
    const uint32_t *local_tables;
} ember_batch;

/* What a step delivers for its logits rows (b->logit_rows, in order): every row's argmax,
 * and per row what want says: its whole row of logits (EMBER_WANT_ROW) or its best
 * candidates (EMBER_WANT_CANDS, the GPU backend only: ember_step_has_candidates) or
 * nothing more (EMBER_WANT_ARGMAX). want NULL: every row whole. Each array has
 * b->n_logits entries (logits: of n_vocab floats); one is NULL when no row wants it. */
enum { EMBER_WANT_ARGMAX = 0, EMBER_WANT_ROW = 1, EMBER_WANT_CANDS = 2 };

typedef struct ember_step_out {
    float *logits;
    const uint8_t *want;
    uint32_t *argmax;
    ember_cand_row *cands;
    const float *temp;    /* per logits row: the temperature of cands' z_t (NULL: 1) */
    float *hidden;        /* b->n_hidden x dim floats, in the order of b->hidden_rows (NULL
                             when the batch lists none) */
} ember_step_out;

/* Whether logits row i is delivered whole / as candidates. */
static inline bool ember_out_row(const ember_step_out *o, uint32_t i)
{
    return o->logits && (!o->want || o->want[i] == EMBER_WANT_ROW);
}
static inline bool ember_out_cands(const ember_step_out *o, uint32_t i)
{
    return o->cands && o->want && o->want[i] == EMBER_WANT_CANDS;
}

/* Room for one step, reused step after step: max_tokens rows of input and of read-back,
 * a block-table row for each of max_seqs slots, and logits rows grown on demand. */
typedef struct ember_batch_buf {
    uint32_t *tokens, *pos, *seq;  /* max_tokens each: the rows */
    uint32_t *rows, *argmax;       /* max_tokens each: logits rows and their argmax */
    uint32_t *block_tables;        /* max_seqs x max_blocks_per_seq */
    uint32_t *local_tables;        /* ... their local slots (ember_batch.local_tables) */
    float *logits;                 /* logits_rows x n_vocab */
    uint8_t *want;                 /* max_tokens: what each logits row delivers (EMBER_WANT_*) */
    ember_cand_row *cands;         /* cands_rows */
    float *temp;                   /* max_tokens: each logits row's sampling temperature */
    uint32_t *drawn;               /* max_tokens: tokens drawn from rows' candidates */
    uint32_t *hrows;               /* max_tokens: rows whose hidden state is wanted */
    float *hidden;                 /* hidden_rows x dim */
    uint32_t max_tokens, max_blocks_per_seq, n_vocab, logits_rows, cands_rows, hidden_rows;
} ember_batch_buf;

ember_status ember_batch_buf_init(ember_batch_buf *b, uint32_t max_tokens, uint32_t max_seqs,
                                  uint32_t max_blocks_per_seq, uint32_t n_vocab, ember_err *err);
void ember_batch_buf_free(ember_batch_buf *b);
/* Makes room for rows rows of logits; false when out of memory. */
bool ember_batch_buf_logits(ember_batch_buf *b, uint32_t rows);
/* Makes room for rows rows of candidates; false when out of memory. */
bool ember_batch_buf_cands(ember_batch_buf *b, uint32_t rows);
/* Makes room for rows hidden states of dim floats; false when out of memory. */
bool ember_batch_buf_hidden(ember_batch_buf *b, uint32_t rows, uint32_t dim);
/* The batch of the first n_tokens rows and n_logits logits rows (no hidden rows). */
ember_batch ember_batch_of(const ember_batch_buf *b, uint32_t n_tokens, uint32_t n_logits);

#endif
