/* json_schema.c — a schema is read as a "view": the list of schema objects that apply
 * together (allOf's members and the schema holding them). Each view becomes one GBNF
 * rule; rules with the same body are written once, and $ref targets get their rule
 * before their body is made, so recursive schemas work. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/strbuf.h"
#include "decimal_range.h"
#include "json.h"
#include "json_schema.h"
#include "json_text.h"
#include "engine/tokenizer/utf8.h"
#include "regex.h"

#define MAX_LAYERS 16
#define MAX_DEPTH 64
#define MAX_CHARS 1000   /* the longest string written (GBNF counts stop at 1000) */
#define MAX_DIGITS 16    /* integer digits of an unbounded number */
#define MAX_KEY 64       /* characters of a key additionalProperties allows */

typedef struct view {
    const ember_json *layer[MAX_LAYERS];
    uint32_t n;
    uint32_t alts_from;  /* layers before it had their anyOf/oneOf taken apart already */
} view;

typedef struct rule {
    char *name, *body;   /* body NULL: reserved for a $ref being made */
} rule;

typedef struct ref {
    const ember_json *target;
    char *name;
} ref;

typedef struct conv {
    const ember_json *root;
    const char *top;     /* the top rule's name: every rule made from a $ref is named after it */
    rule *rules;
    uint32_t n_rules, cap_rules;
    ref *refs;
    uint32_t n_refs, cap_refs;
    char path[512];      /* JSON pointer of the schema being read */
    int depth;
    ember_err *err;
    bool failed;
} conv;

/* Keywords that only annotate: they change nothing a grammar could enforce. */
static const char *const ANNOTATIONS[] = {"$schema", "$id", "id", "title", "description", "default", "examples",
                                          "$comment", "readOnly", "writeOnly", "deprecated", "$defs",
                                          "definitions", "$anchor", "contentMediaType", "contentEncoding", NULL};
/* Keywords that shape the grammar. */
static const char *const KEYWORDS[] = {"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "properties",
                                       "required", "additionalProperties", "items", "prefixItems",
                                       "additionalItems", "minItems", "maxItems", "minLength", "maxLength",
                                       "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
                                       "exclusiveMaximum", NULL};

static bool in_list(const char *k, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(k, *list)) return true;
    return false;
}

static bool fail(conv *c, const char *fmt, const char *arg)
{
    if (!c->failed) {
        char why[256];
        snprintf(why, sizeof why, fmt, arg);
        ember_fail(c->err, EMBER_ERR_INVALID_ARG, "json schema: at %s: %s", c->path[0] ? c->path : "/", why);
    }
    c->failed = true;
    return false;
}

/* ---- paths, rules ----------------------------------------------------------------- */

/* Appends /key (escaped as a JSON pointer) to the path; returns the old length. */
static size_t push(conv *c, const char *key)
{
    size_t n = strlen(c->path), at = n;
    if (at + 2 < sizeof c->path) c->path[at++] = '/';
    for (const char *k = key; *k && at + 3 < sizeof c->path; k++) {
        if (*k == '~' || *k == '/') c->path[at++] = '~', c->path[at++] = *k == '~' ? '0' : '1';
        else c->path[at++] = *k;
    }
    c->path[at] = 0;
    return n;
}

static void pop(conv *c, size_t n) { c->path[n] = 0; }

/* A rule name made from hint: letters, digits and '-', unique among the rules. */
static char *unique_name(conv *c, const char *hint)
{
    char base[64];
    size_t n = 0;
    for (const char *h = hint; *h && n < sizeof base - 8; h++) {
        char ch = *h;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (ok || (n && base[n - 1] != '-')) base[n++] = ok ? ch : '-';
    }
    while (n && base[n - 1] == '-') n--;
    if (!n) base[n++] = 'r';
    base[n] = 0;
    char name[80];
    snprintf(name, sizeof name, "%s", base);
    for (int k = 2;; k++) {
        uint32_t i = 0;
        while (i < c->n_rules && strcmp(c->rules[i].name, name)) i++;
        if (i == c->n_rules) break;
        snprintf(name, sizeof name, "%s-%d", base, k);
    }
    return ember_strdup(name);
}

static bool grow(conv *c, void **p, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap) return true;
    uint32_t n = *cap ? *cap * 2 : 16;
    void *q = ember_realloc(*p, (size_t)n * size);
    if (!q) return fail(c, "%s", "out of memory");
    *p = q, *cap = n;
    return true;
}

/* The name of a rule with this body: an existing one with the same body, or a new one
 * named after hint. Takes body (NULL: reserve a name for a body set later). */
static const char *add_rule(conv *c, const char *hint, char *body)
{
    for (uint32_t i = 0; body && i < c->n_rules; i++)
        if (c->rules[i].body && !strcmp(c->rules[i].body, body)) {
            ember_free(body);
            return c->rules[i].name;
        }
    char *name = unique_name(c, hint);
    if (!name || !grow(c, (void **)&c->rules, &c->cap_rules, c->n_rules + 1, sizeof *c->rules)) {
        ember_free(name), ember_free(body);
        return NULL;
    }
    c->rules[c->n_rules++] = (rule){name, body};
    return name;
}

/* A fixed rule (ws, string, ...) by name, added the first time it is used. */
static const char *fixed(conv *c, const char *name, const char *body)
{
    for (uint32_t i = 0; i < c->n_rules; i++)
        if (!strcmp(c->rules[i].name, name)) return c->rules[i].name;
    char *n = ember_strdup(name), *b = ember_strdup(body);
    if (!n || !b || !grow(c, (void **)&c->rules, &c->cap_rules, c->n_rules + 1, sizeof *c->rules)) {
        ember_free(n), ember_free(b);
        fail(c, "%s", "out of memory");
        return NULL;
    }
    c->rules[c->n_rules++] = (rule){n, b};
    return n;
}

/* ---- the primitives of any JSON --------------------------------------------------- */

static void prim_char(conv *c)
{
    static const uint32_t any[] = {0, 0xD7FF, 0xE000, 0x10FFFF};
    ember_sbuf b = {0};
    ember_jtext_chars(&b, any, 2);
    char *body = ember_sbuf_take(&b);
    if (body) fixed(c, "char", body);
    ember_free(body);
}

