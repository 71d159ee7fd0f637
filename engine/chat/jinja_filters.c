/* jinja_filters.c — filters and tests (see jinja_filters.h). Each filter is looked for
 * where @huggingface/jinja's applyFilter looks: first the ones for any value, then
 * those of the value's kind (written without or with parentheses); a filter it lacks
 * comes from Python's Jinja (extra()). Handlers answer DONE, FAILED or NOT_MINE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "jinja_filters.h"
#include "jinja_json.h"
#include "jinja_ops.h"

enum { FAILED = 0, DONE = 1, NOT_MINE = -1 };

typedef struct fcall {
    ember_jctx *c;
    const char *name;
    size_t len;
    ember_jv v;
    bool called;
    const ember_jargs *a;
    ember_jv *out;
} fcall;

static bool is(const fcall *f, const char *name) { return strlen(name) == f->len && !memcmp(f->name, name, f->len); }
static int ret(bool ok) { return ok ? DONE : FAILED; }
static int set(fcall *f, ember_jv v) { *f->out = v; return DONE; }

static const ember_jargs NO_ARGS = {0};

/* ---- helpers ---------------------------------------------------------------------------- */

static int text_of(fcall *f, bool (*write)(ember_jctx *, ember_jv, ember_sbuf *), ember_jv v)
{
    ember_sbuf b = {0};
    if (!write(f->c, v, &b)) {
        ember_free(b.s);
        return FAILED;
    }
    return ret(ember_jv_str_sb(f->c, &b, f->out));
}

static bool print_text(ember_jctx *c, ember_jv v, ember_sbuf *b) { return ember_jv_print(c, v, b); }
static bool json_text(ember_jctx *c, ember_jv v, ember_sbuf *b) { return ember_jv_tojson(c, v, NULL, false, b); }

/* JavaScript's Array.prototype.join of the raw values (none and undefined are ""). */
static int join(fcall *f, const ember_jlist *l, const ember_jstr *sep)
{
    ember_sbuf b = {0};
    for (uint32_t i = 0; i < l->n && !f->c->failed; i++) {
        if (i && sep) ember_sbuf_add(&b, sep->s, sep->len);
        if (l->v[i].kind != EJV_NONE && l->v[i].kind != EJV_UNDEF) ember_jv_raw(f->c, l->v[i], &b);
        if (b.len > f->c->max_output) ember_jfail(f->c, "a string of more than %zu bytes (the limit max_output)", f->c->max_output);
    }
    if (f->c->failed || !ember_jstep(f->c, l->n)) {
        ember_free(b.s);
        return FAILED;
    }
    return ret(ember_jv_str_sb(f->c, &b, f->out));
}

/* parseInt(s, 10) and parseFloat(s): the number at the start of s, NaN when none. */
static double parse_number(const ember_jstr *s, bool integer)
{
    const char *p = s->s + ember_jspace_prefix(s->s, s->len), *end = s->s + s->len;
    char buf[80];
    size_t n = 0;
    if (p < end && (*p == '+' || *p == '-')) buf[n++] = *p++;
    if (!integer && end - p >= 8 && !memcmp(p, "Infinity", 8)) return buf[0] == '-' ? -INFINITY : INFINITY;
    size_t digits = 0;
    while (p < end && n < sizeof buf - 8 && ((*p >= '0' && *p <= '9') || (!integer && *p == '.'))) {
        if (*p == '.' && memchr(buf, '.', n)) break;
        digits += *p != '.';
        buf[n++] = *p++;
    }
    if (!digits) return NAN;
    if (!integer && p < end && (*p == 'e' || *p == 'E')) {
        size_t save = n;
        buf[n++] = *p++;
        if (p < end && (*p == '+' || *p == '-')) buf[n++] = *p++;
        size_t ed = 0;
        while (p < end && n < sizeof buf - 1 && *p >= '0' && *p <= '9') buf[n++] = *p++, ed++;
        if (!ed) n = save;
    }
    buf[n] = 0;
    return integer ? (double)strtoll(buf, NULL, 10) : strtod(buf, NULL);
}

