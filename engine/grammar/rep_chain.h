/* rep_chain.h — the rules a bounded repetition x{m,n} becomes (grammar.c: R_k ::= x R_k-1 |
 * empty, down to R_1 ::= x | empty; k counts the copies of x still allowed), seen as one
 * chain, and the shift of a matcher's key by one count.
 *
 * R_k and R_k+1 are the same rule one count apart: parsing a byte from a state inside R_k
 * does what parsing it from the same state inside R_k+1 does, one count lower. So a mask
 * cache can derive where a byte leads from a state from where it leads from the state one
 * count up, instead of running the matcher (mask_cache.c); and two states that differ
 * only by counts no token can use up allow the same tokens. Found from the rules' shapes,
 * so a chain written out by hand counts too. Library-internal; docs/grammar.md. */
#ifndef EMBER_REP_CHAIN_H
#define EMBER_REP_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "grammar.h"

typedef struct ember_rep_chains {
    uint32_t *up, *down;  /* per element: the same element one count up / down, or UINT32_MAX */
    uint32_t *level;      /* per element: the count k of its rule R_k; 0 outside chains */
    bool *enters;         /* per element: parsing on from it may open a chain's rule before
                             the next character (a chain entered afresh starts at its top
                             whatever the counts: such a step cannot be taken over) */
    bool *passes;         /* per element: the rest of its alternative may match nothing */
    uint32_t *chain;      /* per element: its chain (the bottom rule's number), or UINT32_MAX */
    const ember_grammar *g;
} ember_rep_chains;

/* The chains of g (none is fine). On failure (out of memory) *c is empty and err says so. */
ember_status ember_rep_chains_init(const ember_grammar *g, ember_rep_chains *c, ember_err *err);
void ember_rep_chains_free(ember_rep_chains *c);

/* Writes key[0..n) (ember_gmatch_key's numbers) to out with the elements of one chain (the
 * first the key holds: *chain gets it) one count up: the state above, whose step for byte
 * (0-255) is to be taken over. Other chains stay as they are. False when the key holds no
 * chain element, or one at the top of its chain, or when that byte may enter a chain
 * afresh. byte < 0: no step is taken over (for a mask: a chain entered afresh is entered
 * alike from both states). */
bool ember_rep_up(const ember_rep_chains *c, const uint32_t *key, size_t n, int byte, uint32_t *chain, uint32_t *out);
/* The same one count down for chain's elements: the state a step taken over leads to (a
 * key without them stays as it is). False when one cannot move down (from R_2: R_1 is
 * shaped otherwise). */
bool ember_rep_down(const ember_rep_chains *c, const uint32_t *key, size_t n, uint32_t chain, uint32_t *out);
/* The lowest count among the key's elements of chain (UINT32_MAX: none). */
uint32_t ember_rep_min_level(const ember_rep_chains *c, const uint32_t *key, size_t n, uint32_t chain);

#endif
