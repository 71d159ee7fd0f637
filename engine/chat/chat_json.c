/* chat_json.c — ember_chat_apply_json: an OpenAI-style conversation (JSON messages, tool
 * calls, tool results, tools) rendered into a prompt. Without the model's own template,
 * a built-in family renders it: the tools become a system message that teaches the
 * {"tool_calls": [...]} syntax, a call the assistant made is written in it, and a tool's
 * result becomes a user message saying whose result it is. */
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/strbuf.h"
#include "engine/grammar/json.h"
#include "chat.h"
#include "engine/model_handle.h"
#include "tool_calls.h"

/* The text of a message's content: a string, text parts joined, or "" (null). */
static void content_of(const ember_json *c, ember_sbuf *out)
{
    if (c && c->kind == EJ_STRING) ember_sbuf_add(out, c->str, c->len);
    for (uint32_t i = 0; c && c->kind == EJ_ARRAY && i < c->n; i++) {
        const ember_json *t = ember_json_get(&c->items[i], "text");
        if (t && t->kind == EJ_STRING) ember_sbuf_add(out, t->str, t->len);
    }
}

/* An assistant's calls in the {"tool_calls": [...]} syntax, after its text. */
static void calls_of(const char *json, const ember_json *calls, ember_sbuf *out)
{
    if (!calls || calls->kind != EJ_ARRAY || !calls->n) return;
    ember_sbuf_puts(out, out->len ? "\n{\"tool_calls\": [" : "{\"tool_calls\": [");
    for (uint32_t i = 0; i < calls->n; i++) {
        const ember_json *fn = ember_json_get(&calls->items[i], "function");
        const ember_json *name = ember_json_get(fn, "name"), *args = ember_json_get(fn, "arguments");
        ember_sbuf_puts(out, i ? ", {\"name\": " : "{\"name\": ");
        if (name && name->kind == EJ_STRING) ember_json_quote(out, name->str, name->len);
        else ember_sbuf_puts(out, "\"\"");
        ember_sbuf_puts(out, ", \"arguments\": ");
        if (args && args->kind == EJ_STRING) ember_sbuf_add(out, args->str, args->len); /* OpenAI: JSON as a string */
        else if (args) ember_sbuf_add(out, json + args->at, args->span);
        else ember_sbuf_puts(out, "{}");
        ember_sbuf_puts(out, "}");
    }
    ember_sbuf_puts(out, "]}");
}

/* The system message that teaches the tools and how to call them. */
static void tools_message(const char *tools, size_t len, ember_sbuf *out)
{
    ember_sbuf_puts(out, "You can call these tools (JSON Schema of their arguments):\n");
    ember_sbuf_add(out, tools, len);
    ember_sbuf_puts(out, "\nTo call tools, answer with only this JSON: {\"tool_calls\": [{\"name\": TOOL, "
                         "\"arguments\": {...}}]}. Their results come back in the next messages.");
}

/* Message i as role and text for the built-in family; false when it is not a message. */
static bool one_message(const char *json, const ember_json *m, const char **role, ember_sbuf *text)
{
    const ember_json *r = ember_json_get(m, "role");
    if (!r || r->kind != EJ_STRING) return false;
    const char *roles[][2] = {{"system", "system"}, {"developer", "system"}, {"user", "user"},
                              {"assistant", "assistant"}, {"tool", "user"}};
    *role = NULL;
    for (size_t k = 0; k < 5 && !*role; k++)
        if (!strcmp(r->str, roles[k][0])) *role = roles[k][1];
    if (!*role) return false;
    if (!strcmp(r->str, "tool")) { /* whose result this is, then the result */
        const ember_json *id = ember_json_get(m, "tool_call_id"), *name = ember_json_get(m, "name");
        const ember_json *who = name && name->kind == EJ_STRING ? name : id && id->kind == EJ_STRING ? id : NULL;
        ember_sbuf_printf(text, "Tool result (%.*s): ", who ? (int)who->len : 4, who ? who->str : "tool");
    }
    content_of(ember_json_get(m, "content"), text);
    calls_of(json, ember_json_get(m, "tool_calls"), text);
    return true;
}

/* The conversation as the built-in family's messages (their text kept in texts), the
 * tools' system message first: merged into the conversation's own if it opens with one. */
