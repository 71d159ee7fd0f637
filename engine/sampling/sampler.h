/* sampler.h — choosing the next token from one row of logits.
 *
 * A sampler belongs to one request: it holds the sampling parameters, a seeded random
 * generator and the recent tokens used by the penalties. Nothing is global, so the same
 * seed and the same logits give the same tokens whatever else runs in the process.
 *
 * The chain, in llama.cpp's default order (docs/sampling.md):
 *   logit bias -> penalties -> top-k -> top-p -> min-p -> temperature -> softmax -> draw.
 * Temperature 0 is greedy: the arg-max of the biased, penalized logits (lowest id on
 * ties); the filters then change nothing.
 *
 * Cost per token: a few passes over the vocabulary, never a sort of it: top-k keeps a
 * heap of k, top-p finds its cut with a histogram of probability mass and sorts one
 * bucket (docs/sampling.md). All memory is allocated by ember_sampler_create;
 * sampling never allocates and never fails. */
#ifndef EMBER_SAMPLER_H
#define EMBER_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "candidates.h"
#include "common/error.h"
#include "ember.h"

/* Zero in every field means "off" / the default. */
typedef struct ember_sampling_params {
    float temperature;        /* 0 = greedy; otherwise logits are divided by it */
    uint32_t top_k;           /* keep the k most likely tokens; 0 (or >= n_vocab) = off */
    float top_p;              /* keep the smallest set whose probability >= top_p; 0 or 1 = off */
    float min_p;              /* keep tokens with p >= min_p * p_max; 0 = off */
    float repetition_penalty; /* CTRL style, for tokens in the window: logit > 0 ? logit/r
                                 : logit*r; 0 or 1 = off */
    float frequency_penalty;  /* OpenAI style: logit -= count * frequency_penalty ... */
    float presence_penalty;   /* ... + (count > 0) * presence_penalty; 0 = off */
    uint32_t penalty_last_n;  /* window of accepted tokens the penalties look at; 0 = 64 */
    uint64_t seed;            /* used as given (0 is a seed like any other) */
    const ember_logit_bias *logit_bias; /* added to the logits first; copied by create */
    uint32_t n_logit_bias;
} ember_sampling_params;

typedef struct ember_sampler ember_sampler;

/* Checks the parameters (temperature >= 0, top_p and min_p in [0, 1], penalties finite,
 * repetition_penalty >= 0, penalty_last_n <= 1048576, n_vocab >= 1, at most
 * EMBER_MAX_LOGIT_BIAS biases on tokens < n_vocab, each finite or -inf) and allocates a
 * sampler for rows of n_vocab logits. params NULL means all zero (greedy). On success
 * *out is owned by the caller (ember_sampler_free). */
ember_status ember_sampler_create(const ember_sampling_params *params, uint32_t n_vocab,
                                  ember_sampler **out, ember_err *err);
void ember_sampler_free(ember_sampler *s);

/* Forgets the accepted tokens and re-seeds the generator with params.seed: the sampler
 * is then as freshly created. */
void ember_sampler_reset(ember_sampler *s);

/* Records token as generated (or as prompt, if the caller wants prompt tokens
 * penalized): the penalties see the last penalty_last_n accepted tokens. Sampling does
 * not accept by itself, so that a speculative verifier can accept only what it keeps.
 * A token >= n_vocab is ignored. */
void ember_sampler_accept(ember_sampler *s, uint32_t token);

/* Runs the chain on logits (n_vocab floats, not modified; NaN counts as -inf) and draws
 * one token. Consumes exactly one number from the generator, greedy or not, so that
 * ember_sampler_sample(s, l) == ember_sampler_draw(s, probs) after
 * ember_sampler_probs(s, l, probs), with the generator left in the same state. */
uint32_t ember_sampler_sample(ember_sampler *s, const float *logits);

/* A draw from a row's best candidates (candidates.h), with the row itself only where they
 * do not decide. logits: the row (n_vocab floats) or NULL. Returns true with *token set,
 * or false, generator untouched, when the row is needed (only when logits is NULL: call
 * again with it). For a sampler that ember_sampler_candidates_may_decide:
 *  - with a filter (top-k of at most EMBER_CANDIDATES, or a top-p nucleus or min-p set
 *    that ends among the candidates): the token ember_sampler_sample gives on the row
 *    with the same random number (the top-p target takes the row's sum from the GPU,
 *    summed in float: a cut within its rounding of a token's edge may fall one token
 *    apart); a filter that keeps more than the candidates needs the row, and then it is
 *    ember_sampler_sample on it;
 *  - temperature alone: a draw from the same distribution, walking the candidates (in id
 *    order) first and then the rest of the row, under the GPU's sum z_t: the row is
 *    needed only when the draw lands past the candidates (their mass is most of it on a
 *    peaked row); not the token ember_sampler_sample would give for the same number.
 *  - with penalties that only lower logits, and top-k or min-p alone: as with a filter,
 *    the candidates penalized and re-sorted, decided when the set stays above the last
 *    candidate's raw logit (no other token can enter it).
 * For any other sampler (greedy, a bias, a raising penalty, penalties with top-p alone or
 * no filter, top-k above EMBER_CANDIDATES) it is ember_sampler_sample on the row. */
bool ember_sampler_sample_candidates(ember_sampler *s, const ember_cand_row *row, const float *logits,
                                     uint32_t *token);
/* Whether a row's candidates may decide this sampler's draw (false: greedy, a bias, a
 * penalty beside top-p alone or no filter, a raising penalty, top-k above
 * EMBER_CANDIDATES: those read the whole row). */
bool ember_sampler_candidates_may_decide(const ember_sampler *s);
/* The sampler's temperature (0: greedy). */
float ember_sampler_temperature(const ember_sampler *s);

/* Writes into probs (n_vocab floats, owned by the caller) the distribution that
 * ember_sampler_sample draws from: after penalties, filters, temperature and softmax,
 * normalized, 0 for every filtered token (one-hot on the arg-max when greedy). Does not
 * touch the generator. Speculative decoding takes p and q from here so that draft and
 * target see the same filters. */
void ember_sampler_probs(ember_sampler *s, const float *logits, float *probs);

/* Draws a token from probs (n_vocab non-negative weights, owned by the caller; they
 * need not sum to 1) with the sampler's generator, consuming one number. Weights that
 * sum to 0 (or are not finite) give the first largest one. */
uint32_t ember_sampler_draw(ember_sampler *s, const float *probs);

/* A uniform number in [0, 1) from the sampler's generator (53 random bits), e.g. for
 * the accept/reject test of speculative decoding. */
double ember_sampler_uniform(ember_sampler *s);

uint32_t ember_sampler_n_vocab(const ember_sampler *s);
/* Saves / restores the accepted-token history (not the random state): speculative
 * decoding accepts draft tokens to get each position's penalties right, then restores
 * and accepts only the tokens it keeps. One save slot. */
void ember_sampler_save(ember_sampler *s);
void ember_sampler_restore(ember_sampler *s);
/* Whether any penalty is on (then probabilities depend on the history). */
int ember_sampler_has_penalties(const ember_sampler *s);

#endif