static const char *prim(conv *c, const char *name)
{
    fixed(c, EMBER_JSON_WS, EMBER_JSON_WS_BODY);
    if (!strcmp(name, EMBER_JSON_WS)) return EMBER_JSON_WS;
    if (!strcmp(name, "string") || !strcmp(name, "value") || !strcmp(name, "object")) prim_char(c);
    if (!strcmp(name, "string")) return fixed(c, "string", "\"\\\"\" char* \"\\\"\"");
    if (!strcmp(name, "integer")) return fixed(c, "integer", "\"-\"? (\"0\" | [1-9] [0-9]{0,15})");
    if (!strcmp(name, "number"))
        return fixed(c, "number", "\"-\"? (\"0\" | [1-9] [0-9]{0,15}) (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?");
    if (!strcmp(name, "boolean")) return fixed(c, "boolean", "\"true\" | \"false\"");
    if (!strcmp(name, "null")) return fixed(c, "null", "\"null\"");
    prim(c, "string"), prim(c, "number"), prim(c, "boolean"), prim(c, "null");
    fixed(c, "value", "object | array | string | number | boolean | null");
    fixed(c, "object", "\"{\" ws ( string ws \":\" ws value ws (\",\" ws string ws \":\" ws value ws)* )? \"}\"");
    fixed(c, "array", "\"[\" ws ( value ws (\",\" ws value ws)* )? \"]\"");
    return strcmp(name, "value") && strcmp(name, "object") && strcmp(name, "array") ? (fail(c, "%s", "internal"), NULL)
                                                                                     : name;
}

/* ---- views ------------------------------------------------------------------------ */

static bool deep_equal(const ember_json *a, const ember_json *b)
{
    if (a->kind != b->kind || a->n != b->n) return false;
    if (a->kind == EJ_STRING || a->kind == EJ_NUMBER) return a->len == b->len && !memcmp(a->str, b->str, a->len);
    for (uint32_t i = 0; i < a->n; i++)
        if ((a->kind == EJ_OBJECT && strcmp(a->keys[i], b->keys[i])) || !deep_equal(&a->items[i], &b->items[i]))
            return false;
    return true;
}

/* The schema a local $ref points to ("#", "#/$defs/x", any JSON pointer), or NULL. */
static const ember_json *resolve(conv *c, const ember_json *r)
{
    if (r->kind != EJ_STRING || r->str[0] != '#') return fail(c, "$ref \"%s\": only references within the schema "
                                                                 "(starting with #) are supported", r->str), NULL;
    const ember_json *at = c->root;
    for (const char *p = r->str + 1; at && *p == '/';) {
        char key[256];
        size_t n = 0;
        for (p++; *p && *p != '/' && n < sizeof key - 1; p++) {
            if (*p == '~' && (p[1] == '0' || p[1] == '1')) key[n++] = p[1] == '0' ? '~' : '/', p++;
            else key[n++] = *p;
        }
        key[n] = 0;
        if (at->kind == EJ_ARRAY) {
            char *end;
            unsigned long i = strtoul(key, &end, 10);
            at = *end || i >= at->n ? NULL : &at->items[i];
        } else {
            at = ember_json_get(at, key);
        }
    }
    if (!at) fail(c, "$ref \"%s\" points at nothing", r->str);
    return at;
}

/* Adds schema s (and what its allOf holds) to v. */
static bool view_add(conv *c, view *v, const ember_json *s, int depth)
{
    if (depth > MAX_DEPTH) return fail(c, "%s", "allOf or $ref nested more than 64 deep");
    if (s->kind == EJ_TRUE) return true;
    if (s->kind == EJ_FALSE) return fail(c, "%s", "the schema false matches nothing");
    if (s->kind != EJ_OBJECT) return fail(c, "%s", "a schema must be an object or a boolean");
    for (uint32_t i = 0; i < s->n; i++)
        if (!in_list(s->keys[i], KEYWORDS) && !in_list(s->keys[i], ANNOTATIONS))
            return fail(c, "keyword '%s' is not supported", s->keys[i]);
    if (v->n == MAX_LAYERS) return fail(c, "%s", "allOf holds more than 16 schemas");
    v->layer[v->n++] = s;
    const ember_json *all = ember_json_get(s, "allOf"), *r = ember_json_get(s, "$ref");
    if (all && (all->kind != EJ_ARRAY || !all->n)) return fail(c, "%s", "allOf must be a non-empty array");
    for (uint32_t i = 0; all && i < all->n; i++)
        if (!view_add(c, v, &all->items[i], depth + 1)) return false;
    const ember_json *target = r ? resolve(c, r) : NULL;
    return !r || (target && view_add(c, v, target, depth + 1));
}

/* Keyword k in view v: its value where the layers that have it agree; NULL when none has
 * it (anyOf/oneOf: none of the layers from alts_from on). */
static const ember_json *kw(conv *c, const view *v, const char *k)
{
    bool alts = !strcmp(k, "anyOf") || !strcmp(k, "oneOf");
    const ember_json *found = NULL;
    for (uint32_t i = alts ? v->alts_from : 0; i < v->n; i++) {
        const ember_json *x = ember_json_get(v->layer[i], k);
        if (x && found && !deep_equal(x, found)) return fail(c, "allOf: its schemas give '%s' different values", k), NULL;
        if (x) found = x;
    }
    return found;
}

/* Whether any layer has a keyword that constrains type t's values. */
static bool has_any(const view *v, const char *const *keys)
{
    for (uint32_t i = 0; i < v->n; i++)
        for (const char *const *k = keys; *k; k++)
            if (ember_json_get(v->layer[i], *k)) return true;
    return false;
}

/* ---- types ------------------------------------------------------------------------ */

enum { T_NULL = 1, T_BOOLEAN = 2, T_OBJECT = 4, T_ARRAY = 8, T_NUMBER = 16, T_STRING = 32, T_INTEGER = 64,
       T_ALL = 127 };
static const char *const TYPE_NAMES[] = {"null", "boolean", "object", "array", "number", "string", "integer"};

