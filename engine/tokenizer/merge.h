/* merge.h — the merge loop SentencePiece and BPE share (merge.c): text cut into symbols,
 * then the best adjacent pair joined, again and again, until no pair may join. The two
 * differ only in what makes a pair good (SPM: the score of the joined piece; BPE: the
 * rank of the merge), which the caller gives as a key function. Library-internal. */
#ifndef EMBER_MERGE_H
#define EMBER_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A run of text that is (for now) one token, linked to its neighbours (-1: none).
 * Merged-away symbols get n = 0. */
typedef struct ember_symbol {
    size_t start, n;
    int64_t prev, next;
} ember_symbol;

/* A candidate merge of symbol left with symbol right: key orders the queue (lower first,
 * then leftmost); size is the combined length when queued, which tells a stale entry
 * from a live one because symbols only ever grow. */
typedef struct ember_bigram {
    double key;
    size_t left, right, size;
} ember_bigram;

/* Whether symbols l and r may join, and if so *key (lower joins first). */
typedef bool (*ember_merge_key_fn)(void *ctx, const ember_symbol *l, const ember_symbol *r, double *key);

/* Joins the symbols sym[0..n) (linked in order, n >= 1) best pair first, leftmost on
 * ties, until no adjacent pair has a key. queue is room for 3n bigrams (n - 1 first
 * pairs and at most two per merge). Afterwards the live symbols are linked from sym[0]. */
void ember_merge_symbols(ember_symbol *sym, size_t n, ember_bigram *queue, ember_merge_key_fn key, void *ctx);

#endif
