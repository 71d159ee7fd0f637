/* score.c — ember_score: the log-likelihood of a token sequence, for perplexity.
 *
 * Windows of ctx tokens are scored independently (each starts with an empty cache), in
 * chunks of up to CHUNK tokens per forward pass with logits for every row. */
#include <math.h>
#include <stdlib.h>

#include "batch.h"
#include "model_handle.h"
#include "step.h"

#define CHUNK 64

/* -log softmax(row)[target], computed stably in double. */
static double nll_of(const float *row, uint32_t n_vocab, uint32_t target)
{
    double max = row[0], sum = 0;
    for (uint32_t j = 1; j < n_vocab; j++)
        if (row[j] > max) max = row[j];
    for (uint32_t j = 0; j < n_vocab; j++) sum += exp((double)row[j] - max);
    return log(sum) - ((double)row[target] - max);
}

/* One sequence in slot 0 whose window of ctx positions owns blocks 0, 1, 2, ... */
typedef struct scorer {
    ember_model *m;
    ember_step *step;
    ember_batch_buf buf;
} scorer;

static ember_status scorer_init(scorer *sc, ember_model *m, uint32_t ctx)
{
    const uint32_t bs = 16, n_blocks = (ctx + bs - 1) / bs;
    sc->m = m;
    ember_status s = ember_batch_buf_init(&sc->buf, CHUNK, 1, n_blocks, m->llama.hp.n_vocab, &m->err);
    if (s == EMBER_OK && !ember_batch_buf_logits(&sc->buf, CHUNK))
        s = ember_fail(&m->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    if (s != EMBER_OK) return s;
    for (uint32_t i = 0; i < n_blocks; i++) sc->buf.block_tables[i] = i;
    for (uint32_t i = 0; i < CHUNK; i++) sc->buf.rows[i] = i;
    ember_step_opts so = {.max_tokens = CHUNK, .max_seqs = 1, .n_blocks = n_blocks, .block_size = bs,
                          .max_blocks_per_seq = n_blocks};
    return ember_step_create(m, &so, &sc->step, &m->err);
}

static void scorer_free(scorer *sc)
{
    ember_step_free(sc->step);
    ember_batch_buf_free(&sc->buf);
}

/* Logits for tokens[0..n) at positions pos0.. of the current window. */
static ember_status run_chunk(scorer *sc, const uint32_t *tokens, uint32_t n, uint32_t pos0)
{
    for (uint32_t i = 0; i < n; i++) {
        sc->buf.tokens[i] = tokens[i];
        sc->buf.pos[i] = pos0 + i;
    }
    ember_batch b = ember_batch_of(&sc->buf, n, n);
    return ember_step_run(sc->step, &b, sc->buf.logits, NULL, &sc->m->err);
}

static ember_status score_window(scorer *sc, const uint32_t *t, uint32_t n, double *nll, size_t *n_scored)
{
    uint32_t V = sc->m->llama.hp.n_vocab;
    for (uint32_t p = 0; p + 1 < n; p += CHUNK) {
        uint32_t k = n - 1 - p < CHUNK ? n - 1 - p : CHUNK; /* rows p..p+k-1 predict p+1..p+k */
        ember_status s = run_chunk(sc, t + p, k, p);
        if (s != EMBER_OK) return s;
        for (uint32_t i = 0; i < k; i++) *nll += nll_of(sc->buf.logits + (size_t)i * V, V, t[p + i + 1]);
        *n_scored += k;
    }
    return EMBER_OK;
}

ember_status ember_score(ember_model *m, const uint32_t *tokens, size_t n, uint32_t ctx, double *nll,
                         size_t *n_scored)
{
    *nll = 0;
    *n_scored = 0;
    if (!m) return EMBER_ERR_INVALID_ARG;
    if (!m->llama_loaded)
        return ember_fail(&m->err, EMBER_ERR_INVALID_ARG, "the model was loaded vocab_only: it has no weights to score with");
    if (!ctx || ctx > m->llama.hp.ctx_len) ctx = m->llama.hp.ctx_len;
    if (ctx < 2) return ember_fail(&m->err, EMBER_ERR_INVALID_ARG, "window of %u tokens scores nothing", ctx);
    for (size_t i = 0; i < n; i++)
        if (tokens[i] >= m->llama.hp.n_vocab)
            return ember_fail(&m->err, EMBER_ERR_INVALID_ARG, "token %u outside the vocabulary", tokens[i]);
    scorer sc = {0};
    ember_status s = scorer_init(&sc, m, ctx);
    for (size_t w = 0; s == EMBER_OK && w < n; w += ctx) {
        uint32_t len = n - w < ctx ? (uint32_t)(n - w) : ctx;
        s = score_window(&sc, tokens + w, len, nll, n_scored);
    }
    scorer_free(&sc);
    return s;
}
