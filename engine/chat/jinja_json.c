/* jinja_json.c — values from JSON, as JSON, and as printed text (see jinja_json.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jinja_json.h"

#define MAX_NESTING 256 /* a namespace can hold itself: writing it must stop somewhere */

/* ---- from JSON ------------------------------------------------------------------------ */

static bool from_number(const ember_json *j, ember_jv *out)
{
    double d = strtod(j->str, NULL);
    if (d == floor(d) && fabs(d) < 9.2e18) *out = ember_jv_int((int64_t)d);
    else *out = ember_jv_float(d);
    return true;
}

/* JavaScript's array index names ("0", "17"; not "01" or "-1") come first in an
 * object's member order. */
static bool index_name(const char *k, uint64_t *v)
{
    if (!k[0] || (k[0] == '0' && k[1]) || strlen(k) > 10) return false;
    uint64_t x = 0;
    for (const char *p = k; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        x = x * 10 + (uint64_t)(*p - '0');
    }
    *v = x;
    return x < 4294967295u;
}

static bool from_object(ember_jctx *c, const ember_json *j, ember_jv *out)
{
    if (!ember_jv_dict(c, j->n, false, out)) return false;
    uint32_t *order = ember_jalloc(c, sizeof *order * (j->n ? j->n : 1));
    if (!order) return false;
    uint32_t k = 0;
    uint64_t a, b;
    for (uint32_t i = 0; i < j->n; i++)
        if (index_name(j->keys[i], &a)) order[k++] = i;
    for (uint32_t i = 1; i < k; i++) /* insertion sort: a few index names at most */
        for (uint32_t m = i; m > 0 && index_name(j->keys[order[m - 1]], &a) && index_name(j->keys[order[m]], &b) && a > b; m--) {
            uint32_t t = order[m];
            order[m] = order[m - 1], order[m - 1] = t;
        }
    for (uint32_t i = 0; i < j->n; i++)
        if (!index_name(j->keys[i], &a)) order[k++] = i;
    for (uint32_t i = 0; i < j->n; i++) {
        ember_jv key, v;
        const ember_json *m = &j->items[order[i]];
        if (!ember_jv_str(c, j->keys[order[i]], strlen(j->keys[order[i]]), &key) || !ember_jv_from_json(c, m, &v) ||
            !ember_jdict_set(c, out->u.d, key.u.s, v))
            return false;
    }
    return true;
}

bool ember_jv_from_json(ember_jctx *c, const ember_json *j, ember_jv *out)
{
    switch (j->kind) {
    case EJ_NULL: *out = ember_jv_none(); return true;
    case EJ_FALSE: *out = ember_jv_bool(false); return true;
    case EJ_TRUE: *out = ember_jv_bool(true); return true;
    case EJ_NUMBER: return from_number(j, out);
    case EJ_STRING: return ember_jv_str(c, j->str, j->len, out);
    case EJ_ARRAY:
        if (!ember_jv_list(c, j->n, false, out)) return false;
        for (uint32_t i = 0; i < j->n; i++)
            if (!ember_jv_from_json(c, &j->items[i], &out->u.l->v[i])) return false;
        return true;
    case EJ_OBJECT: return from_object(c, j, out);
    }
    return false;
}

/* ---- to JSON -------------------------------------------------------------------------- */

/* JSON.stringify's string: quotes, backslashes and control characters escaped (\u00XX in
 * lower-case hex where there is no short form); with ensure_ascii every character past
 * U+007E as \uXXXX, astral ones as their two UTF-16 halves. */
