/* logprobs.h — a generated token's log-probability and the most likely tokens, from the
 * row it was drawn from: the step's best candidates with their normaliser (candidates.h),
 * or a whole row of raw logits. Both give log p(t) = logit_t - m - log z, m the row's
 * largest finite logit and z the sum of exp(logit - m) over the row. Library-internal;
 * ember.h's ember_logprobs. */
#ifndef EMBER_LOGPROBS_H
#define EMBER_LOGPROBS_H

#include <stdbool.h>
#include <stdint.h>

#include "candidates.h"
#include "ember.h"

/* What a row says of every token: its shift (m + log z) and the k most likely. */
typedef struct ember_row_logprobs {
    double shift;
    ember_logprobs lp; /* lp.top and lp.n_top filled; lp.chosen by ember_logprobs_pick */
} ember_row_logprobs;

/* From a whole row of raw logits (NaN counts as -inf), before a grammar's mask. */
void ember_logprobs_of_row(const float *logits, uint32_t n_vocab, uint32_t k, ember_row_logprobs *out);
/* From a row's candidates (the k best are its first k). */
void ember_logprobs_of_cands(const ember_cand_row *row, uint32_t k, ember_row_logprobs *out);
/* Sets out->lp.chosen for token tok whose raw logit is logit. */
void ember_logprobs_pick(ember_row_logprobs *out, uint32_t tok, float logit);
/* tok's raw logit among the candidates; false when it is not one of them. */
bool ember_logprobs_cand_logit(const ember_cand_row *row, uint32_t tok, float *logit);

#endif