static unsigned type_bit(const char *name)
{
    for (unsigned i = 0; i < 7; i++)
        if (!strcmp(name, TYPE_NAMES[i])) return 1u << i;
    return 0;
}

static bool types_of(conv *c, const view *v, unsigned *t)
{
    const ember_json *ty = kw(c, v, "type");
    if (c->failed) return false;
    *t = ty ? 0 : T_ALL;
    for (uint32_t i = 0; ty && i < (ty->kind == EJ_ARRAY ? ty->n : 1); i++) {
        const ember_json *n = ty->kind == EJ_ARRAY ? &ty->items[i] : ty;
        unsigned b = n->kind == EJ_STRING ? type_bit(n->str) : 0;
        if (!b) return fail(c, "%s", "type must be a type name or an array of them");
        *t |= b;
    }
    if (*t & T_NUMBER) *t &= ~(unsigned)T_INTEGER; /* integers are numbers */
    return true;
}

static unsigned type_of_value(const ember_json *x)
{
    switch (x->kind) {
    case EJ_NULL: return T_NULL;
    case EJ_TRUE:
    case EJ_FALSE: return T_BOOLEAN;
    case EJ_OBJECT: return T_OBJECT;
    case EJ_ARRAY: return T_ARRAY;
    case EJ_STRING: return T_STRING;
    default: return strpbrk(x->str, ".eE") ? T_NUMBER : T_NUMBER | T_INTEGER;
    }
}

static const char *schema_rule(conv *c, const view *v, const char *hint);

/* A subschema at key, and at index i of the array there unless i < 0. */
static const char *sub_rule(conv *c, const ember_json *s, const char *key, int i, const char *hint)
{
    size_t mark = push(c, key);
    char index[16];
    snprintf(index, sizeof index, "%d", i);
    if (i >= 0) push(c, index);
    view v = {.n = 0};
    const char *name = view_add(c, &v, s, 0) ? schema_rule(c, &v, hint) : NULL;
    if (name) pop(c, mark);
    return name;
}

static char *hint2(const char *a, const char *b)
{
    char *h = ember_malloc(strlen(a) + strlen(b) + 2);
    if (h) sprintf(h, "%s-%s", a, b);
    return h;
}

/* ---- strings ---------------------------------------------------------------------- */

static bool count_kw(conv *c, const view *v, const char *k, long *out)
{
    const ember_json *x = kw(c, v, k);
    if (!x) return !c->failed;
    char *end;
    double d = x->kind == EJ_NUMBER ? strtod(x->str, &end) : -1;
    if (d < 0 || d != (double)(long)d) return fail(c, "%s must be a non-negative integer", k);
    *out = (long)d;
    return true;
}

static bool string_body(conv *c, const view *v, ember_sbuf *b)
{
    /* RFC 3339 dates and times as strict validators take them: real days of each month
     * (29 February in leap years only), years 0001-9999, seconds 00-59 (no leap second),
     * an upper-case T; an e-mail address of the common form (local part and labels of
     * letters, digits and . _ + -, at most 32 characters each, 2-4 labels) */
    static const char *const DAY = "(\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8])";
    static const char *const LEAP = "([0-9]{2} (\"0\" [48] | [2468] [048] | [13579] [26]) | (\"0\" [48] | [2468] [048] | "
                                    "[13579] [26]) \"00\")";
    static const char *const FORMATS[][2] = {
        {"date", NULL},
        {"time", "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,9})? "
                 "(\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])"},
        {"date-time", NULL},
        {"uuid", "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}"},
        {"email", "[a-zA-Z0-9_+] ([a-zA-Z0-9._+-]{0,30} [a-zA-Z0-9_+-])? \"@\" [a-zA-Z0-9] ([a-zA-Z0-9-]{0,30} "
                  "[a-zA-Z0-9])? (\".\" [a-zA-Z0-9] ([a-zA-Z0-9-]{0,30} [a-zA-Z0-9])?){1,3}"}};
    const ember_json *fmt = kw(c, v, "format"), *pat = kw(c, v, "pattern");
    long lo = 0, hi = -1;
    if (!count_kw(c, v, "minLength", &lo) || !count_kw(c, v, "maxLength", &hi)) return false;
    bool lengths = kw(c, v, "minLength") || kw(c, v, "maxLength");
    if ((fmt && (pat || lengths)) || (pat && lengths))
        return fail(c, "%s", fmt ? "format beside pattern, minLength or maxLength is not supported"
                                 : "pattern beside minLength or maxLength is not supported");
    if (fmt) {
        ember_sbuf date = {0};
        ember_sbuf_printf(&date, "((\"000\" [1-9] | \"00\" [1-9] [0-9] | \"0\" [1-9] [0-9]{2} | [1-9] [0-9]{3}) \"-\" "
                          "((\"0\" [13578] | \"1\" [02]) \"-\" (%s | \"29\" | \"30\" | \"31\") | (\"0\" [469] | \"11\") \"-\" "
                          "(%s | \"29\" | \"30\") | \"02-\" %s) | %s \"-02-29\")", DAY, DAY, DAY, LEAP);
        if (date.oom) return fail(c, "%s", "out of memory");
        for (size_t i = 0; fmt->kind == EJ_STRING && i < sizeof FORMATS / sizeof *FORMATS; i++) {
            if (strcmp(fmt->str, FORMATS[i][0])) continue;
            ember_sbuf_puts(b, "\"\\\"\" ");
            if (FORMATS[i][1]) ember_sbuf_puts(b, FORMATS[i][1]);
            else if (i == 0) ember_sbuf_puts(b, date.s);
            else ember_sbuf_printf(b, "%s \"T\" %s", date.s, FORMATS[1][1]);
            ember_sbuf_puts(b, " \"\\\"\"");
            ember_free(date.s);
            return true;
        }
        ember_free(date.s);
        return fail(c, "format '%s' is not supported (date, time, date-time, uuid, email are)",
                    fmt->kind == EJ_STRING ? fmt->str : "?");
    }
    if (pat) {
        if (pat->kind != EJ_STRING) return fail(c, "%s", "pattern must be a string");
        ember_sbuf_puts(b, "\"\\\"\" ");
        size_t mark = push(c, "pattern");
        if (ember_regex_to_gbnf(pat->str, pat->len, b, c->err) != EMBER_OK) {
            ember_fail_ctx(c->err, EMBER_ERR_INVALID_ARG, "json schema: at %s", c->path);
            return c->failed = true, false;
        }
        pop(c, mark);
        ember_sbuf_puts(b, " \"\\\"\"");
        return true;
    }
    if (hi >= 0 && hi < lo) return fail(c, "%s", "maxLength is below minLength");
    if (lo > MAX_CHARS) return fail(c, "%s", "minLength above 1000 is not supported");
    prim_char(c);
    if (!lengths) ember_sbuf_puts(b, prim(c, "string"));
    else if (hi < 0) ember_sbuf_printf(b, "\"\\\"\" char{%ld,} \"\\\"\"", lo);
    else ember_sbuf_printf(b, "\"\\\"\" char{%ld,%ld} \"\\\"\"", lo, hi > MAX_CHARS ? MAX_CHARS : hi);
    return true;
}

