/* api_tools.c — a reply's tool calls in OpenAI's shapes: read out of the text with
 * ember_tool_calls_parse, and what a stream may send as content before a call starts.
 * docs/server.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api.h"

/* The calls of text[0..len) in ember_tool_calls_parse's JSON ({name, arguments} list,
 * malloc'ed), or NULL when they do not parse; *clen: the text before them. */
static char *parse_calls(const api_format *f, const char *text, size_t len, size_t *clen)
{
    size_t n = 0;
    char err[256];
    if (ember_tool_calls_parse(f->syntax, text, len, clen, NULL, 0, &n, err, sizeof err) != EMBER_OK || !n)
        return NULL; /* no call, or calls that do not parse */
    char *buf = malloc(n + 1);
    if (buf && ember_tool_calls_parse(f->syntax, text, len, clen, buf, n + 1, &n, err, sizeof err) == EMBER_OK)
        return buf;
    free(buf);
    return NULL;
}

/* A reply that must be calls (tool_choice required or a function) but was cut short,
 * by max_tokens or the context: the whole calls it holds, found by ending it after the
 * last call that closed (a '}' or '>') with what each syntax closes its list with. */
static char *salvage(const api_format *f, const char *text, size_t len, size_t *clen)
{
    static const char *const closers[] = {"", "]", "]}", "</tool_call>"};
    char *buf = malloc(len + 16), *calls = NULL;
    for (size_t p = len; buf && !calls && p > 0; p--) {
        if (text[p - 1] != '}' && text[p - 1] != '>') continue;
        for (size_t c = 0; !calls && c < sizeof closers / sizeof *closers; c++) {
            size_t k = strlen(closers[c]);
            memcpy(buf, text, p);
            memcpy(buf + p, closers[c], k);
            calls = parse_calls(f, buf, p + k, clen);
        }
    }
    free(buf);
    return calls;
}

cJSON *api_tool_calls(const api_format *f, const char *text, size_t len, size_t *content_len)
{
    *content_len = f->calls_only ? 0 : len;
    if (!f->tools) return NULL;
    size_t clen = 0;
    char *buf = parse_calls(f, text, len, &clen);
    if (!buf && f->calls_only) buf = salvage(f, text, len, &clen);
    if (!buf) return NULL; /* no call, or calls that do not parse: the text is the answer */
    cJSON *parsed = cJSON_Parse(buf), *calls = cJSON_CreateArray(), *it;
    free(buf);
    int i = 0;
    cJSON_ArrayForEach(it, parsed) { /* {name, arguments} -> {id, type, function: {name, arguments}} */
        cJSON *c = cJSON_CreateObject(), *fn = cJSON_CreateObject();
        char id[64];
        snprintf(id, sizeof id, "call_%s_%d", f->id, i++);
        cJSON_AddStringToObject(c, "id", id);
        cJSON_AddStringToObject(c, "type", "function");
        cJSON_AddItemToObject(fn, "name", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(it, "name"), 1));
        cJSON_AddItemToObject(fn, "arguments", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(it, "arguments"), 1));
        cJSON_AddItemToObject(c, "function", fn);
        cJSON_AddItemToArray(calls, c);
    }
    cJSON_Delete(parsed);
    while (clen > 0 && strchr(" \t\r\n", text[clen - 1])) clen--; /* the blank before the calls */
    *content_len = f->calls_only ? 0 : clen;
    return calls;
}

size_t api_tool_safe_len(const api_format *f, const char *text, size_t len)
{
    if (!f->tools) return len;
    if (f->calls_only) return 0; /* the whole reply is calls: no content, ever */
    const char *trig = ember_tool_syntax_trigger(f->syntax);
    size_t tn = strlen(trig);
    for (size_t i = 0; i + tn <= len; i++)
        if (!memcmp(text + i, trig, tn)) return i;
    for (size_t k = tn - 1; k > 0; k--) /* an end that may be a trigger's beginning waits */
        if (k <= len && !memcmp(text + len - k, trig, k)) return len - k;
    return len;
}