static ember_status as_messages(ember_model *model, const char *json, const ember_json *msgs, const char *tools,
                                ember_chat_message *out, ember_sbuf *texts, size_t *n)
{
    const ember_json *r0 = msgs->n ? ember_json_get(&msgs->items[0], "role") : NULL;
    bool opens_system = r0 && r0->kind == EJ_STRING && (!strcmp(r0->str, "system") || !strcmp(r0->str, "developer"));
    *n = 0;
    if (tools && !opens_system) tools_message(tools, strlen(tools), &texts[0]), out[(*n)++].role = "system";
    for (uint32_t i = 0; i < msgs->n; i++) {
        if (!one_message(json, &msgs->items[i], &out[*n].role, &texts[*n]))
            return ember_fail(&model->err, EMBER_ERR_INVALID_ARG, "messages[%u]: a message needs a role (system, "
                              "developer, user, assistant or tool)", i);
        if (i == 0 && tools && opens_system) {
            ember_sbuf_puts(&texts[*n], "\n\n");
            tools_message(tools, strlen(tools), &texts[*n]);
        }
        (*n)++;
    }
    for (size_t k = 0; k < *n; k++) out[k].content = texts[k].s ? texts[k].s : "";
    return EMBER_OK;
}

/* Whether the template's text names s (its Jinja reads that variable). */
static bool mentions(const char *src, size_t len, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; src && i + n <= len; i++)
        if (!memcmp(src + i, s, n)) return true;
    return false;
}

/* The model's own template with the conversation as it is: tools, calls and results
 * reach its Jinja (a template that reads no tools is left to the fallback). */
static ember_status render_native(const ember_chat_template *t, const char *src, size_t src_len,
                                  const char *messages_json, const char *tools, bool agp, char **out, size_t *n,
                                  ember_tool_syntax *syntax, ember_err *err)
{
    if (!t->jinja || (tools && !mentions(src, src_len, "tools"))) return EMBER_ERR_UNSUPPORTED;
    ember_status s = ember_chat_render_json(t, messages_json, strlen(messages_json), tools, tools ? strlen(tools) : 0,
                                            agp, out, n, err);
    *syntax = ember_tool_syntax_of(src, src_len);
    return s;
}

/* The built-in way: the tools in a system message, calls and results as text, rendered
 * by the template (its Jinja or its family) as plain messages. */
static ember_status render_plain(ember_model *model, const ember_chat_template *t, const char *messages_json,
                                 const ember_json *msgs, const char *tools, bool agp, char **out, size_t *n)
{
    size_t cap = msgs->n + 2, count = 0;
    ember_chat_message *m = ember_calloc(cap, sizeof *m);
    ember_sbuf *texts = ember_calloc(cap, sizeof *texts);
    ember_status s = m && texts ? as_messages(model, messages_json, msgs, tools, m, texts, &count)
                                : ember_fail(&model->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t k = 0; s == EMBER_OK && k < count; k++)
        if (texts[k].oom) s = ember_fail(&model->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    if (s == EMBER_OK) s = ember_chat_render(t, m, count, 0, agp, out, n, &model->err);
    for (size_t k = 0; texts && k < cap; k++) ember_free(texts[k].s);
    ember_free(texts);
    ember_free(m);
    return s;
}

ember_status ember_chat_apply_json(ember_model *model, const char *template_name, const char *messages_json,
                                   const char *tools_json, int add_generation_prompt, char *buf, size_t cap,
                                   size_t *len, ember_tool_syntax *syntax)
{
    if (!model || !messages_json) return EMBER_ERR_INVALID_ARG;
    ember_json_doc *doc = NULL;
    const ember_json *msgs;
    ember_err jerr = {{0}};
    if (ember_json_parse(messages_json, strlen(messages_json), &doc, &msgs, &jerr) != EMBER_OK || msgs->kind != EJ_ARRAY) {
        ember_json_free(doc);
        return ember_fail(&model->err, EMBER_ERR_INVALID_ARG, "messages: a JSON array is needed%s%s",
                          jerr.msg[0] ? ": " : "", jerr.msg);
    }
    const char *tools = tools_json && tools_json[0] ? tools_json : NULL, *src = NULL;
    size_t src_len = 0, n = 0;
    ember_chat_template t;
    ember_tool_syntax syn = EMBER_TOOLS_JSON;
    char *out = NULL;
    ember_err nerr = {{0}};
    ember_status s = ember_chat_model_template(model, template_name, &t, &src, &src_len, &model->err);
    if (s == EMBER_OK) {
        bool agp = add_generation_prompt != 0;
        if (template_name || render_native(&t, src, src_len, messages_json, tools, agp, &out, &n, &syn, &nerr) != EMBER_OK) {
            ember_free(out), out = NULL, syn = EMBER_TOOLS_JSON; /* a template that cannot: the built-in way */
            s = render_plain(model, &t, messages_json, msgs, tools, agp, &out, &n);
        }
        ember_chat_template_free(&t);
    }
    if (s == EMBER_OK) {
        size_t k = n < cap ? n : cap; /* as ember_chat_apply: a NUL when there is room */
        if (buf && cap) memcpy(buf, out, k);
        if (buf && k < cap) buf[k] = 0;
        if (len) *len = n;
        if (syntax) *syntax = syn;
    }
    ember_free(out);
    ember_json_free(doc);
    return s;
}
