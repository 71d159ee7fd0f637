/* detok.h — streaming detokenization: generated tokens in, valid UTF-8 text out.
 *
 * Feed generated tokens one at a time; each call returns the text that is complete so
 * far, always valid UTF-8: bytes of an unfinished character are held back until a later
 * token completes them. Ill-formed bytes come out as U+FFFD (one per maximal ill-formed
 * subpart), never raw. Usage:
 *     ember_detok d; ember_detok_init(&d);      (or = {0})
 *     char *buf = malloc(ember_detok_max(t));   (enough for any one call)
 *     for each token: n = ember_detok_push(&d, t, id, buf, cap); emit buf[0..n)
 *     at the end:     n = ember_detok_flush(&d, buf, cap); emit buf[0..n)
 * Both return the length of the text; when that is more than cap the state is left
 * unchanged (call again with a larger buffer) and buf holds a partial result. */
#ifndef EMBER_DETOK_H
#define EMBER_DETOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "token.h"

typedef struct ember_detok {
    uint8_t pending[4];  /* the start of an unfinished character */
    uint8_t n_pending;
    bool special;        /* control tokens give their text ("<|im_end|>"), not "" */
} ember_detok;

void ember_detok_init(ember_detok *d);
/* A piece longer than 512 bytes needs a temporary copy; if that allocation fails the
 * piece is dropped and 0 returned. */
size_t ember_detok_push(ember_detok *d, const ember_tokenizer *t, uint32_t id, char *buf,
                        size_t cap);
/* Emits the held-back bytes (as U+FFFD: they never completed) and resets d. */
size_t ember_detok_flush(ember_detok *d, char *buf, size_t cap);
/* A buffer size that is always enough for one push or flush with this vocabulary. */
size_t ember_detok_max(const ember_tokenizer *t);

#endif