static ember_jv number_of(double d, bool integer)
{
    return integer ? ember_jv_int(fabs(d) < 9.2e18 ? (int64_t)d : 0) : ember_jv_float(d);
}

/* The value at a dotted path (map's and sort's attribute=): dict members, list items. */
static ember_jv attribute(ember_jv item, const ember_jstr *path)
{
    const char *p = path->s, *end = path->s + path->len;
    while (p <= end) {
        const char *dot = memchr(p, '.', (size_t)(end - p));
        size_t n = (size_t)((dot ? dot : end) - p);
        if (item.kind == EJV_DICT) {
            ember_jv *v = ember_jdict_get(item.u.d, p, n);
            if (!v) return ember_jv_undef();
            item = *v;
        } else if (item.kind == EJV_LIST) {
            char *e;
            char buf[24];
            snprintf(buf, sizeof buf, "%.*s", (int)(n < 20 ? n : 20), p);
            long k = strtol(buf, &e, 10);
            if (e == buf || k < 0 || (uint64_t)k >= item.u.l->n) return ember_jv_undef();
            item = item.u.l->v[k];
        } else {
            return ember_jv_undef();
        }
        if (!dot) break;
        p = dot + 1;
    }
    return item;
}

static bool want_bool(fcall *f, uint32_t i, const char *name, bool *out)
{
    ember_jv v;
    if (!ember_jarg(f->a, i, name, &v)) return true;
    if (v.kind != EJV_BOOL) return ember_jfail(f->c, "%s must be a boolean", name);
    *out = v.u.b;
    return true;
}

static bool new_list(fcall *f, const ember_jv *items, uint32_t n)
{
    if (!ember_jv_list(f->c, n, false, f->out)) return false;
    if (n) memcpy(f->out->u.l->v, items, n * sizeof *items);
    return true;
}

/* ---- any value ---------------------------------------------------------------------------- */

static int tojson(fcall *f)
{
    ember_jjson_opts o = {0};
    ember_jv v;
    if (f->called) {
        if (ember_jarg(f->a, UINT32_MAX, "indent", &v) && v.kind != EJV_NONE) {
            if (v.kind != EJV_INT) return ember_jfail(f->c, "if set, indent must be a number");
            o.indent = v.u.i;
        }
        bool ascii = false, sort = false;
        ember_jargs kw = {.kw_name = f->a->kw_name, .kw = f->a->kw, .n_kw = f->a->n_kw};
        fcall k = *f;
        k.a = &kw;
        if (!want_bool(&k, UINT32_MAX, "ensure_ascii", &ascii) || !want_bool(&k, UINT32_MAX, "sort_keys", &sort)) return FAILED;
        o.ensure_ascii = ascii, o.sort_keys = sort;
        if (ember_jarg(&kw, 0, "separators", &v) && v.kind != EJV_NONE) {
            if (v.kind != EJV_LIST || v.u.l->n != 2 || v.u.l->v[0].kind != EJV_STR || v.u.l->v[1].kind != EJV_STR)
                return ember_jfail(f->c, "separators must be a tuple of two strings");
            o.item_sep = v.u.l->v[0].u.s, o.key_sep = v.u.l->v[1].u.s;
        }
    }
    ember_sbuf b = {0};
    if (!ember_jv_tojson(f->c, f->v, &o, true, &b)) {
        ember_free(b.s);
        return FAILED;
    }
    return ret(ember_jv_str_sb(f->c, &b, f->out));
}

static int default_filter(fcall *f)
{
    ember_jv dflt, flag = ember_jv_bool(false);
    if (!ember_jarg(f->a, 0, "default_value", &dflt) && !ember_jv_str(f->c, "", 0, &dflt)) return FAILED;
    ember_jarg(f->a, 1, "boolean", &flag);
    if (flag.kind != EJV_BOOL) return ember_jfail(f->c, "`default` filter flag must be a boolean");
    return set(f, f->v.kind == EJV_UNDEF || (flag.u.b && !ember_jv_truthy(f->v)) ? dflt : f->v);
}

