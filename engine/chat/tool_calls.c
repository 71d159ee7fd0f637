/* tool_calls.c — the four tool-call syntaxes: recognised in a template, written as GBNF
 * around each tool's arguments schema (json_schema.h), read back out of a reply. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/strbuf.h"
#include "engine/grammar/json.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/json_text.h"
#include "tool_calls.h"

/* Per syntax: what a template holds when it teaches it, the trigger, the key of the
 * arguments, and the GBNF around the calls (before, between, after). */
static const struct {
    const char *marker, *trigger, *args, *open, *sep, *close;
} SYNTAX[] = {
    [EMBER_TOOLS_JSON] = {NULL, "{\"tool_calls\"", "arguments", "\"{\\\"tool_calls\\\"\" ws \":\" ws \"[\" ws",
                          "ws \",\" ws", "ws \"]\" ws \"}\""},
    [EMBER_TOOLS_HERMES] = {"<tool_call>", "<tool_call>", "arguments", "\"<tool_call>\" ws",
                            "ws \"</tool_call>\" ws \"<tool_call>\" ws", "ws \"</tool_call>\""},
    [EMBER_TOOLS_MISTRAL] = {"[TOOL_CALLS]", "[TOOL_CALLS]", "arguments", "\"[TOOL_CALLS]\" ws \"[\" ws",
                             "ws \",\" ws", "ws \"]\""},
    [EMBER_TOOLS_LLAMA3] = {"<|python_tag|>", "{\"name\"", "parameters", "", NULL, ""},
};

static bool valid(ember_tool_syntax s) { return (unsigned)s <= EMBER_TOOLS_LLAMA3; }

ember_tool_syntax ember_tool_syntax_of(const char *tmpl, size_t len)
{
    for (int s = EMBER_TOOLS_HERMES; s <= EMBER_TOOLS_LLAMA3; s++) {
        size_t n = strlen(SYNTAX[s].marker);
        for (size_t i = 0; tmpl && i + n <= len; i++)
            if (!memcmp(tmpl + i, SYNTAX[s].marker, n)) return (ember_tool_syntax)s;
    }
    return EMBER_TOOLS_JSON;
}

const char *ember_tool_trigger(ember_tool_syntax s) { return SYNTAX[valid(s) ? s : EMBER_TOOLS_JSON].trigger; }

/* Appends the GBNF lines of rules to out, but not a line out already holds (the rules
 * every schema shares: ws, char, string, ...). */
static void add_lines(ember_sbuf *out, const char *rules)
{
    for (const char *l = rules; *l;) {
        const char *end = strchr(l, '\n');
        size_t n = end ? (size_t)(end - l + 1) : strlen(l);
        bool seen = false;
        for (const char *o = out->s; o && !seen && *o;) {
            const char *oe = strchr(o, '\n');
            size_t on = oe ? (size_t)(oe - o + 1) : strlen(o);
            seen = on == n && !memcmp(o, l, n);
            o += on;
        }
        if (!seen) ember_sbuf_add(out, l, n);
        l += n;
    }
}

/* Tool i's call object as an alternative of rule "call": {"name": "NAME", "ARGS": tool-i}
 * (Llama's written with the trigger's exact text first), its schema's rules into rules. */
static ember_status one_tool(ember_tool_syntax s, const char *json, const ember_json *tool, int i, bool first,
                             ember_sbuf *alt, ember_sbuf *rules, ember_err *err)
{
    const ember_json *fn = ember_json_get(tool, "function");
    const ember_json *name = ember_json_get(fn, "name"), *params = ember_json_get(fn, "parameters");
    if (!name || name->kind != EJ_STRING || !name->len)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "tools[%d]: a function needs a name", i);
    char top[32], *gbnf = NULL;
    snprintf(top, sizeof top, "tool-%d", i);
    const char *schema = params ? json + params->at : "{\"type\": \"object\"}";
    size_t schema_len = params ? params->span : strlen(schema);
    ember_status st = ember_json_schema_rules(schema, schema_len, top, &gbnf, err);
    if (st != EMBER_OK) return ember_fail_ctx(err, st, "tools[%d] (%s): parameters", i, name->str);
    add_lines(rules, gbnf);
    ember_free(gbnf);
    ember_sbuf_printf(alt, "%s(\"{\\\"name\\\"\" ws \":\" ws \"\\\"", first ? "" : " | ");
    ember_jtext_string_content(alt, name->str, name->len);
    ember_sbuf_printf(alt, "\\\"\" ws \",\" ws \"\\\"%s\\\"\" ws \":\" ws %s ws", SYNTAX[s].args, top);
    if (s == EMBER_TOOLS_MISTRAL) /* Mistral Nemo adds a call id of 9 letters and digits */
        ember_sbuf_puts(alt, " (\",\" ws \"\\\"id\\\"\" ws \":\" ws \"\\\"\" [a-zA-Z0-9]{9} \"\\\"\" ws)?");
    ember_sbuf_puts(alt, " \"}\")");
    return EMBER_OK;
}

