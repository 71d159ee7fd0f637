/* schema_conv.c — the state of a JSON Schema's conversion (schema_conv.h): paths,
 * rules, the primitives of any JSON, views, keywords and types. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "json_text.h"
#include "schema_conv.h"

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

bool ember_schema_fail(conv *c, const char *fmt, const char *arg)
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
size_t ember_schema_push(conv *c, const char *key)
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

void ember_schema_pop(conv *c, size_t n) { c->path[n] = 0; }

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

bool ember_schema_grow(conv *c, void **p, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap) return true;
    uint32_t n = *cap ? *cap * 2 : 16;
    void *q = ember_realloc(*p, (size_t)n * size);
    if (!q) return ember_schema_fail(c, "%s", "out of memory");
    *p = q, *cap = n;
    return true;
}

/* The name of a rule with this body: an existing one with the same body, or a new one
 * named after hint. Takes body (NULL: reserve a name for a body set later). */
const char *ember_schema_add_rule(conv *c, const char *hint, char *body)
{
    for (uint32_t i = 0; body && i < c->n_rules; i++)
        if (c->rules[i].body && !strcmp(c->rules[i].body, body)) {
            ember_free(body);
            return c->rules[i].name;
        }
    char *name = unique_name(c, hint);
    if (!name || !ember_schema_grow(c, (void **)&c->rules, &c->cap_rules, c->n_rules + 1, sizeof *c->rules)) {
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
    if (!n || !b || !ember_schema_grow(c, (void **)&c->rules, &c->cap_rules, c->n_rules + 1, sizeof *c->rules)) {
        ember_free(n), ember_free(b);
        ember_schema_fail(c, "%s", "out of memory");
        return NULL;
    }
    c->rules[c->n_rules++] = (rule){n, b};
    return n;
}

/* ---- the primitives of any JSON --------------------------------------------------- */

void ember_schema_prim_char(conv *c)
{
    static const uint32_t any[] = {0, 0xD7FF, 0xE000, 0x10FFFF};
    ember_sbuf b = {0};
    ember_jtext_chars(&b, any, 2);
    char *body = ember_sbuf_take(&b);
    if (body) fixed(c, "char", body);
    ember_free(body);
}

const char *ember_schema_prim(conv *c, const char *name)
{
    fixed(c, EMBER_JSON_WS, EMBER_JSON_WS_BODY);
    if (!strcmp(name, EMBER_JSON_WS)) return EMBER_JSON_WS;
    if (!strcmp(name, "string") || !strcmp(name, "value") || !strcmp(name, "object")) ember_schema_prim_char(c);
    if (!strcmp(name, "string")) return fixed(c, "string", "\"\\\"\" char* \"\\\"\"");
    if (!strcmp(name, "integer")) return fixed(c, "integer", "\"-\"? (\"0\" | [1-9] [0-9]{0,15})");
    if (!strcmp(name, "number"))
        return fixed(c, "number", "\"-\"? (\"0\" | [1-9] [0-9]{0,15}) (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?");
    if (!strcmp(name, "boolean")) return fixed(c, "boolean", "\"true\" | \"false\"");
    if (!strcmp(name, "null")) return fixed(c, "null", "\"null\"");
    ember_schema_prim(c, "string"), ember_schema_prim(c, "number"), ember_schema_prim(c, "boolean"), ember_schema_prim(c, "null");
    fixed(c, "value", "object | array | string | number | boolean | null");
    fixed(c, "object", "\"{\" ws ( string ws \":\" ws value ws (\",\" ws string ws \":\" ws value ws)* )? \"}\"");
    fixed(c, "array", "\"[\" ws ( value ws (\",\" ws value ws)* )? \"]\"");
    return strcmp(name, "value") && strcmp(name, "object") && strcmp(name, "array") ? (ember_schema_fail(c, "%s", "internal"), NULL)
                                                                                     : name;
}

/* ---- views ------------------------------------------------------------------------ */

bool ember_schema_deep_equal(const ember_json *a, const ember_json *b)
{
    if (a->kind != b->kind || a->n != b->n) return false;
    if (a->kind == EJ_STRING || a->kind == EJ_NUMBER) return a->len == b->len && !memcmp(a->str, b->str, a->len);
    for (uint32_t i = 0; i < a->n; i++)
        if ((a->kind == EJ_OBJECT && strcmp(a->keys[i], b->keys[i])) || !ember_schema_deep_equal(&a->items[i], &b->items[i]))
            return false;
    return true;
}

/* The schema a local $ref points to ("#", "#/$defs/x", any JSON pointer), or NULL. */
static const ember_json *resolve(conv *c, const ember_json *r)
{
    if (r->kind != EJ_STRING || r->str[0] != '#') return ember_schema_fail(c, "$ref \"%s\": only references within the schema "
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
    if (!at) ember_schema_fail(c, "$ref \"%s\" points at nothing", r->str);
    return at;
}

/* Adds schema s (and what its allOf holds) to v. */
bool ember_schema_view_add(conv *c, view *v, const ember_json *s, int depth)
{
    if (depth > MAX_DEPTH) return ember_schema_fail(c, "%s", "allOf or $ref nested more than 64 deep");
    if (s->kind == EJ_TRUE) return true;
    if (s->kind == EJ_FALSE) return ember_schema_fail(c, "%s", "the schema false matches nothing");
    if (s->kind != EJ_OBJECT) return ember_schema_fail(c, "%s", "a schema must be an object or a boolean");
    for (uint32_t i = 0; i < s->n; i++)
        if (!in_list(s->keys[i], KEYWORDS) && !in_list(s->keys[i], ANNOTATIONS))
            return ember_schema_fail(c, "keyword '%s' is not supported", s->keys[i]);
    if (v->n == MAX_LAYERS) return ember_schema_fail(c, "%s", "allOf holds more than 16 schemas");
    v->layer[v->n++] = s;
    const ember_json *all = ember_json_get(s, "allOf"), *r = ember_json_get(s, "$ref");
    if (all && (all->kind != EJ_ARRAY || !all->n)) return ember_schema_fail(c, "%s", "allOf must be a non-empty array");
    for (uint32_t i = 0; all && i < all->n; i++)
        if (!ember_schema_view_add(c, v, &all->items[i], depth + 1)) return false;
    const ember_json *target = r ? resolve(c, r) : NULL;
    return !r || (target && ember_schema_view_add(c, v, target, depth + 1));
}

/* Keyword k in view v: its value where the layers that have it agree; NULL when none has
 * it (anyOf/oneOf: none of the layers from alts_from on). */
const ember_json *ember_schema_kw(conv *c, const view *v, const char *k)
{
    bool alts = !strcmp(k, "anyOf") || !strcmp(k, "oneOf");
    const ember_json *found = NULL;
    for (uint32_t i = alts ? v->alts_from : 0; i < v->n; i++) {
        const ember_json *x = ember_json_get(v->layer[i], k);
        if (x && found && !ember_schema_deep_equal(x, found)) return ember_schema_fail(c, "allOf: its schemas give '%s' different values", k), NULL;
        if (x) found = x;
    }
    return found;
}

/* Whether any layer has a keyword that constrains type t's values. */
bool ember_schema_has_any(const view *v, const char *const *keys)
{
    for (uint32_t i = 0; i < v->n; i++)
        for (const char *const *k = keys; *k; k++)
            if (ember_json_get(v->layer[i], *k)) return true;
    return false;
}

/* ---- types ------------------------------------------------------------------------ */

static const char *const TYPE_NAMES[] = {"null", "boolean", "object", "array", "number", "string", "integer"};

static unsigned type_bit(const char *name)
{
    for (unsigned i = 0; i < 7; i++)
        if (!strcmp(name, TYPE_NAMES[i])) return 1u << i;
    return 0;
}

bool ember_schema_types_of(conv *c, const view *v, unsigned *t)
{
    const ember_json *ty = ember_schema_kw(c, v, "type");
    if (c->failed) return false;
    *t = ty ? 0 : T_ALL;
    for (uint32_t i = 0; ty && i < (ty->kind == EJ_ARRAY ? ty->n : 1); i++) {
        const ember_json *n = ty->kind == EJ_ARRAY ? &ty->items[i] : ty;
        unsigned b = n->kind == EJ_STRING ? type_bit(n->str) : 0;
        if (!b) return ember_schema_fail(c, "%s", "type must be a type name or an array of them");
        *t |= b;
    }
    if (*t & T_NUMBER) *t &= ~(unsigned)T_INTEGER; /* integers are numbers */
    return true;
}

unsigned ember_schema_type_of_value(const ember_json *x)
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

bool ember_schema_annotation(const char *key) { return in_list(key, ANNOTATIONS); }
