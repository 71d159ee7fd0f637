/* speculative.h — the parts of speculative decoding that are plain functions: n-gram
 * proposals, the acceptance rule, and draft-length adaptation. The engine (engine.c)
 * runs the draft model and the batched verification around them.
 *
 * Verification of k drafted tokens d_1..d_k uses k+1 rows of the target's output: row i
 * (0-based) follows the context plus d_1..d_i, so it scores d_{i+1}; row k gives a
 * bonus token when all k are accepted. */
#ifndef EMBER_SPECULATIVE_H
#define EMBER_SPECULATIVE_H

#include <stdint.h>

#include "engine/sampling/sampler.h"

/* Proposes up to k tokens: the continuation of the latest earlier occurrence of the
 * last n tokens of tokens[0..len). Returns how many were written to out. */
uint32_t ember_ngram_propose(const uint32_t *tokens, uint32_t len, uint32_t n, uint32_t k, uint32_t *out);

/* Greedy rule: accept d_{i+1} while it is row i's argmax; then add the argmax of the first
 * disagreeing row (or of row k). argmax has k+1 entries. Writes the accepted drafts and
 * that token to out; returns their count (1..k+1). */
uint32_t ember_spec_accept_greedy(const uint32_t *argmax, const uint32_t *draft, uint32_t k, uint32_t *out);

/* Sampling rule (Leviathan et al. 2023; Chen et al. 2023): accept d_{i+1} with
 * probability min(1, p_i(d) / q_i(d)); at the first rejection draw from
 * normalize(max(0, p_i - q_i)); when all k are accepted draw a bonus from p_k. p holds
 * k+1 rows and q k rows of n_vocab probabilities (after the same filters); q = NULL means
 * each draft is certain (a point mass: n-gram proposals). scratch holds n_vocab floats.
 * Random numbers come from s. Returns the count written to out (1..k+1). */
uint32_t ember_spec_accept(ember_sampler *s, const float *p, const float *q, const uint32_t *draft, uint32_t k,
                           uint32_t n_vocab, float *scratch, uint32_t *out);

/* Next draft length: one longer after a fully accepted round, one shorter after a round
 * that kept less than half, within [1, k_max]. */
uint32_t ember_spec_adapt(uint32_t k, uint32_t accepted, uint32_t k_max);

#endif