/* ---- numbers ---------------------------------------------------------------------- */

/* A bound of an integer: inclusive, rounded inward. */
static bool int_bound(conv *c, const view *v, bool upper, bool *has, long long *out)
{
    const ember_json *inc = kw(c, v, upper ? "maximum" : "minimum"), *exc = kw(c, v, upper ? "exclusiveMaximum"
                                                                                           : "exclusiveMinimum");
    *has = false;
    if (c->failed) return false;
    const ember_json *x = exc && exc->kind == EJ_NUMBER ? exc : inc;
    bool exclusive = (exc && exc->kind == EJ_NUMBER) || (exc && exc->kind == EJ_TRUE); /* draft 4: a boolean */
    if (exc && exc->kind == EJ_NUMBER && inc) return fail(c, "%s", "both an inclusive and an exclusive bound on "
                                                                   "one side is not supported");
    if (!x) return true;
    if (x->kind != EJ_NUMBER) return fail(c, "%s", "a bound must be a number");
    double d = strtod(x->str, NULL);
    if (d > 9e15 || d < -9e15) return fail(c, "%s", "bounds beyond 15 digits are not supported");
    double r = upper ? __builtin_floor(d) : __builtin_ceil(d);
    long long k = (long long)r;
    if (exclusive && r == d) k += upper ? -1 : 1;
    *has = true, *out = k;
    return true;
}

/* Integers lo..hi (either side open): a sign and naturals for each side of zero. */
static void integer_range(ember_sbuf *o, bool has_lo, long long lo, bool has_hi, long long hi)
{
    const char *sep = "";
    ember_sbuf_puts(o, "(");
    if (!has_lo || lo < 0) { /* the negatives: magnitudes max(1, -hi) .. -lo */
        uint64_t from = has_hi && hi < 0 ? (uint64_t)(-hi) : 1, to = has_lo ? (uint64_t)(-lo) : UINT64_MAX;
        ember_sbuf_puts(o, "\"-\" ");
        ember_naturals(o, from, to);
        sep = " | ";
    }
    if (!has_hi || hi >= 0) {
        ember_sbuf_puts(o, sep);
        ember_naturals(o, has_lo && lo > 0 ? (uint64_t)lo : 0, has_hi ? (uint64_t)hi : UINT64_MAX);
    }
    ember_sbuf_puts(o, ")");
}

/* A bound of a number (not an integer) as an exact decimal: the inclusive keyword's, or
 * the exclusive one's (draft 4: a boolean beside the inclusive). false: a failure. */
static bool decimal_bound(conv *c, const view *v, bool upper, bool *has, ember_decimal *d)
{
    const ember_json *inc = kw(c, v, upper ? "maximum" : "minimum");
    const ember_json *exc = kw(c, v, upper ? "exclusiveMaximum" : "exclusiveMinimum");
    *has = false;
    if (c->failed) return false;
    if (exc && exc->kind == EJ_NUMBER && inc)
        return fail(c, "%s", "both an inclusive and an exclusive bound on one side is not supported");
    const ember_json *x = exc && exc->kind == EJ_NUMBER ? exc : inc;
    if (!x) return true;
    if (x->kind != EJ_NUMBER || !ember_decimal_parse(x->str, d))
        return fail(c, "%s", "a bound must be a number of at most 15 integer and 31 fraction digits");
    d->inclusive = !((exc && exc->kind == EJ_NUMBER) || (exc && exc->kind == EJ_TRUE));
    *has = true;
    return true;
}

static bool number_body(conv *c, const view *v, bool integer, ember_sbuf *b)
{
    bool has_lo, has_hi;
    long long lo, hi;
    if (integer) {
        if (!int_bound(c, v, false, &has_lo, &lo) || !int_bound(c, v, true, &has_hi, &hi)) return false;
        if (has_lo && has_hi && hi < lo) return fail(c, "%s", "maximum is below minimum");
        if (!has_lo && !has_hi) return ember_sbuf_puts(b, prim(c, "integer")), true;
        return integer_range(b, has_lo, lo, has_hi, hi), true;
    }
    ember_decimal dlo, dhi;
    if (!decimal_bound(c, v, false, &has_lo, &dlo) || !decimal_bound(c, v, true, &has_hi, &dhi)) return false;
    if (!has_lo && !has_hi) return ember_sbuf_puts(b, prim(c, "number")), true;
    return ember_decimal_range(b, has_lo ? &dlo : NULL, has_hi ? &dhi : NULL) ||
           fail(c, "%s", "the bounds leave no number");
}

/* ---- arrays ----------------------------------------------------------------------- */

/* Items i.. of an array with prefix items pre[0..k) then rest (NULL: none), between min
 * and max items in all (max < 0: no limit). */
