/* mask_cache.h — token masks fast enough for every step: the grammar's states, learnt
 * as they are met, with their byte transitions and their masks.
 *
 * A matcher's state is fully described by its key (ember_gmatch_key). The cache interns
 * keys as numbered states and remembers, per state, where each byte leads (another state,
 * or nowhere): a lazily built automaton over the grammar's parse stacks. A mask is then a
 * walk of the vocabulary trie that costs a table look-up per node, and a transition is
 * worked out with a matcher only the first time it is taken. A state's mask is kept too:
 * requests come back to the same states again and again (inside a string, between an
 * object's fields), and every request with the same grammar meets the same states.
 *
 * One cache per grammar and vocabulary, used by one thread at a time. When what it holds
 * reaches its byte budget it forgets everything and starts again. Library-internal;
 * docs/grammar.md. */
#ifndef EMBER_MASK_CACHE_H
#define EMBER_MASK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "grammar.h"
#include "grammar_match.h"
#include "vocab_trie.h"

typedef struct ember_gmask_cache ember_gmask_cache;

/* What every cache of one vocabulary can share, made once with its trie: the plain-token
 * sets (mask_cache.c) of JSON's string characters, which JSON Schema strings and most
 * grammars' strings hold; a grammar's first string then makes no pass over the
 * vocabulary. Read-only once made. *out is the caller's (ember_gmask_vocab_free). */
typedef struct ember_gmask_vocab ember_gmask_vocab;
ember_status ember_gmask_vocab_create(const ember_vtrie *v, ember_gmask_vocab **out, ember_err *err);
void ember_gmask_vocab_free(ember_gmask_vocab *p);

/* A cache for matchers of g over vocabulary v, with v's shared sets (vocab, NULL: none)
 * (all borrowed: they must outlive it), holding at most about max_bytes (0: 64 MiB).
 * *out is the caller's (ember_gmask_cache_free). */
ember_status ember_gmask_cache_create(const ember_grammar *g, const ember_vtrie *v, const ember_gmask_vocab *vocab,
                                      size_t max_bytes, ember_gmask_cache **out, ember_err *err);
void ember_gmask_cache_free(ember_gmask_cache *c);

/* The mask of m's state: ember_gmatch_mask's bits (*n_allowed the tokens it allows),
 * kept or made. Valid until the next call on c. NULL when memory ran out. m must follow
 * the cache's grammar. */
const uint32_t *ember_gmask_get(ember_gmask_cache *c, const ember_gmatch *m, uint32_t *n_allowed);

typedef struct ember_gmask_counts {
    uint64_t masks_made, masks_found; /* walks of the trie; masks that were kept */
    uint64_t transitions;             /* byte transitions worked out with a matcher */
    uint64_t derived;                 /* ... taken over from a count up (rep_chain.h) */
    uint64_t masks_shared;            /* masks taken over from a count up */
    uint32_t states;                  /* states held now */
    size_t bytes;                     /* memory held now */
} ember_gmask_counts;
ember_gmask_counts ember_gmask_cache_counts(const ember_gmask_cache *c);

#endif
