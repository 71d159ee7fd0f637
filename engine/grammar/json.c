/* json.c — a recursive-descent JSON parser into a tree whose nodes and strings live in
 * one growing list of blocks, freed together. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/strbuf.h"
#include "engine/tokenizer/utf8.h"
#include "json.h"

#define MAX_DEPTH 256

typedef struct block {
    struct block *next;
    size_t used, cap;
    max_align_t data[];
} block;

struct ember_json_doc {
    block *blocks;
    ember_json root;
};

typedef struct parser {
    const char *s;
    size_t len, at;
    uint32_t line;
    size_t line_start;
    ember_json_doc *doc;
    ember_err *err;
    bool failed;
} parser;

static void *take(parser *p, size_t size)
{
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    block *b = p->doc->blocks;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > 65536 ? size : 65536;
        block *n = ember_malloc(sizeof *n + cap);
        if (!n) return NULL;
        n->next = b, n->used = 0, n->cap = cap;
        p->doc->blocks = b = n;
    }
    void *r = (char *)b->data + b->used;
    b->used += size;
    return r;
}

static bool fail(parser *p, const char *why)
{
    if (!p->failed)
        ember_fail(p->err, EMBER_ERR_INVALID_ARG, "line %u, column %zu: %s", p->line, p->at - p->line_start + 1, why);
    p->failed = true;
    return false;
}

static void skip_ws(parser *p)
{
    for (; p->at < p->len; p->at++) {
        char c = p->s[p->at];
        if (c == '\n') p->line++, p->line_start = p->at + 1;
        else if (c != ' ' && c != '\t' && c != '\r') break;
    }
}

static bool literal(parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->at < n || memcmp(p->s + p->at, word, n)) return fail(p, "unexpected character");
    p->at += n;
    return true;
}

static int hex4(parser *p)
{
    if (p->len - p->at < 4) return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->at + i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    p->at += 4;
    return v;
}

/* One escape after the backslash, appended to out as UTF-8. */
static bool escape(parser *p, char *out, size_t *n)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    char c = p->s[p->at++];
    const char *k = c ? strchr(from, c) : NULL;
    if (k) {
        out[(*n)++] = to[k - from];
        return true;
    }
    if (c != 'u') return fail(p, "unknown escape in a string");
    int u = hex4(p);
    if (u < 0) return fail(p, "\\u needs 4 hex digits");
    uint32_t cp = (uint32_t)u;
    if (cp >= 0xD800 && cp <= 0xDBFF) { /* a high surrogate: its low half must follow */
        int lo = p->len - p->at >= 2 && p->s[p->at] == '\\' && p->s[p->at + 1] == 'u' ? (p->at += 2, hex4(p)) : -1;
        if (lo < 0xDC00 || lo > 0xDFFF) return fail(p, "a lone surrogate in a string");
        cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        return fail(p, "a lone surrogate in a string");
    }
    *n += ember_utf8_encode(cp, out + *n);
    return true;
}

