/* vocab_trie.h — a vocabulary's token bytes as a trie, built once per model and shared
 * read-only by every grammar mask (grammar_match.h): tokens that share a prefix share its
 * walk, and a prefix no grammar state takes skips every token below it at once.
 *
 * The nodes are stored in depth-first order, each with its byte, its depth and the index
 * one past its subtree, so a walk is a loop over an array: go on to i + 1, or skip to
 * end[i]. Library-internal; docs/grammar.md. */
#ifndef EMBER_VOCAB_TRIE_H
#define EMBER_VOCAB_TRIE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef struct ember_vtrie {
    uint32_t n_vocab;
    uint32_t n_nodes;
    uint8_t *byte;       /* [n_nodes] the byte that leads to the node */
    uint16_t *depth;     /* [n_nodes] 1 for a child of the root */
    uint32_t *end;       /* [n_nodes] one past the node's subtree */
    uint32_t *tok_first; /* [n_nodes] the node's tokens: ids[tok_first .. + tok_n) */
    uint32_t *tok_n;
    uint32_t *ids;       /* tokens by their bytes (equal bytes: by id) */
    uint32_t n_ids;
    uint32_t *eog;       /* end-of-generation tokens: allowed where the grammar is complete */
    uint32_t n_eog;
    uint32_t max_depth;  /* the longest token's bytes */
    /* each token's bytes, by id: pool[at[t] .. at[t + 1]) (empty: never generated) */
    uint8_t *pool;
    uint32_t *at;
    uint8_t *utf8_ok;    /* [n_vocab] its bytes are well-formed UTF-8, maybe cut inside
                            the last character */
    /* what a mask of plain tokens asks of each token (mask_cache.c) without reading its
     * bytes: the ASCII bytes it holds, bit b of ascii[2 t + b / 64]; whether it holds a
     * byte above 0x7F; its characters (ASCII and lead bytes), at most 255 */
    uint64_t *ascii;
    uint8_t *high;
    uint8_t *chars;
} ember_vtrie;

/* The piece of each token: its bytes (NULL or len 0: never generated under a grammar,
 * e.g. control tokens), and which tokens end generation. */
typedef struct ember_vtrie_piece {
    const uint8_t *bytes;
    uint32_t len;
    uint8_t eog;
} ember_vtrie_piece;

/* Builds the trie of pieces[0..n_vocab). Pieces longer than 65535 bytes are refused.
 * *out is the caller's (ember_vtrie_free). */
ember_status ember_vtrie_build(const ember_vtrie_piece *pieces, uint32_t n_vocab, ember_vtrie **out,
                               ember_err *err);
void ember_vtrie_free(ember_vtrie *v);

#endif
