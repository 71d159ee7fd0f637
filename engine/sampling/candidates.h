/* candidates.h — a row of logits as its best candidates: what a GPU step reads back for a
 * request whose sampler has no logit bias (docs/sampling.md), instead of the
 * row's n_vocab floats. shaders/topk.comp writes rows of this layout; the sampler reads
 * them (ember_sampler_sample_candidates). Library-internal. */
#ifndef EMBER_CANDIDATES_H
#define EMBER_CANDIDATES_H

#include <stdint.h>

/* Candidates kept per row: about 2 KiB read back instead of 4 x n_vocab bytes. Enough for
 * the top-k anyone sets (llama.cpp's default is 40), for most top-p nuclei and for most
 * draws at temperature alone; a row they do not decide is read whole after all
 * (engine.c, docs/sampling.md). */
#define EMBER_CANDIDATES 256

typedef struct ember_cand {
    uint32_t id;
    float logit;
} ember_cand;

typedef struct ember_cand_row {
    float z;                        /* the sum over the whole row of exp(logit - m), m its
                                       largest finite logit: the softmax's normaliser at
                                       temperature 1 */
    uint32_t n;                     /* min(EMBER_CANDIDATES, n_vocab) */
    float z_t;                      /* the same at the sampling request's temperature t:
                                       the sum of exp((logit - m) / t) */
    uint32_t unused;
    ember_cand c[EMBER_CANDIDATES]; /* the n best, best first: higher logit, then lower id;
                                       NaN counts as -inf, -0 as +0 */
} ember_cand_row;

_Static_assert(sizeof(ember_cand_row) == 8 * (EMBER_CANDIDATES + 2), "ember_cand_row: K + 2 uvec2 of topk.comp");

#endif