/* A string at p->at (on its quote): decoded into the document. */
static bool string(parser *p, const char **str, size_t *len)
{
    size_t start = ++p->at, n = 0, end = start;
    while (end < p->len && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
    char *out = take(p, end - start + 1); /* decoding never lengthens the text */
    if (!out) return fail(p, "out of memory");
    while (p->at < p->len && p->s[p->at] != '"') {
        unsigned char c = (unsigned char)p->s[p->at];
        if (c < 0x20) return fail(p, "a control character in a string");
        if (c == '\\') {
            p->at++;
            if (p->at >= p->len || !escape(p, out, &n)) return p->at >= p->len ? fail(p, "a string is not closed") : false;
            continue;
        }
        size_t l;
        uint32_t cp;
        if (ember_utf8_decode((const unsigned char *)p->s + p->at, p->len - p->at, &l, &cp) != EMBER_UTF8_OK)
            return fail(p, "ill-formed UTF-8 in a string");
        memcpy(out + n, p->s + p->at, l);
        n += l, p->at += l;
    }
    if (p->at >= p->len) return fail(p, "a string is not closed");
    p->at++;
    out[n] = 0;
    *str = out, *len = n;
    return true;
}

static bool number(parser *p, ember_json *v)
{
    size_t start = p->at;
    const char *s = p->s;
    if (p->at < p->len && s[p->at] == '-') p->at++;
    if (p->at < p->len && s[p->at] == '0') p->at++;
    else if (p->at < p->len && s[p->at] >= '1' && s[p->at] <= '9')
        while (p->at < p->len && s[p->at] >= '0' && s[p->at] <= '9') p->at++;
    else return fail(p, "a number needs digits");
    if (p->at < p->len && s[p->at] == '.') {
        if (++p->at >= p->len || s[p->at] < '0' || s[p->at] > '9') return fail(p, "a fraction needs digits");
        while (p->at < p->len && s[p->at] >= '0' && s[p->at] <= '9') p->at++;
    }
    if (p->at < p->len && (s[p->at] == 'e' || s[p->at] == 'E')) {
        p->at++;
        if (p->at < p->len && (s[p->at] == '+' || s[p->at] == '-')) p->at++;
        if (p->at >= p->len || s[p->at] < '0' || s[p->at] > '9') return fail(p, "an exponent needs digits");
        while (p->at < p->len && s[p->at] >= '0' && s[p->at] <= '9') p->at++;
    }
    char *t = take(p, p->at - start + 1);
    if (!t) return fail(p, "out of memory");
    memcpy(t, s + start, p->at - start);
    t[p->at - start] = 0;
    v->kind = EJ_NUMBER, v->str = t, v->len = p->at - start;
    return true;
}

static bool value(parser *p, ember_json *v, int depth);

/* The items (or members) of an array (or object), collected in a list first. */
typedef struct member {
    ember_json v;
    const char *key;
    struct member *next;
} member;

static bool collect(parser *p, ember_json *v, bool object, int depth)
{
    member *first = NULL, **tail = &first;
    uint32_t n = 0;
    char close = object ? '}' : ']';
    p->at++;
    skip_ws(p);
    if (p->at < p->len && p->s[p->at] == close) p->at++;
    else
        for (;;) {
            member *m = take(p, sizeof *m);
            if (!m) return fail(p, "out of memory");
            memset(m, 0, sizeof *m);
            skip_ws(p);
            if (object) {
                size_t kl;
                if (p->at >= p->len || p->s[p->at] != '"') return fail(p, "expected a member name");
                if (!string(p, &m->key, &kl)) return false;
                skip_ws(p);
                if (p->at >= p->len || p->s[p->at] != ':') return fail(p, "expected ':'");
                p->at++;
            }
            if (!value(p, &m->v, depth + 1)) return false;
            *tail = m, tail = &m->next, n++;
            skip_ws(p);
            if (p->at < p->len && p->s[p->at] == ',') { p->at++; continue; }
            if (p->at < p->len && p->s[p->at] == close) { p->at++; break; }
            return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    v->kind = object ? EJ_OBJECT : EJ_ARRAY;
    v->n = n;
    v->items = take(p, sizeof *v->items * (n ? n : 1));
    v->keys = object ? take(p, sizeof *v->keys * (n ? n : 1)) : NULL;
    if (!v->items || (object && !v->keys)) return fail(p, "out of memory");
    uint32_t i = 0;
    for (member *m = first; m; m = m->next, i++) {
        v->items[i] = m->v;
        if (object) v->keys[i] = m->key;
    }
    return true;
}

static bool one_value(parser *p, ember_json *v, int depth)
{
    switch (p->s[p->at]) {
    case '{': return collect(p, v, true, depth);
    case '[': return collect(p, v, false, depth);
    case '"': v->kind = EJ_STRING; return string(p, &v->str, &v->len);
    case 't': v->kind = EJ_TRUE; return literal(p, "true");
    case 'f': v->kind = EJ_FALSE; return literal(p, "false");
    case 'n': v->kind = EJ_NULL; return literal(p, "null");
    default: return number(p, v);
    }
}

static bool value(parser *p, ember_json *v, int depth)
{
    if (depth > MAX_DEPTH) return fail(p, "nested more than 256 deep");
    skip_ws(p);
    memset(v, 0, sizeof *v);
    v->line = p->line, v->col = (uint32_t)(p->at - p->line_start + 1);
    if (p->at >= p->len) return fail(p, "a value is missing");
    v->at = p->at;
    bool ok = one_value(p, v, depth);
    v->span = p->at - v->at;
    return ok;
}

ember_status ember_json_parse(const char *text, size_t len, ember_json_doc **doc, const ember_json **root,
                              ember_err *err)
{
    *root = NULL;
    ember_json_doc *d = *doc = ember_calloc(1, sizeof *d);
    if (!d) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    parser p = {.s = text, .len = len, .line = 1, .doc = d, .err = err};
    if (value(&p, &d->root, 0)) {
        skip_ws(&p);
        if (p.at < p.len) fail(&p, "text after the value");
    }
    if (p.failed) return EMBER_ERR_INVALID_ARG;
    *root = &d->root;
    return EMBER_OK;
}

void ember_json_free(ember_json_doc *doc)
{
    if (!doc) return;
    for (block *b = doc->blocks, *n; b; b = n) {
        n = b->next;
        ember_free(b);
    }
    ember_free(doc);
}

void ember_json_quote(ember_sbuf *out, const char *s, size_t n)
{
    static const char HEX[] = "0123456789abcdef";
    ember_sbuf_puts(out, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') ember_sbuf_printf(out, "\\%c", c);
        else if (c == '\n') ember_sbuf_puts(out, "\\n");
        else if (c == '\r') ember_sbuf_puts(out, "\\r");
        else if (c == '\t') ember_sbuf_puts(out, "\\t");
        else if (c < 0x20) ember_sbuf_printf(out, "\\u00%c%c", HEX[c >> 4], HEX[c & 15]);
        else ember_sbuf_add(out, (const char *)&c, 1);
    }
    ember_sbuf_puts(out, "\"");
}

const ember_json *ember_json_get(const ember_json *o, const char *key)
{
    for (uint32_t i = 0; o && o->kind == EJ_OBJECT && i < o->n; i++)
        if (!strcmp(o->keys[i], key)) return &o->items[i];
    return NULL;
}