/* join, int, float and default with parentheses: before the value's kind is looked at. */
static int called_any(fcall *f)
{
    ember_jv x;
    if (is(f, "join")) {
        ember_jv sep = {0};
        bool has = ember_jarg(f->a, 0, "separator", &sep);
        if (has && sep.kind != EJV_STR) return ember_jfail(f->c, "separator must be a string");
        if (f->v.kind == EJV_STR) {
            if (!ember_jstr_chars(f->c, f->v.u.s, &x)) return FAILED;
            return join(f, x.u.l, has ? sep.u.s : NULL);
        }
        if (f->v.kind == EJV_LIST) return join(f, f->v.u.l, has ? sep.u.s : NULL);
        return ember_jfail(f->c, "cannot apply filter \"join\" to type: %s", ember_jv_type_name(f->v));
    }
    if (is(f, "int") || is(f, "float")) {
        bool integer = is(f, "int");
        ember_jv dflt = integer ? ember_jv_int(0) : ember_jv_float(0);
        ember_jarg(f->a, 0, "default", &dflt);
        if (f->v.kind == EJV_STR) {
            double d = parse_number(f->v.u.s, integer);
            return set(f, isnan(d) ? dflt : number_of(d, integer));
        }
        if (f->v.kind == EJV_INT || f->v.kind == EJV_FLOAT || f->v.kind == EJV_BOOL) {
            double d = f->v.kind == EJV_INT ? (double)f->v.u.i : f->v.kind == EJV_FLOAT ? f->v.u.f : f->v.u.b;
            return set(f, number_of(integer ? trunc(d) : d, integer));
        }
        return ember_jfail(f->c, "cannot apply filter \"%s\" to type: %s", integer ? "int" : "float", ember_jv_type_name(f->v));
    }
    if (is(f, "default")) return default_filter(f);
    return NOT_MINE;
}

/* ---- lists ---------------------------------------------------------------------------------- */

static int unique(fcall *f)
{
    const ember_jlist *l = f->v.u.l;
    ember_jv *keep = ember_jalloc(f->c, sizeof *keep * (l->n ? l->n : 1));
    uint32_t k = 0;
    if (!keep || !ember_jstep(f->c, (uint64_t)l->n * l->n / 8 + l->n)) return FAILED;
    for (uint32_t i = 0; i < l->n; i++) {
        bool seen = false;
        for (uint32_t j = 0; j < k && !seen; j++) seen = ember_jv_strict_eq(keep[j], l->v[i]);
        if (!seen) keep[k++] = l->v[i];
    }
    return ret(new_list(f, keep, k));
}

static int sort(fcall *f)
{
    bool rev = false, cs = false;
    ember_jv attr = ember_jv_none();
    if (f->called && (!want_bool(f, 0, "reverse", &rev) || !want_bool(f, 1, "case_sensitive", &cs))) return FAILED;
    if (f->called) ember_jarg(f->a, 2, "attribute", &attr);
    if (attr.kind != EJV_STR && attr.kind != EJV_INT && attr.kind != EJV_NONE)
        return ember_jfail(f->c, "attribute must be a string, integer, or null");
    const ember_jlist *l = f->v.u.l;
    ember_jv *keys = ember_jalloc(f->c, sizeof *keys * (l->n ? l->n : 1));
    if (!keys || !new_list(f, l->v, l->n)) return FAILED;
    ember_jv path = attr;
    if (attr.kind == EJV_INT) {
        char buf[24];
        snprintf(buf, sizeof buf, "%lld", (long long)attr.u.i);
        if (!ember_jv_str(f->c, buf, strlen(buf), &path)) return FAILED;
    }
    for (uint32_t i = 0; i < l->n; i++) keys[i] = attr.kind == EJV_NONE ? l->v[i] : attribute(l->v[i], path.u.s);
    return ret(ember_jsort(f->c, f->out->u.l->v, keys, l->n, cs, rev));
}

