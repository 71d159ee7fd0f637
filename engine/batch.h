/* batch.h — one step's input: a ragged batch of tokens from any number of sequences,
 * each reading its KV cache through its block table. What the engine hands a backend
 * (step.h) and both backends (gpu/forward.c, cpu/reference.c) take. Library-internal. */
#ifndef EMBER_BATCH_H
#define EMBER_BATCH_H

#include <stdint.h>

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

#endif
