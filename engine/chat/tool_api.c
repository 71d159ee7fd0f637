/* tool_api.c — the public tool-call calls of ember.h over tool_calls.c: buffers in,
 * messages out, the model's template looked up. */
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "engine/model_handle.h"
#include "tool_calls.h"

static ember_status refuse(const ember_err *e, ember_status s, char *err, size_t cap)
{
    if (err && cap) snprintf(err, cap, "%s", e->msg);
    return s;
}

/* Copies s (*n bytes) into buf as the ember.h calls do: NUL-terminated when cap > 0. */
static void copy_out(const char *s, size_t n, char *buf, size_t cap)
{
    if (!cap) return;
    size_t k = n < cap - 1 ? n : cap - 1;
    memcpy(buf, s, k);
    buf[k] = 0;
}

ember_tool_syntax ember_model_tool_syntax(const ember_model *model)
{
    const ember_gguf_kv *kv = model && model->gguf ? ember_gguf_find(model->gguf, "tokenizer.chat_template") : NULL;
    bool found = kv && kv->type == EMBER_GGUF_STRING;
    return ember_tool_syntax_of(found ? kv->v.str.ptr : NULL, found ? kv->v.str.len : 0);
}

const char *ember_tool_syntax_trigger(ember_tool_syntax s) { return ember_tool_trigger(s); }

ember_status ember_tool_calls_grammar(ember_tool_syntax s, const char *tools_json, const char *only, int parallel,
                                      char *buf, size_t cap, size_t *len, char *err, size_t err_cap)
{
    ember_err e = {{0}};
    char *gbnf = NULL;
    if (!tools_json || !len || (cap && !buf))
        return ember_fail(&e, EMBER_ERR_INVALID_ARG, "ember_tool_calls_grammar: tools_json, len and buf are required"),
               refuse(&e, EMBER_ERR_INVALID_ARG, err, err_cap);
    ember_status st = ember_tool_grammar(s, tools_json, strlen(tools_json), only, parallel != 0, &gbnf, &e);
    if (st != EMBER_OK) return refuse(&e, st, err, err_cap);
    *len = strlen(gbnf);
    copy_out(gbnf, *len, buf, cap);
    ember_free(gbnf);
    if (err && err_cap) err[0] = 0;
    return EMBER_OK;
}

ember_status ember_tool_calls_parse(ember_tool_syntax s, const char *text, size_t len, size_t *content_len,
                                    char *calls, size_t cap, size_t *calls_len, char *err, size_t err_cap)
{
    ember_err e = {{0}};
    char *out = NULL;
    if ((len && !text) || !content_len || !calls_len || (cap && !calls))
        return ember_fail(&e, EMBER_ERR_INVALID_ARG, "ember_tool_calls_parse: text, content_len, calls_len and "
                                                     "calls are required"),
               refuse(&e, EMBER_ERR_INVALID_ARG, err, err_cap);
    ember_status st = ember_tool_parse(s, text, len, content_len, &out, &e);
    if (st != EMBER_OK) return refuse(&e, st, err, err_cap);
    *calls_len = out ? strlen(out) : 0;
    copy_out(out ? out : "", *calls_len, calls, cap);
    ember_free(out);
    if (err && err_cap) err[0] = 0;
    return EMBER_OK;
}
