/* text_out.h — the text a request produces: tokens become valid UTF-8 (ember_detok),
 * stop strings end the request and are cut off, and text that could still turn out to
 * be the start of a stop string is held back until it cannot. */
#ifndef EMBER_TEXT_OUT_H
#define EMBER_TEXT_OUT_H

#include <stddef.h>

#include "common/error.h"
#include "engine/tokenizer/token.h"

typedef struct ember_text_out ember_text_out;

/* A new text with the NULL-terminated list of stop strings (copied; at most
 * EMBER_MAX_STOP, empty ones ignored). */
ember_status ember_text_create(const char *const *stop, ember_text_out **out, ember_err *err);
void ember_text_free(ember_text_out *o);
/* Appends the text of token id. Returns 1 when a stop string appeared (the text is cut
 * before it), 0 otherwise, -1 when out of memory. */
int ember_text_push(ember_text_out *o, const ember_tokenizer *t, uint32_t id);
/* Makes everything final: flushes incomplete UTF-8 (as U+FFFD) and releases text held
 * back for stop strings. Returns -1 when out of memory. */
int ember_text_finish(ember_text_out *o);
/* The next final piece: *p and its length; marks it as sent. */
size_t ember_text_take(ember_text_out *o, const char **p);

#endif
