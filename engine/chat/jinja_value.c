/* jinja_value.c — the render's arena and limits, and what values are: truthiness,
 * equality, ordering, numbers as JavaScript writes them (see jinja_value.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "engine/tokenizer/utf8.h"
#include "jinja_value.h"

#define BLOCK_SIZE 65536

struct ember_jblock {
    ember_jblock *next;
    size_t used, cap;
    max_align_t data[];
};

bool ember_jfail(ember_jctx *c, const char *fmt, ...)
{
    if (c->failed) return false;
    c->failed = true;
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    c->status = ember_fail(c->err, EMBER_ERR_INVALID_ARG, "jinja: line %u, column %u: %s", c->line, c->col, why);
    return false;
}

void *ember_jalloc(ember_jctx *c, size_t size)
{
    if (c->failed) return NULL;
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (size > c->max_memory || c->mem_used > c->max_memory - size) {
        ember_jfail(c, "the template needs more than %zu bytes of memory (the limit max_memory)", c->max_memory);
        return NULL;
    }
    ember_jblock *b = c->blocks;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > BLOCK_SIZE ? size : BLOCK_SIZE;
        ember_jblock *n = ember_malloc(sizeof *n + cap);
        if (!n) {
            ember_jfail(c, "out of memory");
            c->status = EMBER_ERR_OUT_OF_MEMORY;
            return NULL;
        }
        n->next = b, n->used = 0, n->cap = cap;
        c->blocks = b = n;
    }
    void *p = (char *)b->data + b->used;
    b->used += size;
    c->mem_used += size;
    memset(p, 0, size);
    return p;
}

bool ember_jstep(ember_jctx *c, uint64_t n)
{
    if (c->failed) return false;
    c->steps += n;
    if (c->steps > c->max_steps)
        return ember_jfail(c, "the template took more than %llu steps (the limit max_steps)",
                           (unsigned long long)c->max_steps);
    return true;
}

void ember_jctx_free(ember_jctx *c)
{
    for (ember_jblock *b = c->blocks, *n; b; b = n) {
        n = b->next;
        ember_free(b);
    }
    c->blocks = NULL;
}

/* ---- making values ------------------------------------------------------------------ */

ember_jstr *ember_jstr_new(ember_jctx *c, size_t len)
{
    if (len > c->max_output) {
        ember_jfail(c, "a string of more than %zu bytes (the limit max_output)", c->max_output);
        return NULL;
    }
    ember_jstr *s = ember_jalloc(c, sizeof *s + len + 1);
    if (s) s->len = len;
    return s;
}

bool ember_jv_str(ember_jctx *c, const char *s, size_t len, ember_jv *out)
{
    ember_jstr *t = ember_jstr_new(c, len);
    if (!t) return false;
    if (len) memcpy(t->s, s, len);
    *out = (ember_jv){.kind = EJV_STR, .u.s = t};
    return true;
}

bool ember_jv_str_sb(ember_jctx *c, ember_sbuf *b, ember_jv *out)
{
    if (b->oom) {
        ember_free(b->s);
        *b = (ember_sbuf){0};
        ember_jfail(c, "out of memory");
        c->status = EMBER_ERR_OUT_OF_MEMORY;
        return false;
    }
    bool ok = ember_jv_str(c, b->s ? b->s : "", b->len, out);
    ember_free(b->s);
    *b = (ember_sbuf){0};
    return ok;
}

bool ember_jv_list(ember_jctx *c, uint32_t n, bool tuple, ember_jv *out)
{
    ember_jlist *l = ember_jalloc(c, sizeof *l);
    ember_jv *v = l ? ember_jalloc(c, sizeof *v * (n ? n : 1)) : NULL;
    if (!v) return false;
    l->n = n, l->tuple = tuple, l->v = v;
    *out = (ember_jv){.kind = EJV_LIST, .u.l = l};
    return true;
}