static bool attr_container(ember_jv v) { return v.kind == EJV_DICT; }

/* selectattr / rejectattr (attr, test, value): items whose member passes the test (or,
 * without a test, is true); an item without the member never passes. */
static int select_attr(fcall *f, bool select)
{
    const ember_jlist *l = f->v.u.l;
    for (uint32_t i = 0; i < l->n; i++)
        if (!attr_container(l->v[i])) return ember_jfail(f->c, "`%.*s` can only be applied to array of objects", (int)f->len, f->name);
    ember_jv attr, test = ember_jv_undef(), value;
    if (!ember_jarg(f->a, 0, NULL, &attr) || attr.kind != EJV_STR || (ember_jarg(f->a, 1, NULL, &test) && test.kind != EJV_STR))
        return ember_jfail(f->c, "arguments of `%.*s` must be strings", (int)f->len, f->name);
    bool has_value = ember_jarg(f->a, 2, NULL, &value);
    ember_jargs targs = {.pos = &value, .n = has_value};
    ember_jv *keep = ember_jalloc(f->c, sizeof *keep * (l->n ? l->n : 1));
    uint32_t k = 0;
    if (!keep || !ember_jstep(f->c, l->n)) return FAILED;
    for (uint32_t i = 0; i < l->n; i++) {
        ember_jv *a = ember_jdict_get(l->v[i].u.d, attr.u.s->s, attr.u.s->len);
        bool r = false;
        if (a && test.kind == EJV_STR) {
            if (!ember_jinja_test(f->c, test.u.s->s, test.u.s->len, *a, &targs, &r)) return FAILED;
        } else if (a) {
            r = ember_jv_truthy(*a);
        }
        if (r == select) keep[k++] = l->v[i];
    }
    return ret(new_list(f, keep, k));
}

/* select / reject (test, args...): Python's, on the items themselves. */
static int select_items(fcall *f, bool select)
{
    const ember_jlist *l = f->v.u.l;
    ember_jv test = ember_jv_undef();
    if (ember_jarg(f->a, 0, NULL, &test) && test.kind != EJV_STR) return ember_jfail(f->c, "a test's name must be a string");
    ember_jargs targs = {.pos = f->a->n > 1 ? f->a->pos + 1 : NULL, .n = f->a->n > 1 ? f->a->n - 1 : 0};
    ember_jv *keep = ember_jalloc(f->c, sizeof *keep * (l->n ? l->n : 1));
    uint32_t k = 0;
    if (!keep || !ember_jstep(f->c, l->n)) return FAILED;
    for (uint32_t i = 0; i < l->n; i++) {
        bool r = ember_jv_truthy(l->v[i]);
        if (test.kind == EJV_STR && !ember_jinja_test(f->c, test.u.s->s, test.u.s->len, l->v[i], &targs, &r)) return FAILED;
        if (r == select) keep[k++] = l->v[i];
    }
    return ret(new_list(f, keep, k));
}

/* map(attribute=path, default=v), or (Python's) map('filter', args...). */
static int map(fcall *f)
{
    const ember_jlist *l = f->v.u.l;
    ember_jv attr, dflt = ember_jv_undef(), name;
    ember_jargs kw = {.kw_name = f->a->kw_name, .kw = f->a->kw, .n_kw = f->a->n_kw};
    bool by_attr = ember_jarg(&kw, 0, "attribute", &attr), by_filter = !by_attr && ember_jarg(f->a, 0, NULL, &name);
    if (!by_attr && !(by_filter && name.kind == EJV_STR)) return ember_jfail(f->c, "`map` needs attribute= or a filter's name");
    if (by_attr && attr.kind != EJV_STR) return ember_jfail(f->c, "attribute must be a string");
    ember_jarg(&kw, 0, "default", &dflt);
    ember_jv res;
    if (!ember_jstep(f->c, l->n) || !ember_jv_list(f->c, l->n, false, &res)) return FAILED;
    ember_jargs rest = {.pos = f->a->n > 1 ? f->a->pos + 1 : NULL, .n = f->a->n > 1 ? f->a->n - 1 : 0};
    for (uint32_t i = 0; i < l->n; i++) {
        if (by_filter) {
            if (!ember_jinja_filter(f->c, name.u.s->s, name.u.s->len, l->v[i], rest.n > 0, &rest, &res.u.l->v[i]))
                return FAILED;
            continue;
        }
        if (!attr_container(l->v[i])) return ember_jfail(f->c, "items in map must be an object");
        ember_jv v = attribute(l->v[i], attr.u.s);
        res.u.l->v[i] = v.kind == EJV_UNDEF ? dflt : v;
    }
    return set(f, res);
}