static void items_from(ember_sbuf *b, const char **pre, uint32_t k, const char *rest, long i, long min, long max)
{
    const char *sep = i ? "\",\" ws " : "";
    if (i < (long)k) {
        bool optional = i >= min; /* the array may end before item i */
        if (max >= 0 && i >= max) return;
        ember_sbuf_printf(b, "%s%s%s ws ", optional ? "( " : "", sep, pre[i]);
        items_from(b, pre, k, rest, i + 1, min, max);
        if (optional) ember_sbuf_puts(b, ")? ");
        return;
    }
    if (!rest) return;
    long lo = min > i ? min - i : 0, hi = max >= 0 ? max - i : -1;
    if (hi == 0) return;
    if (i == 0) { /* the first item has no comma before it */
        ember_sbuf_printf(b, "%s%s ws (\",\" ws %s ws)", lo ? "" : "( ", rest, rest);
        if (hi < 0) ember_sbuf_printf(b, "{%ld,}", lo ? lo - 1 : 0);
        else ember_sbuf_printf(b, "{%ld,%ld}", lo ? lo - 1 : 0, hi - 1);
        ember_sbuf_puts(b, lo ? " " : " )? ");
        return;
    }
    ember_sbuf_printf(b, "(\",\" ws %s ws)", rest);
    if (hi < 0) ember_sbuf_printf(b, "{%ld,} ", lo);
    else ember_sbuf_printf(b, "{%ld,%ld} ", lo, hi);
}

static bool array_body(conv *c, const view *v, const char *hint, ember_sbuf *b)
{
    const ember_json *items = kw(c, v, "items"), *prefix = kw(c, v, "prefixItems"), *extra = kw(c, v, "additionalItems");
    long min = 0, max = -1;
    if (!count_kw(c, v, "minItems", &min) || !count_kw(c, v, "maxItems", &max)) return false;
    if (max >= 0 && max < min) return fail(c, "%s", "maxItems is below minItems");
    if (min > MAX_CHARS || max > MAX_CHARS) return fail(c, "%s", "minItems or maxItems above 1000 is not supported");
    if (prefix && items && items->kind == EJ_ARRAY) return fail(c, "%s", "prefixItems beside an array of items");
    const ember_json *tuple = prefix ? prefix : items && items->kind == EJ_ARRAY ? items : NULL;
    const ember_json *rest = tuple ? (prefix ? items : extra) : items; /* NULL: any value */
    if (tuple && tuple->n > 64) return fail(c, "%s", "more than 64 prefix items");
    const char *pre[64], *rest_rule = NULL;
    char *h = hint2(hint, "item");
    for (uint32_t i = 0; tuple && h && i < tuple->n; i++) {
        if (!(pre[i] = sub_rule(c, &tuple->items[i], prefix ? "prefixItems" : "items", (int)i, h)))
            return ember_free(h), false;
    }
    if (!rest) rest_rule = prim(c, "value");
    else if (rest->kind != EJ_FALSE)
        rest_rule = sub_rule(c, rest, tuple ? (prefix ? "items" : "additionalItems") : "items", -1, h);
    ember_free(h);
    if (c->failed) return false;
    ember_sbuf_puts(b, "\"[\" ws ");
    items_from(b, pre, tuple ? tuple->n : 0, rest_rule, 0, min, max);
    ember_sbuf_puts(b, "\"]\"");
    if (tuple && !rest_rule && (long)tuple->n < min) return fail(c, "%s", "minItems exceeds the items allowed");
    return true;
}

/* ---- objects ---------------------------------------------------------------------- */

typedef struct prop {
    const char *name;
    const char *rule;    /* its value's rule */
    bool required;
} prop;

/* The rule for the members from i on; first: no member written yet (no comma before the
 * next). An optional member is written or left out, so the rules are per (i, first):
 * 2 n rules, not 2^n alternatives. "" when nothing can follow. */
static const char *members(conv *c, const prop *p, uint32_t n, uint32_t i, bool first, const char *extra,
                           const char *hint)
{
    ember_sbuf b = {0};
    if (i == n && !extra) return "";
    if (i == n && first) ember_sbuf_printf(&b, "( %s ws (\",\" ws %s ws)* )?", extra, extra);
    else if (i == n) ember_sbuf_printf(&b, "(\",\" ws %s ws)*", extra);
    else {
        const char *present = members(c, p, n, i + 1, false, extra, hint);
        const char *absent = p[i].required ? NULL : members(c, p, n, i + 1, first, extra, hint);
        if (!present || (!p[i].required && !absent)) return ember_free(b.s), NULL;
        ember_sbuf_printf(&b, "%s\"\\\"", first ? "" : "\",\" ws ");
        ember_jtext_string_content(&b, p[i].name, strlen(p[i].name));
        ember_sbuf_printf(&b, "\\\"\" ws \":\" ws %s ws %s", p[i].rule, present);
        if (absent) ember_sbuf_printf(&b, " | %s", absent[0] ? absent : "\"\"");
    }
    char *body = ember_sbuf_take(&b), *h = hint2(hint, first ? "members" : "more");
    const char *name = body && h ? add_rule(c, h, body) : (ember_free(body), NULL);
    ember_free(h);
    if (!name) fail(c, "%s", "out of memory");
    return name;
}

/* Keys that are none of the names key[0..n) (code points, len each), from depth on
 * among those sharing the first depth characters: the key may end here (unless a name
 * does), go on with a character no name goes on with (then anything, up to MAX_KEY
 * characters in all), or follow a name's next character. */