bool ember_jv_dict(ember_jctx *c, uint32_t cap, bool ns, ember_jv *out)
{
    ember_jdict *d = ember_jalloc(c, sizeof *d);
    if (!d) return false;
    d->ns = ns;
    if (cap) {
        d->k = ember_jalloc(c, sizeof *d->k * cap);
        d->v = ember_jalloc(c, sizeof *d->v * cap);
        if (!d->k || !d->v) return false;
        d->cap = cap;
    }
    *out = (ember_jv){.kind = EJV_DICT, .u.d = d};
    return true;
}

/* ---- dicts ---------------------------------------------------------------------------- */

ember_jv *ember_jdict_get(const ember_jdict *d, const char *key, size_t len)
{
    for (uint32_t i = 0; i < d->n; i++)
        if (d->k[i]->len == len && memcmp(d->k[i]->s, key, len) == 0) return &d->v[i];
    return NULL;
}

bool ember_jdict_set(ember_jctx *c, ember_jdict *d, const ember_jstr *key, ember_jv v)
{
    ember_jv *at = ember_jdict_get(d, key->s, key->len);
    if (at) {
        *at = v;
        return true;
    }
    if (d->n == d->cap) { /* the old arrays stay in the arena: growth by doubling bounds the waste */
        uint32_t cap = d->cap ? d->cap * 2 : 8;
        const ember_jstr **k = ember_jalloc(c, sizeof *k * cap);
        ember_jv *nv = k ? ember_jalloc(c, sizeof *nv * cap) : NULL;
        if (!nv) return false;
        if (d->n) {
            memcpy(k, d->k, sizeof *k * d->n);
            memcpy(nv, d->v, sizeof *nv * d->n);
        }
        d->k = k, d->v = nv, d->cap = cap;
    }
    d->k[d->n] = key;
    d->v[d->n++] = v;
    return true;
}

bool ember_jdict_set_text(ember_jctx *c, ember_jdict *d, const char *key, ember_jv v)
{
    ember_jv k;
    return ember_jv_str(c, key, strlen(key), &k) && ember_jdict_set(c, d, k.u.s, v);
}

/* ---- what values are ------------------------------------------------------------------ */

const char *ember_jv_type_name(ember_jv v)
{
    switch (v.kind) {
    case EJV_UNDEF: return "UndefinedValue";
    case EJV_NONE: return "NullValue";
    case EJV_BOOL: return "BooleanValue";
    case EJV_INT: return "IntegerValue";
    case EJV_FLOAT: return "FloatValue";
    case EJV_STR: return "StringValue";
    case EJV_LIST: return v.u.l->tuple ? "TupleValue" : "ArrayValue";
    case EJV_DICT: return v.u.d->ns ? "NamespaceValue" : "ObjectValue";
    case EJV_FUNC: return "FunctionValue";
    }
    return "?";
}

bool ember_jv_truthy(ember_jv v)
{
    switch (v.kind) {
    case EJV_UNDEF:
    case EJV_NONE: return false;
    case EJV_BOOL: return v.u.b;
    case EJV_INT: return v.u.i != 0;
    case EJV_FLOAT: return v.u.f != 0 && !isnan(v.u.f);
    case EJV_STR: return v.u.s->len > 0;
    case EJV_LIST: return v.u.l->n > 0;
    case EJV_DICT: return v.u.d->ns || v.u.d->n > 0;
    case EJV_FUNC: return true;
    }
    return false;
}

static bool is_number(ember_jv v) { return v.kind == EJV_INT || v.kind == EJV_FLOAT; }
static double num(ember_jv v) { return v.kind == EJV_INT ? (double)v.u.i : v.kind == EJV_FLOAT ? v.u.f : v.u.b; }

/* JavaScript's ToNumber of a string: blank is 0, else the whole (trimmed) text must be
 * a decimal number (or 0x hex, Infinity); NaN otherwise. */
