/* special.h — special tokens (special.c): which text becomes one, and which ones end
 * generation. Library-internal. */
#ifndef EMBER_SPECIAL_H
#define EMBER_SPECIAL_H

#include "engine/model/gguf.h"
#include "vocab.h"

/* A piece of the text to encode: raw text (id == EMBER_TOKEN_NONE) or one special token. */
typedef struct ember_fragment {
    size_t start, len;
    uint32_t id;
} ember_fragment;

/* Settles the types llama.cpp overrides (harmony's markers, user-defined), the
 * end-of-generation set, and the special tokens (longest text first). Before
 * ember_tok_index: a token made user-defined here is one plain text may merge into. */
ember_status ember_special_load(ember_tokenizer *t, const ember_gguf *g, ember_err *err);
/* Cuts text around special tokens (user-defined always; control and unknown only when
 * parse_special). *out is malloc'd; the caller frees it. */
ember_status ember_special_partition(const ember_tokenizer *t, const char *text, size_t len,
                                     bool parse_special, ember_fragment **out, size_t *n_out,
                                     ember_err *err);

#endif