static void other_from(ember_sbuf *b, uint32_t **key, const uint32_t *len, uint32_t n, uint32_t depth)
{
    static const uint32_t ANY_BUT[] = {0, 0xD7FF, 0xE000, 0x10FFFF};
    bool ends = false;
    uint32_t next[256], k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (len[i] == depth) {
            ends = true;
            continue;
        }
        uint32_t j = 0;
        while (j < k && next[j] != key[i][depth]) j++;
        if (j == k && k < 256) next[k++] = key[i][depth];
    }
    ember_sbuf_puts(b, "(");
    const char *sep = "";
    if (!ends) ember_sbuf_puts(b, "\"\""), sep = " | ";
    uint32_t r[2 * 260], nr = 0, at = 0; /* every character but next[] */
    for (uint32_t lo = 0; lo < k; lo++)
        for (uint32_t q = lo + 1; q < k; q++)
            if (next[q] < next[lo]) { uint32_t t = next[q]; next[q] = next[lo]; next[lo] = t; }
    for (uint32_t q = 0; q < k; q++) {
        if (next[q] > at) r[2 * nr] = at, r[2 * nr + 1] = next[q] - 1, nr++;
        at = next[q] + 1;
    }
    if (at <= 0x10FFFF) r[2 * nr] = at, r[2 * nr + 1] = 0x10FFFF, nr++;
    uint32_t cut[2 * 262], nc = 0; /* without the surrogates */
    for (uint32_t q = 0; q < nr; q++)
        for (int part = 0; part < 2; part++) {
            uint32_t lo = r[2 * q] > ANY_BUT[2 * part] ? r[2 * q] : ANY_BUT[2 * part];
            uint32_t hi = r[2 * q + 1] < ANY_BUT[2 * part + 1] ? r[2 * q + 1] : ANY_BUT[2 * part + 1];
            if (lo <= hi) cut[2 * nc] = lo, cut[2 * nc + 1] = hi, nc++;
        }
    if (nc && depth < MAX_KEY) {
        ember_sbuf_puts(b, sep), ember_jtext_chars(b, cut, nc);
        ember_sbuf_printf(b, " char{0,%u}", MAX_KEY - depth - 1);
        sep = " | ";
    }
    for (uint32_t q = 0; q < k; q++) {
        uint32_t *sub[256], sub_len[256], m = 0, one[2] = {next[q], next[q]};
        for (uint32_t i = 0; i < n; i++)
            if (len[i] > depth && key[i][depth] == next[q] && m < 256) sub[m] = key[i], sub_len[m++] = len[i];
        ember_sbuf_puts(b, sep), ember_jtext_chars(b, one, 1), ember_sbuf_puts(b, " ");
        other_from(b, sub, sub_len, m, depth + 1);
        sep = " | ";
    }
    ember_sbuf_puts(b, ")");
}

/* The rule for keys that are none of the declared property names. */
static const char *other_key(conv *c, const prop *p, uint32_t n, const char *hint)
{
    prim_char(c);
    uint32_t *key[256], len[256];
    bool ok = true;
    for (uint32_t i = 0; i < n; i++) { /* the names as code points */
        size_t bytes = strlen(p[i].name), l;
        key[i] = ember_malloc(sizeof **key * (bytes + 1));
        len[i] = 0;
        ok &= key[i] != NULL && bytes <= 256;
        for (size_t at = 0; ok && at < bytes; at += l) {
            uint32_t cp;
            ok = ember_utf8_decode((const unsigned char *)p[i].name + at, bytes - at, &l, &cp) == EMBER_UTF8_OK;
            if (ok) key[i][len[i]++] = cp;
        }
    }
    ember_sbuf b = {0};
    if (ok) {
        ember_sbuf_puts(&b, "\"\\\"\" ");
        other_from(&b, key, len, n, 0);
        ember_sbuf_puts(&b, " \"\\\"\"");
    }
    for (uint32_t i = 0; i < n; i++) ember_free(key[i]);
    if (!ok) return ember_free(b.s), fail(c, "%s", "additionalProperties beside a property name longer than 256 "
                                                   "bytes is not supported"), NULL;
    char *body = ember_sbuf_take(&b), *h = hint2(hint, "other-key");
    const char *name = body && h ? add_rule(c, h, body) : (ember_free(body), NULL);
    ember_free(h);
    if (!name) fail(c, "%s", "out of memory");
    return name;
}

/* Property name's schema in view v: each layer's properties[name], or where a layer does
 * not declare it, that layer's additionalProperties (a schema applies; false forbids the
 * property: false returned; true or none: nothing), as JSON Schema reads allOf. */
static bool property_view(conv *c, const view *v, const char *name, view *pv)
{
    *pv = (view){.n = 0};
    for (uint32_t l = 0; l < v->n; l++) {
        const ember_json *s = ember_json_get(ember_json_get(v->layer[l], "properties"), name);
        const ember_json *ap = ember_json_get(v->layer[l], "additionalProperties");
        if (!s && ap && ap->kind == EJ_FALSE) return false;
        if ((s || ap) && !view_add(c, pv, s ? s : ap, 0)) return false;
    }
    return true;
}

/* The declared properties of v (each layer's, in order; required ones too), with their
 * value rules; false on a failure. */
static bool properties(conv *c, const view *v, const char *hint, prop *p, uint32_t *n)
{
    *n = 0;
    for (uint32_t l = 0; l < v->n; l++) {
        const ember_json *props = ember_json_get(v->layer[l], "properties"), *req = ember_json_get(v->layer[l], "required");
        if ((props && props->kind != EJ_OBJECT) || (req && req->kind != EJ_ARRAY))
            return fail(c, "%s", "properties must be an object, required an array of names");
        for (uint32_t i = 0; i < (props ? props->n : 0) + (req ? req->n : 0); i++) {
            const ember_json *r = props && i < props->n ? NULL : &req->items[i - (props ? props->n : 0)];
            if (r && r->kind != EJ_STRING) return fail(c, "%s", "required must be an array of names");
            const char *name = r ? r->str : props->keys[i];
            uint32_t k = 0;
            while (k < *n && strcmp(p[k].name, name)) k++;
            if (k == *n) {
                if (k == 256) return fail(c, "%s", "more than 256 properties");
                p[(*n)++] = (prop){name, NULL, false};
            }
            p[k].required |= r != NULL;
        }
    }
    uint32_t kept = 0;
    for (uint32_t k = 0; k < *n; k++) {
        view pv;
        size_t mark = push(c, "properties");
        push(c, p[k].name);
        if (!property_view(c, v, p[k].name, &pv)) {
            if (c->failed) return false;
            if (p[k].required) return fail(c, "%s", "a required property that additionalProperties false forbids");
            pop(c, mark);
            continue; /* forbidden where it is optional: never written */
        }
        char *h = hint2(hint, p[k].name);
        p[k].rule = h ? schema_rule(c, &pv, h) : NULL;
        ember_free(h);
        if (!p[k].rule) return fail(c, "%s", "out of memory");
        pop(c, mark);
        p[kept++] = p[k];
    }
    *n = kept;
    return true;
}