static double js_to_number(const ember_jstr *s)
{
    size_t a = ember_jspace_prefix(s->s, s->len), e = s->len - ember_jspace_suffix(s->s, s->len);
    if (a >= e) return 0;
    char buf[64];
    if (e - a >= sizeof buf) return NAN;
    memcpy(buf, s->s + a, e - a);
    buf[e - a] = 0;
    const char *p = buf + (buf[0] == '+' || buf[0] == '-');
    if (!strcmp(p, "Infinity")) return buf[0] == '-' ? -INFINITY : INFINITY;
    if (strpbrk(p, "iInNxXpP") && !(p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && p == buf)) return NAN;
    char *end;
    double d = strtod(buf, &end);
    return *end ? NAN : d;
}

bool ember_jv_loose_eq(ember_jv a, ember_jv b)
{
    bool a_nil = a.kind == EJV_UNDEF || a.kind == EJV_NONE, b_nil = b.kind == EJV_UNDEF || b.kind == EJV_NONE;
    if (a_nil || b_nil) return a_nil && b_nil;
    if (a.kind == EJV_STR && b.kind == EJV_STR)
        return a.u.s->len == b.u.s->len && memcmp(a.u.s->s, b.u.s->s, a.u.s->len) == 0;
    bool a_prim = a.kind <= EJV_STR, b_prim = b.kind <= EJV_STR;
    if (a_prim && b_prim) { /* numbers, booleans and strings meet as numbers */
        double x = a.kind == EJV_STR ? js_to_number(a.u.s) : num(a);
        double y = b.kind == EJV_STR ? js_to_number(b.u.s) : num(b);
        return x == y;
    }
    if (a.kind != b.kind) return false;
    if (a.kind == EJV_LIST) return a.u.l == b.u.l;
    if (a.kind == EJV_DICT) return a.u.d == b.u.d;
    return a.u.fn == b.u.fn;
}

bool ember_jv_strict_eq(ember_jv a, ember_jv b)
{
    if (is_number(a) && is_number(b)) return num(a) == num(b);
    if (a.kind != b.kind) return false;
    switch (a.kind) {
    case EJV_UNDEF:
    case EJV_NONE: return true;
    case EJV_BOOL: return a.u.b == b.u.b;
    case EJV_STR: return a.u.s->len == b.u.s->len && memcmp(a.u.s->s, b.u.s->s, a.u.s->len) == 0;
    case EJV_LIST: return a.u.l == b.u.l;
    case EJV_DICT: return a.u.d == b.u.d;
    default: return a.u.fn == b.u.fn;
    }
}

/* JavaScript's < on strings compares UTF-16 code units; for text without astral
 * characters that is the order of the UTF-8 bytes, which is what we compare. */
static int compare_text(const ember_jstr *a, const ember_jstr *b, bool fold)
{
    size_t n = a->len < b->len ? a->len : b->len;
    for (size_t i = 0; i < n; i++) {
        unsigned char x = (unsigned char)a->s[i], y = (unsigned char)b->s[i];
        if (fold) {
            if (x >= 'A' && x <= 'Z') x += 32;
            if (y >= 'A' && y <= 'Z') y += 32;
        }
        if (x != y) return x < y ? -1 : 1;
    }
    return a->len < b->len ? -1 : a->len > b->len ? 1 : 0;
}

bool ember_jv_compare(ember_jctx *c, ember_jv a, ember_jv b, bool case_sensitive, int *out)
{
    *out = 0;
    if ((a.kind == EJV_NONE && b.kind == EJV_NONE) || (a.kind == EJV_UNDEF && b.kind == EJV_UNDEF)) return true;
    bool a_num = is_number(a) || a.kind == EJV_BOOL, b_num = is_number(b) || b.kind == EJV_BOOL;
    if (a_num && b_num) {
        double x = num(a), y = num(b);
        *out = x < y ? -1 : x > y ? 1 : 0;
        return true;
    }
    if (a.kind == EJV_STR && b.kind == EJV_STR) {
        *out = compare_text(a.u.s, b.u.s, !case_sensitive);
        return true;
    }
    return ember_jfail(c, "cannot compare %s with %s", ember_jv_type_name(a), ember_jv_type_name(b));
}

