/* chat_file.h — `ember chat`'s /save and /load (chat_file.c): a conversation and its KV
 * cache in a file, through ember_chat_save / ember_chat_load and a KV state the engine
 * hands over (docs/state.md). */
#ifndef EMBER_TOOLS_CHAT_FILE_H
#define EMBER_TOOLS_CHAT_FILE_H

#include <stdbool.h>

#include "ember.h"

/* Writes chat, with the KV of its ids read from e (which must be idle: the caller steps
 * it), to path. false with a message on stderr. */
bool chat_file_save(ember_engine *e, ember_chat *chat, const char *path);
/* A chat read from path for model (template as ember_chat_create), or NULL with a message
 * on stderr. */
ember_chat *chat_file_load(ember_model *model, const char *template_name, const char *path);

#endif