static int list_filter(fcall *f)
{
    const ember_jlist *l = f->v.u.l;
    if (f->called) {
        if (is(f, "sort")) return sort(f);
        if (is(f, "selectattr") || is(f, "rejectattr")) return select_attr(f, is(f, "selectattr"));
        if (is(f, "map")) return map(f);
        return NOT_MINE;
    }
    if (is(f, "list")) return set(f, f->v);
    if (is(f, "first")) return set(f, l->n ? l->v[0] : ember_jv_undef());
    if (is(f, "last")) return set(f, l->n ? l->v[l->n - 1] : ember_jv_undef());
    if (is(f, "length")) return set(f, ember_jv_int(l->n));
    if (is(f, "reverse")) {
        if (!new_list(f, l->v, l->n)) return FAILED;
        for (uint32_t i = 0; i < l->n; i++) f->out->u.l->v[i] = l->v[l->n - 1 - i];
        return DONE;
    }
    if (is(f, "sort")) return sort(f);
    if (is(f, "join")) return join(f, l, NULL);
    if (is(f, "string")) return text_of(f, json_text, f->v);
    if (is(f, "unique")) return unique(f);
    return NOT_MINE;
}

/* ---- strings ------------------------------------------------------------------------------ */

/* indent(width=4, first=False, blank=False): every line but the first (and blank ones). */
static int indent(fcall *f)
{
    ember_jv w = ember_jv_int(4);
    bool first = false, blank = false;
    if (f->called) {
        ember_jarg(f->a, 0, "width", &w);
        if (w.kind != EJV_INT && w.kind != EJV_STR) return ember_jfail(f->c, "width must be an integer or a string");
        ember_jv x;
        if (ember_jarg(f->a, 1, "first", &x)) first = ember_jv_truthy(x);
        if (ember_jarg(f->a, 2, "blank", &x)) blank = ember_jv_truthy(x);
    }
    ember_sbuf b = {0};
    const char *s = f->v.u.s->s, *end = s + f->v.u.s->len;
    for (bool line0 = true;; line0 = false) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *e = nl ? nl : end;
        if ((first || !line0) && (blank || e > s)) {
            if (w.kind == EJV_STR) ember_sbuf_add(&b, w.u.s->s, w.u.s->len);
            for (int64_t i = 0; w.kind == EJV_INT && i < w.u.i && b.len <= f->c->max_output; i++) ember_sbuf_add(&b, " ", 1);
        }
        ember_sbuf_add(&b, s, (size_t)(e - s));
        if (!nl) break;
        ember_sbuf_add(&b, "\n", 1);
        s = nl + 1;
    }
    if (b.len > f->c->max_output) {
        ember_free(b.s);
        return ember_jfail(f->c, "a string of more than %zu bytes (the limit max_output)", f->c->max_output);
    }
    return ret(ember_jv_str_sb(f->c, &b, f->out));
}