/* ---- numbers ---------------------------------------------------------------------------- */

/* The shortest decimal digits of v > 0 that read back as v: digits[] and the decimal
 * exponent n such that v = 0.DIGITS * 10^n. */
static int shortest_digits(double v, char digits[20], int *n)
{
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
        if (strtod(buf, NULL) == v || prec == 17) break;
    }
    int k = 0;
    char *p = buf;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[k++] = *p;
    while (k > 1 && digits[k - 1] == '0') k--;
    digits[k] = 0;
    *n = atoi(p + 1) + 1;
    return k;
}

void ember_jnum_js(double v, char out[40])
{
    if (isnan(v)) { strcpy(out, "NaN"); return; }
    if (v == 0) { strcpy(out, "0"); return; }
    if (isinf(v)) { strcpy(out, v < 0 ? "-Infinity" : "Infinity"); return; }
    char *o = out;
    if (v < 0) *o++ = '-', v = -v;
    char d[20];
    int n, k = shortest_digits(v, d, &n);
    if (k <= n && n <= 21) { /* an integer: the digits, then zeros */
        memcpy(o, d, (size_t)k), o += k;
        for (int i = k; i < n; i++) *o++ = '0';
    } else if (0 < n && n <= 21) {
        memcpy(o, d, (size_t)n), o += n;
        *o++ = '.';
        memcpy(o, d + n, (size_t)(k - n)), o += k - n;
    } else if (-6 < n && n <= 0) {
        *o++ = '0', *o++ = '.';
        for (int i = 0; i < -n; i++) *o++ = '0';
        memcpy(o, d, (size_t)k), o += k;
    } else {
        *o++ = d[0];
        if (k > 1) *o++ = '.', memcpy(o, d + 1, (size_t)(k - 1)), o += k - 1;
        o += sprintf(o, "e%c%d", n - 1 < 0 ? '-' : '+', abs(n - 1));
    }
    *o = 0;
}

void ember_jnum_float_text(double v, ember_sbuf *b)
{
    char buf[40];
    if (v == 0 && signbit(v)) {
        ember_sbuf_puts(b, "-0.0");
    } else if (isfinite(v) && v == floor(v) && fabs(v) < 1e21) { /* toFixed(1) */
        ember_sbuf_printf(b, "%.1f", v);
    } else {
        ember_jnum_js(v, buf);
        ember_sbuf_puts(b, buf);
    }
}

/* ---- UTF-8 and whitespace ------------------------------------------------------------- */

uint32_t ember_jutf8_next(const char *s, size_t n, size_t *i)
{
    size_t len;
    uint32_t cp;
    if (ember_utf8_decode((const unsigned char *)s + *i, n - *i, &len, &cp) != EMBER_UTF8_OK) {
        cp = 0xFFFD;
        if (len == 0) len = 1;
    }
    *i += len;
    return cp;
}

bool ember_jis_space(uint32_t cp)
{
    if (cp <= 32) return cp == 32 || (cp >= 9 && cp <= 13);
    return cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000 || cp == 0xFEFF;
}

size_t ember_jspace_prefix(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        if (!ember_jis_space(ember_jutf8_next(s, n, &j))) break;
        i = j;
    }
    return i;
}

size_t ember_jspace_suffix(const char *s, size_t n)
{
    size_t end = n;
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && end - start < 4 && ((unsigned char)s[start] & 0xC0) == 0x80) start--;
        size_t j = start;
        uint32_t cp = ember_jutf8_next(s, end, &j);
        if (j != end || !ember_jis_space(cp)) break;
        end = start;
    }
    return n - end;
}
