/* chat_fit.h — which turns of a conversation go when it outgrows the context
 * (chat_fit.c). Pure logic over messages and a measure of prompt length: it knows
 * nothing of templates or tokenizers, so it is tested without a model. chat.c renders,
 * tokenizes and applies the answer (docs/chat.md, "Long conversations").
 * Library-internal. */
#ifndef EMBER_CHAT_FIT_H
#define EMBER_CHAT_FIT_H

#include <stddef.h>

#include "ember.h"

/* The leading system messages of msgs[0..n): they are never dropped. */
size_t ember_chat_n_system(const ember_chat_message *msgs, size_t n);

/* Where the turns of msgs[0..n) start: the first message after the leading system
 * messages, then every later "user" message (a turn runs to the next one). Writes at most
 * cap indices to starts; returns the number of turns. */
size_t ember_chat_turns(const ember_chat_message *msgs, size_t n, size_t *starts, size_t cap);

/* The prompt's length, in tokens, with the oldest d turns dropped. */
typedef ember_status (*ember_chat_measure)(void *user, size_t d, size_t *n_tokens);

/* The fewest of the oldest turns to drop, d in [1, n_turns - 1] (the last turn is the one
 * being asked: never dropped), for the prompt to take at most limit tokens. Binary search:
 * dropping a turn never lengthens the prompt. *d = 0 when even n_turns - 1 is not enough
 * (*n_tokens then says how long that prompt is). A failed measure is returned. */
ember_status ember_chat_fewest_drops(size_t n_turns, size_t limit, ember_chat_measure measure, void *user,
                                     size_t *d, size_t *n_tokens);

#endif
