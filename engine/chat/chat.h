/* chat.h — what chat.c offers the rest of engine/chat besides the public ember_chat
 * calls of ember.h. Library-internal. */
#ifndef EMBER_CHAT_H
#define EMBER_CHAT_H

#include <stddef.h>

#include "chat_template.h"
#include "ember.h"

/* The template named (or, for NULL, the model's tokenizer.chat_template, rendered by the
 * Jinja interpreter with its family as the fallback), with the vocabulary's BOS and EOS
 * text as bos_token / eos_token; *source / *source_len (when source is not NULL) the
 * model's template text (NULL when it has none), borrowed from the model. t is freed with
 * ember_chat_template_free. */
ember_status ember_chat_model_template(const ember_model *m, const char *name, ember_chat_template *t,
                                       const char **source, size_t *source_len, ember_err *err);

#endif