ember_status ember_tool_grammar(ember_tool_syntax s, const char *tools_json, size_t len, const char *only,
                                bool parallel, char **gbnf, ember_err *err)
{
    *gbnf = NULL;
    ember_json_doc *doc = NULL;
    const ember_json *tools;
    ember_err jerr = {{0}};
    if (!valid(s)) return ember_fail(err, EMBER_ERR_INVALID_ARG, "unknown tool-call syntax %d", (int)s);
    if (ember_json_parse(tools_json, len, &doc, &tools, &jerr) != EMBER_OK || tools->kind != EJ_ARRAY || !tools->n) {
        ember_json_free(doc);
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "tools: a non-empty array of functions is needed%s%s",
                          jerr.msg[0] ? ": " : "", jerr.msg);
    }
    ember_sbuf alt = {0}, rules = {0}, out = {0};
    ember_status st = EMBER_OK;
    int n = 0;
    for (uint32_t i = 0; st == EMBER_OK && i < tools->n; i++) {
        const ember_json *name = ember_json_get(ember_json_get(&tools->items[i], "function"), "name");
        if (only && !(name && name->kind == EJ_STRING && !strcmp(name->str, only))) continue;
        st = one_tool(s, tools_json, &tools->items[i], (int)i, n == 0, &alt, &rules, err);
        n += st == EMBER_OK;
    }
    if (st == EMBER_OK && !n) st = ember_fail(err, EMBER_ERR_INVALID_ARG, "tool_choice: no tool named '%s'", only);
    if (st == EMBER_OK) {
        if (parallel && SYNTAX[s].sep)
            ember_sbuf_printf(&out, "root ::= %s call (%s call)* %s\n", SYNTAX[s].open, SYNTAX[s].sep, SYNTAX[s].close);
        else
            ember_sbuf_printf(&out, "root ::= %s call %s\n", SYNTAX[s].open, SYNTAX[s].close);
        ember_sbuf_printf(&out, "call ::= %s\n", alt.s);
        add_lines(&out, rules.s ? rules.s : "");
        if (out.oom) st = ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    ember_free(alt.s);
    ember_free(rules.s);
    ember_json_free(doc);
    if (st == EMBER_OK) *gbnf = ember_sbuf_take(&out);
    else ember_free(out.s);
    return st;
}

/* ---- reading calls back ----------------------------------------------------------- */

/* Where needle first is in text[from .. len), or len. */
static size_t find(const char *text, size_t from, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = from; i + n <= len; i++)
        if (!memcmp(text + i, needle, n)) return i;
    return len;
}

/* Appends {"name": ..., "arguments": "..."} for call object c of text to out. */
static bool add_call(ember_tool_syntax s, const char *text, const ember_json *c, ember_sbuf *out)
{
    const ember_json *name = ember_json_get(c, "name"), *args = ember_json_get(c, SYNTAX[s].args);
    if (!name || name->kind != EJ_STRING || !args) return false;
    ember_sbuf_puts(out, out->len > 1 ? ", {\"name\": " : "{\"name\": ");
    ember_json_quote(out, name->str, name->len);
    ember_sbuf_puts(out, ", \"arguments\": ");
    ember_json_quote(out, text + args->at, args->span);
    ember_sbuf_puts(out, "}");
    return true;
}

/* The calls in json[0..len) (a part of text from its offset `base`): one object, or an
 * array of them, or {"tool_calls": [...]} (the JSON syntax). */
static bool calls_of(ember_tool_syntax s, const char *text, size_t base, size_t len, ember_sbuf *out)
{
    ember_json_doc *doc = NULL;
    const ember_json *v;
    ember_err e = {{0}};
    bool ok = ember_json_parse(text + base, len, &doc, &v, &e) == EMBER_OK;
    if (ok && s == EMBER_TOOLS_JSON) v = ember_json_get(v, "tool_calls");
    if (ok && v && v->kind == EJ_ARRAY)
        for (uint32_t i = 0; ok && i < v->n; i++) ok = add_call(s, text + base, &v->items[i], out);
    else ok = ok && v && add_call(s, text + base, v, out);
    ember_json_free(doc);
    return ok;
}

ember_status ember_tool_parse(ember_tool_syntax s, const char *text, size_t len, size_t *content_len, char **calls,
                              ember_err *err)
{
    *calls = NULL, *content_len = len;
    if (!valid(s)) return ember_fail(err, EMBER_ERR_INVALID_ARG, "unknown tool-call syntax %d", (int)s);
    const char *trig = SYNTAX[s].trigger;
    size_t tn = strlen(trig), at = find(text, 0, len, trig);
    bool bare = false; /* Mistral's [TOOL_CALLS] is a control token: a reply's text may hold only its array */
    if (at == len && s == EMBER_TOOLS_MISTRAL) at = find(text, 0, len, "[{"), bare = true;
    if (at == len) return EMBER_OK;
    ember_sbuf out = {0};
    ember_sbuf_puts(&out, "[");
    bool ok = true;
    if (s == EMBER_TOOLS_HERMES) { /* <tool_call>{...}</tool_call>, each */
        for (size_t open = at; ok && open < len; open = find(text, open, len, "<tool_call>")) {
            size_t close = find(text, open, len, "</tool_call>"), from = open + tn;
            ok = close < len && calls_of(s, text, from, close - from, &out);
            open = close + 12;
        }
    } else {
        size_t from = at + (s == EMBER_TOOLS_MISTRAL && !bare ? tn : 0);
        ok = calls_of(s, text, from, len - from, &out);
    }
    ember_sbuf_puts(&out, "]");
    if (!ok || out.oom) {
        ember_free(out.s);
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "the reply's tool calls do not parse");
    }
    *content_len = at;
    *calls = ember_sbuf_take(&out);
    return EMBER_OK;
}
