/* grammar_match.h — where one request stands in its grammar: the parse stacks that the
 * text so far leaves open, advanced by each accepted token's bytes, and asked whether a
 * token's bytes may come next. Tokens may split a UTF-8 character: the pending bytes are
 * kept and a token is allowed when some open stack can take a character they begin.
 * Library-internal; docs/grammar.md. */
#ifndef EMBER_GRAMMAR_MATCH_H
#define EMBER_GRAMMAR_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "grammar.h"
#include "vocab_trie.h"

typedef struct ember_gmatch ember_gmatch;

/* A matcher at the start of g's root rule. g is borrowed: it must outlive the matcher.
 * *out is owned by the caller (ember_gmatch_free). */
ember_status ember_gmatch_create(const ember_grammar *g, ember_gmatch **out, ember_err *err);
void ember_gmatch_free(ember_gmatch *m);

/* Whether bytes[0..n) may come next (n 0: true). Leaves the matcher as it was. */
bool ember_gmatch_allows(ember_gmatch *m, const uint8_t *bytes, size_t n);

/* Advances past bytes[0..n) when they may come next and returns true; else returns false
 * and leaves the matcher as it was. False too when memory runs out. */
bool ember_gmatch_accept(ember_gmatch *m, const uint8_t *bytes, size_t n);

/* Advances past one byte: 1; 0 when it may not come next, -1 when memory ran out (the
 * matcher then as it was). */
int ember_gmatch_step(ember_gmatch *m, uint8_t byte);

/* Whether the text so far is a whole sentence of the grammar (no character pending):
 * where an end-of-generation token is allowed. */
bool ember_gmatch_complete(const ember_gmatch *m);

/* Whether the grammar allows more text after what was accepted. */
bool ember_gmatch_open(const ember_gmatch *m);

/* The token mask: bit t of bits (v->n_vocab bits, words of 32, owned by the caller) set
 * when token t may come next (ember_gmatch_allows on its bytes), end-of-generation tokens
 * when the text is complete; *n_allowed counts them. One walk of v's trie that skips every
 * token below a prefix no stack takes. False when memory ran out (bits then unusable).
 * Leaves the matcher as it was. */
bool ember_gmatch_mask(ember_gmatch *m, const ember_vtrie *v, uint32_t *bits, uint32_t *n_allowed);

/* The matcher's state as numbers: each open stack's elements from the top down, ended by
 * UINT32_MAX, then what decides how a pending character goes on (0 when none), the
 * continuation bytes it waits for, and its bits so far. Keys equal but for their last
 * number give equal masks and lead to equal states, so states can be cached by all but
 * the last number; ember_gmatch_set_key takes the whole key. Writes at most cap numbers;
 * returns the key's full length. */
size_t ember_gmatch_key(const ember_gmatch *m, uint32_t *key, size_t cap);
/* The key of the state byte leads m to, as ember_gmatch_key writes it, leaving m as it
 * was: 0 when no stack takes the byte, SIZE_MAX when memory ran out. */
size_t ember_gmatch_key_after(ember_gmatch *m, uint8_t byte, uint32_t *key, size_t cap);
/* The class of each byte lo..hi from m's state, in out[0 .. hi - lo]: bytes of one class
 * lead to states whose keys are equal but for their last number (one state of a cache);
 * bytes of different classes may still meet. 0: the bytes no stack takes. Lets a cache
 * work out a row of transitions with one matcher run per class instead of per byte. */
void ember_gmatch_byte_classes(const ember_gmatch *m, uint8_t lo, uint8_t hi, uint64_t *out);
/* Whether every character of 2-4 bytes leads m's state (no character pending) to one
 * state: each open stack's class holds all of them (surrogates aside) or none. */
bool ember_gmatch_multibyte_alike(const ember_gmatch *m);
/* Puts m in the state key[0..n) describes (a key ember_gmatch_key gave for a matcher of
 * the same grammar). False when the key is not one or memory ran out. */
bool ember_gmatch_set_key(ember_gmatch *m, const uint32_t *key, size_t n);

#endif