static int str_filter(fcall *f)
{
    const ember_jstr *s = f->v.u.s;
    if (f->called) {
        if (is(f, "indent")) return indent(f);
        if (is(f, "replace")) {
            ember_jv fn;
            bool found;
            if (!ember_jinja_method(f->c, f->v, "replace", 7, &fn, &found)) return FAILED;
            return ret(ember_jinja_call_builtin(f->c, fn.u.fn, f->a, f->out));
        }
        return NOT_MINE;
    }
    if (is(f, "length")) return set(f, ember_jv_int(ember_jstr_js_length(s)));
    if (is(f, "upper")) return ret(ember_jstr_case(f->c, s, JCASE_UPPER, f->out));
    if (is(f, "lower")) return ret(ember_jstr_case(f->c, s, JCASE_LOWER, f->out));
    if (is(f, "title")) return ret(ember_jstr_case(f->c, s, JCASE_TITLE, f->out));
    if (is(f, "capitalize")) return ret(ember_jstr_case(f->c, s, JCASE_CAPITALIZE, f->out));
    if (is(f, "trim")) {
        size_t a = ember_jspace_prefix(s->s, s->len);
        return ret(ember_jv_str(f->c, s->s + a, s->len - a - ember_jspace_suffix(s->s + a, s->len - a), f->out));
    }
    if (is(f, "indent")) return indent(f);
    if (is(f, "join") || is(f, "string")) return set(f, f->v);
    if (is(f, "int") || is(f, "float")) {
        double d = parse_number(s, is(f, "int"));
        return set(f, number_of(isnan(d) ? 0 : d, is(f, "int")));
    }
    return NOT_MINE;
}

/* ---- numbers, booleans, dicts ---------------------------------------------------------- */

static int number_filter(fcall *f)
{
    bool integer = f->v.kind == EJV_INT;
    double d = integer ? (double)f->v.u.i : f->v.u.f;
    if (f->called) return NOT_MINE;
    if (is(f, "abs")) return set(f, integer ? ember_jv_int(f->v.u.i < 0 ? -f->v.u.i : f->v.u.i) : ember_jv_float(fabs(d)));
    if (is(f, "int")) return set(f, integer ? f->v : number_of(trunc(d), true));
    if (is(f, "float")) return set(f, ember_jv_float(d));
    if (is(f, "string")) return text_of(f, print_text, f->v);
    return NOT_MINE;
}

static int bool_filter(fcall *f)
{
    if (f->called) return NOT_MINE;
    if (is(f, "bool")) return set(f, f->v);
    if (is(f, "int")) return set(f, ember_jv_int(f->v.u.b));
    if (is(f, "float")) return set(f, ember_jv_float(f->v.u.b));
    if (is(f, "string")) return text_of(f, print_text, f->v);
    return NOT_MINE;
}

static int dict_filter(fcall *f)
{
    if (!f->called && is(f, "items")) return ret(ember_jdict_items(f->c, f->v.u.d, f->out));
    if (!f->called && is(f, "length")) return set(f, ember_jv_int(f->v.u.d->n));
    ember_jv fn;
    bool found;
    if (!ember_jinja_method(f->c, f->v, f->name, f->len, &fn, &found)) return FAILED;
    if (!found || fn.kind != EJV_FUNC) return NOT_MINE;
    return ret(ember_jinja_call_builtin(f->c, fn.u.fn, f->called ? f->a : &NO_ARGS, f->out));
}

/* ---- Python's filters that @huggingface/jinja lacks ------------------------------------------ */

static int round_filter(fcall *f)
{
    ember_jv prec = ember_jv_int(0), method;
    ember_jarg(f->a, 0, "precision", &prec);
    if (prec.kind != EJV_INT) return ember_jfail(f->c, "round's precision must be an integer");
    double d = f->v.kind == EJV_INT ? (double)f->v.u.i : f->v.u.f, m = pow(10, (double)prec.u.i);
    bool has_method = ember_jarg(f->a, 1, "method", &method) && method.kind == EJV_STR;
    const char *how = has_method ? method.u.s->s : "common";
    double r = !strcmp(how, "floor") ? floor(d * m) / m : !strcmp(how, "ceil") ? ceil(d * m) / m : round(d * m) / m;
    return set(f, ember_jv_float(r));
}