/* Members with keys none of the declared ones: written only where additionalProperties
 * allows them explicitly (true or a schema, in every layer that has it, false in none);
 * their values follow every such schema. NULL: none (or a failure). */
static const char *other_members(conv *c, const view *v, const prop *p, uint32_t n, const char *hint)
{
    view ev = {.n = 0};
    bool any = false;
    for (uint32_t l = 0; l < v->n; l++) {
        const ember_json *ap = ember_json_get(v->layer[l], "additionalProperties");
        if (ap && ap->kind == EJ_FALSE) return NULL;
        any |= ap != NULL;
        if (ap) {
            size_t mark = push(c, "additionalProperties");
            bool ok = view_add(c, &ev, ap, 0);
            pop(c, mark);
            if (!ok) return NULL;
        }
    }
    if (!any) return NULL;
    const char *key = other_key(c, p, n, hint);
    char *h = hint2(hint, "other");
    size_t mark = push(c, "additionalProperties");
    const char *value = h && key ? schema_rule(c, &ev, h) : NULL;
    ember_free(h);
    if (!value) return NULL;
    pop(c, mark);
    char *kv = ember_malloc(strlen(key) + strlen(value) + 32), *h2 = hint2(hint, "other-member");
    if (kv) sprintf(kv, "%s ws \":\" ws %s", key, value);
    const char *extra = kv && h2 ? add_rule(c, h2, kv) : (ember_free(kv), NULL);
    ember_free(h2);
    if (!extra) fail(c, "%s", "out of memory");
    return extra;
}

static bool object_body(conv *c, const view *v, const char *hint, ember_sbuf *b)
{
    prop p[256];
    uint32_t n;
    if (!properties(c, v, hint, p, &n)) return false;
    const char *extra = other_members(c, v, p, n, hint);
    if (c->failed) return false;
    const char *m = members(c, p, n, 0, true, extra, hint);
    if (m) ember_sbuf_printf(b, "\"{\" ws %s \"}\"", m);
    return m && !c->failed;
}

/* ---- a view as a rule ------------------------------------------------------------- */

