/* pretokenize.h — the regex pre-tokenizers that cut text into words before BPE merges
 * them (pretokenize.c). Library-internal. */
#ifndef EMBER_PRETOKENIZE_H
#define EMBER_PRETOKENIZE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

typedef struct ember_pretok ember_pretok;

/* Called for each word, in order; a non-OK status stops the split. */
typedef ember_status (*ember_word_fn)(void *ctx, const char *word, size_t len);

/* name: tokenizer.ggml.pre (not NUL-terminated). An unknown name gives
 * EMBER_ERR_UNSUPPORTED naming it. */
ember_status ember_pretok_create(const char *name, size_t name_len, ember_pretok **out,
                                 ember_err *err);
void ember_pretok_free(ember_pretok *p);
const char *ember_pretok_name(const ember_pretok *p);
bool ember_pretok_ignore_merges(const ember_pretok *p);
bool ember_pretok_add_bos(const ember_pretok *p);
/* Cuts text into words: every byte of text is in exactly one word, in order. */
ember_status ember_pretok_split(const ember_pretok *p, const char *text, size_t len,
                                ember_word_fn fn, void *ctx, ember_err *err);

#endif