static int batch(fcall *f)
{
    ember_jv size, fill;
    if (!ember_jarg(f->a, 0, "linecount", &size) || size.kind != EJV_INT || size.u.i < 1)
        return ember_jfail(f->c, "batch needs a positive size");
    bool has_fill = ember_jarg(f->a, 1, "fill_with", &fill) && fill.kind != EJV_NONE;
    const ember_jlist *l = f->v.u.l;
    uint32_t per = size.u.i > l->n ? (l->n ? l->n : 1) : (uint32_t)size.u.i, n = (l->n + per - 1) / per;
    ember_jv res;
    if (!ember_jstep(f->c, l->n) || !ember_jv_list(f->c, n, false, &res)) return FAILED;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = i + 1 < n || !(l->n % per) || has_fill ? per : l->n % per;
        if (!ember_jv_list(f->c, k, false, &res.u.l->v[i])) return FAILED;
        for (uint32_t j = 0; j < k; j++) res.u.l->v[i].u.l->v[j] = i * per + j < l->n ? l->v[i * per + j] : fill;
    }
    return set(f, res);
}

static int extra(fcall *f)
{
    ember_jv_kind k = f->v.kind;
    if (is(f, "d") || (is(f, "default") && !f->called)) return default_filter(f);
    if (is(f, "count")) {
        fcall g = *f;
        g.name = "length", g.len = 6, g.called = false;
        return k == EJV_LIST ? list_filter(&g) : k == EJV_STR ? str_filter(&g) : k == EJV_DICT ? dict_filter(&g) : NOT_MINE;
    }
    if (k == EJV_LIST && (is(f, "select") || is(f, "reject"))) return select_items(f, is(f, "select"));
    if (k == EJV_LIST && is(f, "batch")) return batch(f);
    if ((k == EJV_INT || k == EJV_FLOAT) && is(f, "round")) return round_filter(f);
    if (k == EJV_STR && is(f, "wordcount")) {
        ember_jv words;
        fcall g = {.c = f->c, .a = &NO_ARGS};
        (void)g;
        ember_jv fn;
        bool found;
        if (!ember_jinja_method(f->c, f->v, "split", 5, &fn, &found) || !ember_jinja_call_builtin(f->c, fn.u.fn, &NO_ARGS, &words))
            return FAILED;
        return set(f, ember_jv_int(words.u.l->n));
    }
    if (k == EJV_STR && is(f, "list")) return ret(ember_jstr_chars(f->c, f->v.u.s, f->out));
    if (k == EJV_DICT && is(f, "list")) {
        ember_jv fn;
        bool found;
        return ret(ember_jinja_method(f->c, f->v, "keys", 4, &fn, &found) && found &&
                   ember_jinja_call_builtin(f->c, fn.u.fn, &NO_ARGS, f->out));
    }
    return NOT_MINE;
}

bool ember_jinja_filter(ember_jctx *c, const char *name, size_t len, ember_jv v, bool called, const ember_jargs *a,
                        ember_jv *out)
{
    fcall f = {c, name, len, v, called, a ? a : &NO_ARGS, out};
    *out = ember_jv_undef();
    if (!ember_jstep(c, 1)) return false;
    int r = NOT_MINE;
    if (is(&f, "safe")) return *out = v, true;
    if (is(&f, "tojson")) return tojson(&f) == DONE;
    if (called) r = called_any(&f);
    if (r == NOT_MINE) {
        switch (v.kind) {
        case EJV_LIST: r = list_filter(&f); break;
        case EJV_STR: r = str_filter(&f); break;
        case EJV_INT:
        case EJV_FLOAT: r = number_filter(&f); break;
        case EJV_BOOL: r = bool_filter(&f); break;
        case EJV_DICT: r = v.u.d->ns ? NOT_MINE : dict_filter(&f); break;
        default: break;
        }
    }
    if (r == NOT_MINE) r = extra(&f);
    if (r == NOT_MINE)
        return ember_jfail(c, "unknown filter \"%.*s\" for %s", (int)(len > 40 ? 40 : len), name, ember_jv_type_name(v));
    return r == DONE;
}