static const char *const STRING_KW[] = {"minLength", "maxLength", "pattern", "format", NULL};
static const char *const NUMBER_KW[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", NULL};
static const char *const OBJECT_KW[] = {"properties", "required", "additionalProperties", NULL};
static const char *const ARRAY_KW[] = {"items", "prefixItems", "additionalItems", "minItems", "maxItems", NULL};

/* const or enum: the listed values of the allowed types, nothing else beside them. */
static bool values_body(conv *c, const view *v, unsigned types, ember_sbuf *b)
{
    const ember_json *k = kw(c, v, "const"), *e = kw(c, v, "enum");
    if (has_any(v, STRING_KW) || has_any(v, NUMBER_KW) || has_any(v, OBJECT_KW) || has_any(v, ARRAY_KW))
        return fail(c, "%s", "enum or const beside other constraints (only type) is not supported");
    if (e && e->kind != EJ_ARRAY) return fail(c, "%s", "enum must be an array");
    const char *sep = "";
    uint32_t n = 0;
    for (uint32_t i = 0; i < (k ? 1 : e->n); i++) {
        const ember_json *x = k ? k : &e->items[i];
        if (k && e) { /* both: the const, if the enum holds it */
            uint32_t j = 0;
            while (j < e->n && !deep_equal(&e->items[j], k)) j++;
            if (j == e->n) break;
        }
        if (!(type_of_value(x) & types)) continue;
        ember_sbuf_puts(b, sep);
        ember_jtext_value(b, x);
        sep = " | ", n++;
    }
    if (!n) return fail(c, "%s", "enum or const leaves no value of the allowed types");
    return true;
}

/* anyOf / oneOf: each branch with the rest of the view applied to it. */
static bool alternatives_body(conv *c, const view *v, const ember_json *alts, bool one, const char *hint,
                              ember_sbuf *b)
{
    const char *key = one ? "oneOf" : "anyOf";
    if (alts->kind != EJ_ARRAY || !alts->n) return fail(c, "%s must be a non-empty array", key);
    unsigned seen = 0;
    for (uint32_t i = 0; i < alts->n; i++) {
        char index[16];
        snprintf(index, sizeof index, "%u", i);
        size_t mark = push(c, key);
        push(c, index);
        view bv = *v;
        bv.alts_from = v->n; /* the branch's own anyOf/oneOf still count */
        if (!view_add(c, &bv, &alts->items[i], 0)) return false;
        unsigned t;
        if (!types_of(c, &bv, &t)) return false;
        const ember_json *x = kw(c, &bv, "const");
        if (x) t &= type_of_value(x);
        t |= t & T_NUMBER ? T_INTEGER : 0; /* a number branch takes the integers too */
        if (one && (t & seen))
            return fail(c, "%s", "oneOf: Ember can only enforce oneOf whose branches have different types "
                                 "(these may match the same value; use anyOf)");
        seen |= t;
        char *h = hint2(hint, one ? "one" : "any");
        const char *r = h ? schema_rule(c, &bv, h) : NULL;
        ember_free(h);
        if (!r) return false;
        ember_sbuf_printf(b, "%s%s", i ? " | " : "", r);
        pop(c, mark);
    }
    return true;
}

static bool view_body(conv *c, const view *v, const char *hint, ember_sbuf *b)
{
    const ember_json *any = kw(c, v, "anyOf"), *one = kw(c, v, "oneOf");
    if (any && one) return fail(c, "%s", "anyOf beside oneOf is not supported");
    if (any || one) return alternatives_body(c, v, any ? any : one, one != NULL, hint, b);
    unsigned types;
    if (!types_of(c, v, &types)) return false;
    if (kw(c, v, "const") || kw(c, v, "enum")) return values_body(c, v, types, b);
    if (types == T_ALL && !has_any(v, STRING_KW) && !has_any(v, NUMBER_KW) && !has_any(v, OBJECT_KW) &&
        !has_any(v, ARRAY_KW))
        return ember_sbuf_puts(b, prim(c, "value")), !c->failed;
    const char *sep = "";
    for (unsigned t = 1; t <= T_INTEGER; t <<= 1) {
        if (!(types & t)) continue;
        ember_sbuf_puts(b, sep);
        sep = " | ";
        bool ok = true;
        if (t == T_NULL) ember_sbuf_puts(b, prim(c, "null"));
        else if (t == T_BOOLEAN) ember_sbuf_puts(b, prim(c, "boolean"));
        else if (t == T_STRING) ok = has_any(v, STRING_KW) ? string_body(c, v, b) : (ember_sbuf_puts(b, prim(c, "string")), true);
        else if (t == T_NUMBER || t == T_INTEGER) ok = number_body(c, v, t == T_INTEGER, b);
        else if (t == T_OBJECT) ok = has_any(v, OBJECT_KW) ? object_body(c, v, hint, b) : (ember_sbuf_puts(b, prim(c, "object")), true);
        else if (t == T_ARRAY) ok = has_any(v, ARRAY_KW) ? array_body(c, v, hint, b) : (ember_sbuf_puts(b, prim(c, "array")), true);
        if (!ok) return false;
    }
    return !c->failed;
}

/* A view that is only a $ref (with annotations) names its target's rule, made once, so
 * that a schema may refer to itself. */
static const ember_json *plain_ref(const view *v)
{
    if (v->n < 2) return NULL;
    const ember_json *s = v->layer[0], *r = ember_json_get(s, "$ref");
    for (uint32_t i = 0; r && i < s->n; i++)
        if (strcmp(s->keys[i], "$ref") && !in_list(s->keys[i], ANNOTATIONS)) return NULL;
    return r ? v->layer[1] : NULL;
}

static const char *schema_rule(conv *c, const view *v, const char *hint)
{
    if (++c->depth > MAX_DEPTH) return fail(c, "%s", "schemas nested more than 64 deep"), NULL;
    const ember_json *target = plain_ref(v);
    const char *name = NULL;
    for (uint32_t i = 0; target && i < c->n_refs; i++)
        if (c->refs[i].target == target) name = c->refs[i].name;
    if (!name && target) { /* reserve its name, then make its body: references inside find it */
        const ember_json *r = ember_json_get(v->layer[0], "$ref");
        const char *slash = strrchr(r->str, '/');
        char *h = hint2(c->top, slash ? slash + 1 : "ref");
        char *n = h ? (char *)add_rule(c, h, NULL) : NULL;
        ember_free(h);
        if (!n || !grow(c, (void **)&c->refs, &c->cap_refs, c->n_refs + 1, sizeof *c->refs)) return NULL;
        c->refs[c->n_refs++] = (ref){target, n};
        view tv = {.layer = {target}, .n = 1};
        for (uint32_t i = 2; i < v->n; i++) tv.layer[tv.n++] = v->layer[i]; /* what the target's allOf added */
        ember_sbuf b = {0};
        bool ok = view_body(c, &tv, n, &b);
        char *body = ember_sbuf_take(&b);
        if (!ok || !body) return ember_free(body), (void)fail(c, "%s", "out of memory"), NULL;
        for (uint32_t i = 0; i < c->n_rules; i++)
            if (c->rules[i].name == n) c->rules[i].body = body;
        name = n;
    }
    if (!name) {
        ember_sbuf b = {0};
        bool ok = view_body(c, v, hint, &b);
        char *body = ember_sbuf_take(&b);
        if (!ok || !body) return ember_free(body), (void)fail(c, "%s", "out of memory"), NULL;
        name = add_rule(c, hint, body);
        if (!name) fail(c, "%s", "out of memory");
    }
    c->depth--;
    return name;
}

static void free_conv(conv *c)
{
    for (uint32_t i = 0; i < c->n_rules; i++) ember_free(c->rules[i].name), ember_free(c->rules[i].body);
    ember_free(c->rules);
    ember_free(c->refs);
}

/* The rules of schema text, the top one named top (made unique when the schema's own
 * rules take that name), as GBNF lines into *gbnf; with the alias "root ::= TOP" first
 * when alias and TOP is not "root". */
static ember_status convert(const char *text, size_t len, const char *top_name, bool alias, char **gbnf,
                            ember_err *err)
{
    *gbnf = NULL;
    ember_json_doc *doc = NULL;
    const ember_json *root;
    ember_err jerr = {{0}};
    if (ember_json_parse(text, len, &doc, &root, &jerr) != EMBER_OK) {
        ember_json_free(doc);
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "json schema: not JSON: %s", jerr.msg);
    }
    conv c = {.root = root, .top = top_name, .err = err};
    view v = {.n = 0};
    prim(&c, "ws"); /* between the tokens of objects and arrays */
    const char *top = view_add(&c, &v, root, 0) ? schema_rule(&c, &v, top_name) : NULL;
    ember_sbuf out = {0};
    if (top && strcmp(top, top_name) && !alias) { /* the schema's top rule was shared: name it */
        char *line = ember_malloc(strlen(top_name) + strlen(top) + 8);
        if (line) sprintf(line, "%s ::= %s", top_name, top), ember_sbuf_printf(&out, "%s\n", line);
        ember_free(line);
    }
    if (top && alias && strcmp(top, "root")) ember_sbuf_printf(&out, "root ::= %s\n", top);
    for (uint32_t i = 0; top && i < c.n_rules; i++)
        ember_sbuf_printf(&out, "%s ::= %s\n", c.rules[i].name, c.rules[i].body ? c.rules[i].body : "\"\"");
    free_conv(&c);
    ember_json_free(doc);
    char *s = ember_sbuf_take(&out);
    if (!top) return ember_free(s), EMBER_ERR_INVALID_ARG;
    if (!s) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "json schema: out of memory");
    *gbnf = s;
    return EMBER_OK;
}

ember_status ember_json_schema_to_gbnf(const char *text, size_t len, char **gbnf, ember_err *err)
{
    return convert(text, len, "root", true, gbnf, err);
}

ember_status ember_json_schema_rules(const char *text, size_t len, const char *top, char **gbnf, ember_err *err)
{
    return convert(text, len, top, false, gbnf, err);
}
