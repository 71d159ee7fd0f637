/* tool_calls.h — how a model writes tool calls, by the syntax its chat template teaches
 * it: the grammar that keeps its calls to the tools' JSON Schemas (a lazy one, triggered
 * by the syntax's opening, when the model may also just answer), and the calls read back
 * out of its reply. Library-internal; the public calls are in ember.h (ember_chat_tool_*)
 * and docs/grammar.md describes them. */
#ifndef EMBER_TOOL_CALLS_H
#define EMBER_TOOL_CALLS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "ember.h"

/* Picks the syntax from a chat template's source: Hermes/Qwen's <tool_call> tags,
 * Mistral's [TOOL_CALLS], Llama 3.1's {"name", "parameters"} object, or (any other
 * template) a {"tool_calls": [...]} object the model is told about. */
ember_tool_syntax ember_tool_syntax_of(const char *tmpl, size_t len);

/* The text a call begins with in syntax s: a lazy grammar's trigger. */
const char *ember_tool_trigger(ember_tool_syntax s);

/* GBNF for the calls a reply may make in syntax s (start rule root, beginning with the
 * trigger) to the tools of tools_json (OpenAI's "tools" array: {"type": "function",
 * "function": {"name", "description", "parameters"}}): each call names one of them (only
 * `only`, when not NULL) and its arguments follow that tool's parameters schema; one call,
 * or several when parallel. Refused with the tool and the reason when a schema is.
 * *gbnf is the caller's (ember_free). */
ember_status ember_tool_grammar(ember_tool_syntax s, const char *tools_json, size_t len, const char *only,
                                bool parallel, char **gbnf, ember_err *err);

/* Reads the calls out of a reply text[0..len) written in syntax s: *content_len gets the
 * length of the text before them (all of it when there is none), *calls a JSON array
 * [{"name": ..., "arguments": "<the arguments as the model wrote them>"}] (the caller's,
 * ember_free), or NULL when the reply makes no call. EMBER_ERR_INVALID_ARG when the calls
 * do not parse. */
ember_status ember_tool_parse(ember_tool_syntax s, const char *text, size_t len, size_t *content_len, char **calls,
                              ember_err *err);

#endif