/* ---- tests ------------------------------------------------------------------------------------ */

static bool tname(const char *name, size_t len, const char *w) { return strlen(w) == len && !memcmp(name, w, len); }

/* Tests that compare with an argument: eq, ne, lt, ... and sameas, in, divisibleby. */
static bool compare_test(ember_jctx *c, const char *name, size_t len, ember_jv v, const ember_jargs *a, bool *out)
{
    static const struct { const char *names[3]; int op; } ops[] = {
        {{"eq", "equalto", "=="}, JOP_EQ}, {{"ne", "!=", NULL}, JOP_NE},  {{"lt", "lessthan", "<"}, JOP_LT},
        {{"le", "<=", NULL}, JOP_LE},      {{"gt", "greaterthan", ">"}, JOP_GT}, {{"ge", ">=", NULL}, JOP_GE},
        {{"in", NULL, NULL}, JOP_IN},
    };
    ember_jv x = ember_jv_undef();
    ember_jarg(a, 0, NULL, &x);
    if (tname(name, len, "eq") || tname(name, len, "equalto")) { /* @huggingface/jinja: a.value === b.value */
        *out = ember_jv_strict_eq(v, x);
        return true;
    }
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        for (int k = 0; k < 3 && ops[i].names[k]; k++)
            if (tname(name, len, ops[i].names[k])) {
                ember_jv r;
                if (!ember_jinja_binary(c, ops[i].op, v, x, &r)) return false;
                *out = r.u.b;
                return true;
            }
    if (tname(name, len, "sameas")) return *out = ember_jv_strict_eq(v, x) && v.kind == x.kind, true;
    if (tname(name, len, "divisibleby")) {
        if (v.kind != EJV_INT || x.kind != EJV_INT || x.u.i == 0) return ember_jfail(c, "divisibleby needs integers");
        return *out = x.u.i == -1 || v.u.i % x.u.i == 0, true;
    }
    return ember_jfail(c, "unknown test: %.*s", (int)(len > 40 ? 40 : len), name);
}

bool ember_jinja_test(ember_jctx *c, const char *name, size_t len, ember_jv v, const ember_jargs *a, bool *out)
{
    ember_jv_kind k = v.kind;
#define T(w) tname(name, len, w)
    if (T("defined")) *out = k != EJV_UNDEF;
    else if (T("undefined")) *out = k == EJV_UNDEF;
    else if (T("none")) *out = k == EJV_NONE;
    else if (T("boolean")) *out = k == EJV_BOOL;
    else if (T("true") || T("false")) *out = k == EJV_BOOL && v.u.b == T("true");
    else if (T("string")) *out = k == EJV_STR;
    else if (T("number")) *out = k == EJV_INT || k == EJV_FLOAT;
    else if (T("integer")) *out = k == EJV_INT;
    else if (T("float")) *out = k == EJV_FLOAT;
    else if (T("iterable")) *out = k == EJV_LIST || k == EJV_STR;
    else if (T("sequence")) *out = k == EJV_LIST || k == EJV_STR || (k == EJV_DICT && !v.u.d->ns);
    else if (T("mapping")) *out = k == EJV_DICT && !v.u.d->ns;
    else if (T("callable")) *out = k == EJV_FUNC;
    else if (T("odd") || T("even")) {
        if (k != EJV_INT) return ember_jfail(c, "cannot %s on %s", T("odd") ? "odd" : "even", ember_jv_type_name(v));
        *out = (v.u.i % 2 != 0) == T("odd");
    } else if (T("lower") || T("upper")) {
        ember_jv x;
        if (k != EJV_STR) return *out = false, true;
        if (!ember_jstr_case(c, v.u.s, T("lower") ? JCASE_LOWER : JCASE_UPPER, &x)) return false;
        *out = x.u.s->len == v.u.s->len && !memcmp(x.u.s->s, v.u.s->s, x.u.s->len);
    } else {
        return compare_test(c, name, len, v, a, out);
    }
#undef T
    return true;
}