static void json_string(const char *s, size_t n, bool ascii, ember_sbuf *out)
{
    ember_sbuf_add(out, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x80 && ascii) {
            uint32_t cp = ember_jutf8_next(s, n, &i);
            if (cp >= 0x10000) {
                cp -= 0x10000;
                ember_sbuf_printf(out, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else {
                ember_sbuf_printf(out, "\\u%04x", cp);
            }
            continue;
        }
        i++;
        switch (ch) {
        case '"': ember_sbuf_puts(out, "\\\""); break;
        case '\\': ember_sbuf_puts(out, "\\\\"); break;
        case '\b': ember_sbuf_puts(out, "\\b"); break;
        case '\f': ember_sbuf_puts(out, "\\f"); break;
        case '\n': ember_sbuf_puts(out, "\\n"); break;
        case '\r': ember_sbuf_puts(out, "\\r"); break;
        case '\t': ember_sbuf_puts(out, "\\t"); break;
        default:
            if (ch < 0x20 || (ch == 0x7F && ascii)) ember_sbuf_printf(out, "\\u%04x", ch);
            else ember_sbuf_add(out, (const char *)&ch, 1);
        }
    }
    ember_sbuf_add(out, "\"", 1);
}

static void json_number(double v, ember_sbuf *out)
{
    char buf[40];
    if (!isfinite(v)) {
        ember_sbuf_puts(out, "null");
        return;
    }
    ember_jnum_js(v, buf);
    ember_sbuf_puts(out, buf);
}

/* Newline and depth times the indent, the padding before an item of an indented container. */
static void pad(ember_sbuf *out, int64_t indent, int depth)
{
    ember_sbuf_add(out, "\n", 1);
    for (int64_t i = 0; i < indent * depth; i++) ember_sbuf_add(out, " ", 1);
}

static bool tojson_at(ember_jctx *c, ember_jv v, const ember_jjson_opts *o, bool undef_null, int depth,
                      ember_sbuf *out);

/* The order sort_keys writes members in: an index permutation (stable insertion sort). */
static uint32_t *sorted_keys(ember_jctx *c, const ember_jdict *d, bool sort)
{
    uint32_t *idx = ember_jalloc(c, sizeof *idx * (d->n ? d->n : 1));
    if (!idx) return NULL;
    for (uint32_t i = 0; i < d->n; i++) idx[i] = i;
    for (uint32_t i = 1; sort && i < d->n; i++)
        for (uint32_t m = i; m > 0; m--) {
            const ember_jstr *a = d->k[idx[m - 1]], *b = d->k[idx[m]];
            size_t n = a->len < b->len ? a->len : b->len;
            int r = memcmp(a->s, b->s, n);
            if (r < 0 || (r == 0 && a->len <= b->len)) break;
            uint32_t t = idx[m];
            idx[m] = idx[m - 1], idx[m - 1] = t;
        }
    return idx;
}

static bool tojson_container(ember_jctx *c, ember_jv v, const ember_jjson_opts *o, bool undef_null, int depth,
                             ember_sbuf *out)
{
    if (depth >= MAX_NESTING) return ember_jfail(c, "a value nested more than %d deep (a namespace that holds itself?)", MAX_NESTING);
    const char *item_sep = o->item_sep ? o->item_sep->s : o->indent ? "," : ", ";
    const char *key_sep = o->key_sep ? o->key_sep->s : ": ";
    bool list = v.kind == EJV_LIST;
    uint32_t n = list ? v.u.l->n : v.u.d->n;
    uint32_t *idx = list ? NULL : sorted_keys(c, v.u.d, o->sort_keys);
    if (!list && !idx) return false;
    ember_sbuf_add(out, list ? "[" : "{", 1);
    for (uint32_t i = 0; i < n; i++) {
        if (i) ember_sbuf_puts(out, item_sep);
        if (o->indent) pad(out, o->indent, depth + 1);
        if (!list) {
            const ember_jstr *k = v.u.d->k[idx[i]];
            json_string(k->s, k->len, o->ensure_ascii, out);
            ember_sbuf_puts(out, key_sep);
        }
        if (!ember_jstep(c, 1) || !tojson_at(c, list ? v.u.l->v[i] : v.u.d->v[idx[i]], o, undef_null, depth + 1, out))
            return false;
    }
    if (o->indent && n) pad(out, o->indent, depth);
    ember_sbuf_add(out, list ? "]" : "}", 1);
    return true;
}

static bool tojson_at(ember_jctx *c, ember_jv v, const ember_jjson_opts *o, bool undef_null, int depth,
                      ember_sbuf *out)
{
    switch (v.kind) {
    case EJV_NONE: ember_sbuf_puts(out, "null"); return true;
    case EJV_UNDEF: ember_sbuf_puts(out, undef_null ? "null" : "undefined"); return true;
    case EJV_BOOL: ember_sbuf_puts(out, v.u.b ? "true" : "false"); return true;
    case EJV_INT: ember_sbuf_printf(out, "%lld", (long long)v.u.i); return true;
    case EJV_FLOAT: json_number(v.u.f, out); return true;
    case EJV_STR: json_string(v.u.s->s, v.u.s->len, o->ensure_ascii, out); return true;
    case EJV_LIST:
    case EJV_DICT: return tojson_container(c, v, o, undef_null, depth, out);
    case EJV_FUNC: break;
    }
    return ember_jfail(c, "cannot convert to JSON: FunctionValue");
}

bool ember_jv_tojson(ember_jctx *c, ember_jv v, const ember_jjson_opts *o, bool undef_null, ember_sbuf *out)
{
    static const ember_jjson_opts plain = {0};
    if (o && o->indent < 0) return ember_jfail(c, "tojson: indent must not be negative");
    return tojson_at(c, v, o ? o : &plain, undef_null, 0, out);
}

/* ---- as text ---------------------------------------------------------------------------- */

bool ember_jv_print(ember_jctx *c, ember_jv v, ember_sbuf *out)
{
    switch (v.kind) {
    case EJV_UNDEF: ember_sbuf_puts(out, "undefined"); return true;
    case EJV_NONE: ember_sbuf_puts(out, "null"); return true;
    case EJV_BOOL: ember_sbuf_puts(out, v.u.b ? "true" : "false"); return true;
    case EJV_INT: ember_sbuf_printf(out, "%lld", (long long)v.u.i); return true;
    case EJV_FLOAT: ember_jnum_float_text(v.u.f, out); return true;
    case EJV_STR: ember_sbuf_add(out, v.u.s->s, v.u.s->len); return true;
    case EJV_LIST:
    case EJV_DICT: return ember_jv_tojson(c, v, NULL, false, out);
    case EJV_FUNC: ember_sbuf_puts(out, "function"); return true;
    }
    return true;
}

bool ember_jv_raw(ember_jctx *c, ember_jv v, ember_sbuf *out)
{
    char buf[40];
    switch (v.kind) {
    case EJV_FLOAT:
        ember_jnum_js(v.u.f, buf);
        ember_sbuf_puts(out, buf);
        return true;
    case EJV_LIST:
        for (uint32_t i = 0; i < v.u.l->n; i++) {
            if (i) ember_sbuf_add(out, ",", 1);
            if (!ember_jstep(c, 1) || !ember_jv_print(c, v.u.l->v[i], out)) return false;
        }
        return true;
    case EJV_DICT: ember_sbuf_puts(out, "[object Map]"); return true;
    default: return ember_jv_print(c, v, out);
    }
}