char *api_tool_calls_chunk(const api_format *f, uint32_t index, cJSON *calls)
{
    cJSON *o = cJSON_CreateObject(), *c = cJSON_CreateObject(), *d, *it;
    cJSON_AddStringToObject(o, "id", f->id);
    cJSON_AddStringToObject(o, "object", "chat.completion.chunk");
    cJSON_AddNumberToObject(o, "created", (double)f->created);
    cJSON_AddStringToObject(o, "model", f->model);
    cJSON_AddNumberToObject(c, "index", index);
    d = cJSON_AddObjectToObject(c, "delta");
    cJSON *list = cJSON_AddArrayToObject(d, "tool_calls");
    int i = 0;
    cJSON_ArrayForEach(it, calls) {
        cJSON *x = cJSON_Duplicate(it, 1);
        cJSON_AddNumberToObject(x, "index", i++);
        cJSON_AddItemToArray(list, x);
    }
    cJSON_AddNullToObject(c, "logprobs");
    cJSON_AddNullToObject(c, "finish_reason");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "choices"), c);
    char *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!json) return NULL;
    size_t n = strlen(json);
    char *s = malloc(n + 9);
    if (s) snprintf(s, n + 9, "data: %s\n\n", json);
    cJSON_free(json);
    return s;
}

/* ---- the request's side ----------------------------------------------------------- */

static bool refuse(api_error *e, const char *param, const char *why)
{
    api_fail(e, 400, "invalid_request_error", param, NULL, "%s", why);
    return false;
}

/* tools: OpenAI's function tools, each with a name. */
static bool check_tools(const cJSON *tools, api_error *e)
{
    const cJSON *t;
    if (!cJSON_IsArray(tools) || !cJSON_GetArraySize(tools)) return refuse(e, "tools", "'tools' must be a non-empty array");
    cJSON_ArrayForEach(t, tools) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type"), *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") || !cJSON_IsString(name))
            return refuse(e, "tools", "each of 'tools' must be {\"type\": \"function\", \"function\": {\"name\", ...}}");
    }
    return true;
}

/* tool_choice: "none", "auto", "required" or {"type": "function", "function": {"name"}}. */
static bool choice(const cJSON *c, api_request *out, api_error *e)
{
    out->tool_mode = API_TOOLS_AUTO;
    if (!c || cJSON_IsNull(c)) return true;
    if (cJSON_IsString(c)) {
        const char *v = c->valuestring;
        out->tool_mode = !strcmp(v, "none") ? API_TOOLS_NONE : !strcmp(v, "auto") ? API_TOOLS_AUTO
                         : !strcmp(v, "required") ? API_TOOLS_REQUIRED : -1;
        return out->tool_mode >= 0 || refuse(e, "tool_choice", "'tool_choice' must be none, auto, required or a function");
    }
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function"), *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
    if (!cJSON_IsString(name)) return refuse(e, "tool_choice", "'tool_choice' must be none, auto, required or a function");
    out->tool_mode = API_TOOLS_REQUIRED;
    return (out->tool_only = strdup(name->valuestring)) != NULL || refuse(e, NULL, "out of memory");
}

bool api_tools(const cJSON *o, api_request *out, api_error *e)
{
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(o, "tools"), *par;
    if (!tools || cJSON_IsNull(tools)) return true;
    if (!check_tools(tools, e) || !choice(cJSON_GetObjectItemCaseSensitive(o, "tool_choice"), out, e)) return false;
    par = cJSON_GetObjectItemCaseSensitive(o, "parallel_tool_calls");
    if (par && !cJSON_IsNull(par) && !cJSON_IsBool(par))
        return refuse(e, "parallel_tool_calls", "'parallel_tool_calls' must be true or false");
    out->tool_parallel = !par || !cJSON_IsFalse(par);
    if (out->tool_mode != API_TOOLS_NONE && (out->json_schema || out->grammar))
        return refuse(e, "tools", "tools beside response_format, json_schema or grammar is not supported");
    return (out->tools_json = cJSON_PrintUnformatted(tools)) != NULL || refuse(e, NULL, "out of memory");
}

/* The grammar of the calls the reply may make, from the syntax the prompt taught. */
bool api_tool_grammar(api_request *r, ember_tool_syntax syntax, api_error *e)
{
    r->syntax = syntax;
    if (!r->tools_json || r->tool_mode == API_TOOLS_NONE) return true;
    size_t len;
    char why[300];
    if (ember_tool_calls_grammar(syntax, r->tools_json, r->tool_only, r->tool_parallel, NULL, 0, &len, why,
                                 sizeof why) != EMBER_OK)
        return refuse(e, "tools", why);
    if (!(r->grammar = malloc(len + 1))) return refuse(e, NULL, "out of memory");
    ember_tool_calls_grammar(syntax, r->tools_json, r->tool_only, r->tool_parallel, r->grammar, len + 1, &len, why,
                             sizeof why);
    r->desc.grammar = r->grammar;
    if (r->tool_mode == API_TOOLS_AUTO) r->desc.grammar_triggers[0] = ember_tool_syntax_trigger(syntax);
    r->calls = true;
    return true;
}
