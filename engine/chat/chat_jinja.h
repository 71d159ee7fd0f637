/* chat_jinja.h — a conversation rendered by the model's own template through the Jinja
 * interpreter (chat_jinja.c): messages (and tools) become the template's context as
 * Hugging Face's apply_chat_template makes it (messages, tools, add_generation_prompt,
 * bos_token, eos_token), and the text follows Ember's BOS rule (docs/chat.md: a leading
 * bos_token is cut, tokenization adds BOS). chat_template.c chooses between this and
 * the built-in families. Library-internal. */
#ifndef EMBER_CHAT_JINJA_H
#define EMBER_CHAT_JINJA_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "jinja.h"

/* Renders msgs[0..n) (role and content). from > 0: only what follows the content of
 * msgs[from-1], as ember_chat_render defines it (found in the rendering of the messages
 * before it; where the template rewrites earlier turns, from where the two renderings
 * part). *out: ember_free. */
ember_status ember_chat_jinja_render(const ember_jinja *j, const char *bos, const char *eos, const ember_chat_message *msgs,
                                     size_t n, size_t from, bool gen, char **out, size_t *out_len, ember_err *err);

/* Renders messages given as a JSON array of OpenAI chat messages, every member handed to
 * the template as it is (content, tool_calls with their function name and arguments,
 * tool_call_id, name, reasoning_content, ...), and tools_json (an array of OpenAI tool
 * definitions; NULL: no tools). */
ember_status ember_chat_jinja_render_json(const ember_jinja *j, const char *bos, const char *eos, const char *messages_json,
                                          size_t messages_len, const char *tools_json, size_t tools_len, bool gen,
                                          char **out, size_t *out_len, ember_err *err);

/* The text the template writes after an assistant message's content (its end of
 * turn), or NULL when the template does not tell (or memory ran out). */
char *ember_chat_jinja_end(const ember_jinja *j, const char *bos, const char *eos);

#endif
