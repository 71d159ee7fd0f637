/* batch.c — the host buffers of a step (batch.h). */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "batch.h"

ember_status ember_batch_buf_init(ember_batch_buf *b, uint32_t max_tokens, uint32_t max_seqs,
                                  uint32_t max_blocks_per_seq, uint32_t n_vocab, ember_err *err)
{
    memset(b, 0, sizeof *b);
    b->max_tokens = max_tokens;
    b->max_blocks_per_seq = max_blocks_per_seq;
    b->n_vocab = n_vocab;
    b->tokens = ember_calloc(max_tokens, sizeof *b->tokens);
    b->pos = ember_calloc(max_tokens, sizeof *b->pos);
    b->seq = ember_calloc(max_tokens, sizeof *b->seq);
    b->rows = ember_calloc(max_tokens, sizeof *b->rows);
    b->argmax = ember_calloc(max_tokens, sizeof *b->argmax);
    b->want = ember_calloc(max_tokens, sizeof *b->want);
    b->temp = ember_calloc(max_tokens, sizeof *b->temp);
    b->drawn = ember_calloc(max_tokens, sizeof *b->drawn);
    b->hrows = ember_calloc(max_tokens, sizeof *b->hrows);
    b->block_tables = ember_calloc((size_t)max_seqs * max_blocks_per_seq, sizeof *b->block_tables);
    b->local_tables = ember_calloc((size_t)max_seqs * max_blocks_per_seq, sizeof *b->local_tables);
    if (!b->tokens || !b->pos || !b->seq || !b->rows || !b->argmax || !b->want || !b->temp || !b->drawn || !b->hrows ||
        !b->block_tables || !b->local_tables ||
        !ember_batch_buf_logits(b, max_seqs))
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    return EMBER_OK;
}

void ember_batch_buf_free(ember_batch_buf *b)
{
    ember_free(b->tokens);
    ember_free(b->pos);
    ember_free(b->seq);
    ember_free(b->rows);
    ember_free(b->argmax);
    ember_free(b->block_tables);
    ember_free(b->local_tables);
    ember_free(b->logits);
    ember_free(b->want);
    ember_free(b->temp);
    ember_free(b->drawn);
    ember_free(b->cands);
    ember_free(b->hrows);
    ember_free(b->hidden);
    memset(b, 0, sizeof *b);
}

bool ember_batch_buf_logits(ember_batch_buf *b, uint32_t rows)
{
    if (rows <= b->logits_rows) return true;
    float *l = ember_realloc(b->logits, (size_t)rows * b->n_vocab * sizeof *l);
    if (!l) return false;
    b->logits = l;
    b->logits_rows = rows;
    return true;
}

bool ember_batch_buf_cands(ember_batch_buf *b, uint32_t rows)
{
    if (rows <= b->cands_rows) return true;
    ember_cand_row *c = ember_realloc(b->cands, (size_t)rows * sizeof *c);
    if (!c) return false;
    b->cands = c;
    b->cands_rows = rows;
    return true;
}

bool ember_batch_buf_hidden(ember_batch_buf *b, uint32_t rows, uint32_t dim)
{
    if (rows <= b->hidden_rows) return true;
    float *h = ember_realloc(b->hidden, (size_t)rows * dim * sizeof *h);
    if (!h) return false;
    b->hidden = h;
    b->hidden_rows = rows;
    return true;
}

ember_batch ember_batch_of(const ember_batch_buf *b, uint32_t n_tokens, uint32_t n_logits)
{
    return (ember_batch){n_tokens, b->tokens, b->pos, b->seq, b->block_tables, n_logits, b->rows, 0, b->hrows, NULL};
}
