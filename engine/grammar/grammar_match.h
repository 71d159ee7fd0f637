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

/* Whether the text so far is a whole sentence of the grammar (no character pending):
 * where an end-of-generation token is allowed. */
bool ember_gmatch_complete(const ember_gmatch *m);

/* Whether the grammar allows more text after what was accepted. */
bool ember_gmatch_open(const ember_gmatch *m);

#endif
