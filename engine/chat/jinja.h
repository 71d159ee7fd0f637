/* jinja.h — chat templates as the model wrote them: an interpreter for the Jinja that
 * chat templates use (jinja.c; docs/chat.md, "The Jinja interpreter").
 *
 * It renders the way Hugging Face's JavaScript interpreter, @huggingface/jinja, does
 * (trim_blocks and lstrip_blocks as apply_chat_template sets them, its values, filters
 * and tests), so that a model's own template gives byte for byte the prompt its front
 * ends give; tests/test_jinja.c checks real templates against that interpreter's
 * output. A sandbox: a template reaches only the values of its context and the methods
 * jinja_methods.h lists, and limits bound its work, its macro nesting, its output and
 * its memory. Errors are returned, never printed. Library-internal. */
#ifndef EMBER_JINJA_H
#define EMBER_JINJA_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* A parsed template: immutable, so one may serve renders on several threads at once. */
typedef struct ember_jinja ember_jinja;

/* What one render may take; a zero field takes its default. */
typedef struct ember_jinja_limits {
    size_t max_output;   /* bytes of output, and of any one string (default 1 MiB) */
    uint64_t max_steps;  /* nodes evaluated and items handled (default 10 million) */
    uint32_t max_depth;  /* macro and call-block calls nested (default 64) */
    size_t max_memory;   /* bytes the render's values may take (default 64 MiB) */
} ember_jinja_limits;

/* Parses src[0..len). Refusals: EMBER_ERR_INVALID_ARG with "jinja: line L, column C:
 * reason". */
ember_status ember_jinja_parse(const char *src, size_t len, ember_jinja **out, ember_err *err);

/* Renders t with the members of the JSON object context_json[0..len) as its variables
 * (messages, tools, add_generation_prompt, bos_token, eos_token, ...; `__now`, an
 * integer of Unix seconds, fixes strftime_now's clock in UTC). *out is NUL-terminated
 * (*out_len bytes); free it with ember_free. A failure at a place in the template is
 * EMBER_ERR_INVALID_ARG, "jinja: line L, column C: reason" (raise_exception('msg'):
 * "... the template raised: msg"; a limit: the reason names it). lim may be NULL. */
ember_status ember_jinja_render(const ember_jinja *t, const char *context_json, size_t len,
                                const ember_jinja_limits *lim, char **out, size_t *out_len, ember_err *err);

void ember_jinja_free(ember_jinja *t);

#endif
