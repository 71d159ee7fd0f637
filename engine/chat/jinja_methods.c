/* jinja_methods.c — string and dict methods and the global functions, each with
 * @huggingface/jinja's arguments and results (see jinja_methods.h). */
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "engine/tokenizer/utf8.h"
#include "platform/os_thread.h"
#include "jinja_json.h"
#include "jinja_methods.h"

enum {
    /* strings */
    M_UPPER, M_LOWER, M_STRIP, M_LSTRIP, M_RSTRIP, M_TITLE, M_CAPITALIZE, M_STARTSWITH, M_ENDSWITH, M_SPLIT,
    M_REPLACE, M_FIND, M_RFIND, M_COUNT, M_SPLITLINES,
    /* dicts */
    M_GET, M_ITEMS, M_KEYS, M_VALUES, M_DICTSORT,
    /* globals */
    G_RANGE, G_NAMESPACE, G_RAISE, G_STRFTIME, G_DICT,
};

static const char *const STR_METHODS[] = {"upper", "lower", "strip", "lstrip", "rstrip", "title", "capitalize",
                                          "startswith", "endswith", "split", "replace", "find", "rfind", "count",
                                          "splitlines"};
static const char *const DICT_METHODS[] = {"get", "items", "keys", "values", "dictsort"};
static const char *const GLOBALS[] = {"range", "namespace", "raise_exception", "strftime_now", "dict", NULL};

bool ember_jarg(const ember_jargs *a, uint32_t i, const char *name, ember_jv *out)
{
    if (i < a->n) {
        *out = a->pos[i];
        return true;
    }
    for (uint32_t k = 0; name && k < a->n_kw; k++)
        if (!strcmp(a->kw_name[k]->s, name)) {
            *out = a->kw[k];
            return true;
        }
    return false;
}

static int find_name(const char *const *names, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0) return (int)i;
    return -1;
}

static bool bind(ember_jctx *c, int kind, int id, ember_jv self, ember_jv *out)
{
    ember_jfunc *f = ember_jalloc(c, sizeof *f);
    if (!f) return false;
    f->kind = kind, f->id = id, f->self = self;
    *out = (ember_jv){.kind = EJV_FUNC, .u.fn = f};
    return true;
}

int64_t ember_jstr_js_length(const ember_jstr *s)
{
    int64_t n = 0;
    for (size_t i = 0; i < s->len;) n += ember_jutf8_next(s->s, s->len, &i) >= 0x10000 ? 2 : 1;
    return n;
}

bool ember_jinja_method(ember_jctx *c, ember_jv self, const char *name, size_t len, ember_jv *out, bool *found)
{
    *found = false;
    *out = ember_jv_undef();
    bool is_length = len == 6 && !memcmp(name, "length", 6);
    if (self.kind == EJV_STR || self.kind == EJV_LIST) {
        if (is_length) {
            *found = true;
            *out = ember_jv_int(self.kind == EJV_STR ? ember_jstr_js_length(self.u.s) : self.u.l->n);
            return true;
        }
        int m = self.kind == EJV_STR ? find_name(STR_METHODS, sizeof STR_METHODS / sizeof *STR_METHODS, name, len) : -1;
        if (m < 0) return true;
        *found = true;
        return bind(c, JF_METHOD, M_UPPER + m, self, out);
    }
    if (self.kind == EJV_DICT && !self.u.d->ns) {
        int m = find_name(DICT_METHODS, sizeof DICT_METHODS / sizeof *DICT_METHODS, name, len);
        if (m < 0) return true;
        *found = true;
        return bind(c, JF_METHOD, M_GET + m, self, out);
    }
    return true;
}

const char *const *ember_jinja_global_names(void) { return GLOBALS; }

bool ember_jinja_global(const char *name, ember_jv *out)
{
    static const ember_jfunc FNS[] = {{JF_GLOBAL, G_RANGE, {0}, 0, 0},    {JF_GLOBAL, G_NAMESPACE, {0}, 0, 0},
                                      {JF_GLOBAL, G_RAISE, {0}, 0, 0},    {JF_GLOBAL, G_STRFTIME, {0}, 0, 0},
                                      {JF_GLOBAL, G_DICT, {0}, 0, 0}};
    int g = find_name(GLOBALS, 5, name, strlen(name));
    if (g < 0) return false;
    *out = (ember_jv){.kind = EJV_FUNC, .u.fn = &FNS[g]};
    return true;
}

/* ---- cases ---------------------------------------------------------------------------- */

static uint32_t to_upper(uint32_t cp)
{
    if ((cp >= 'a' && cp <= 'z') || (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) || (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) ||
        (cp >= 0x430 && cp <= 0x44F))
        return cp - 32;
    if (cp == 0xFF) return 0x178;
    if (cp == 0x3C2) return 0x3A3;
    if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
    return cp;
}

static uint32_t to_lower(uint32_t cp)
{
    if ((cp >= 'A' && cp <= 'Z') || (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) || (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) ||
        (cp >= 0x410 && cp <= 0x42F))
        return cp + 32;
    if (cp == 0x178) return 0xFF;
    if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
    return cp;
}

static bool ascii_word(uint32_t cp)
{
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
}

bool ember_jstr_case(ember_jctx *c, const ember_jstr *s, int how, ember_jv *out)
{
    ember_sbuf b = {0};
    uint32_t prev = ' ';
    for (size_t i = 0, k = 0; i < s->len; k++) {
        uint32_t cp = ember_jutf8_next(s->s, s->len, &i), o = cp;
        if (how == JCASE_UPPER) o = cp == 0xDF ? 0 : to_upper(cp);
        else if (how == JCASE_LOWER) o = to_lower(cp);
        else if (how == JCASE_TITLE) o = ascii_word(cp) && !ascii_word(prev) && cp < 128 ? to_upper(cp) : cp;
        else if (how == JCASE_CAPITALIZE && k == 0) o = cp == 0xDF ? 0 : to_upper(cp);
        char u[4];
        if (o == 0) ember_sbuf_puts(&b, "SS"); /* JavaScript upper-cases ß to SS */
        else ember_sbuf_add(&b, u, ember_utf8_encode(o, u));
        prev = cp;
    }
    return ember_jv_str_sb(c, &b, out);
}

/* ---- string methods --------------------------------------------------------------------- */

static bool want_str(ember_jctx *c, const ember_jargs *a, uint32_t i, const char *name, const char *what, ember_jv *v)
{
    if (!ember_jarg(a, i, name, v) || v->kind != EJV_STR) return ember_jfail(c, "%s must be a string", what);
    return true;
}

/* strip, lstrip, rstrip: JavaScript's trim, trimStart, trimEnd. An argument (Python's
 * set of characters to strip) is ignored, as @huggingface/jinja ignores it: Qwen 3's and
 * SmolLM3's lstrip('\n') then strip spaces too, as Hugging Face's front ends do. */
static bool strip(ember_jctx *c, const ember_jstr *s, int m, ember_jv *out)
{
    size_t start = m == M_RSTRIP ? 0 : ember_jspace_prefix(s->s, s->len);
    size_t end = m == M_LSTRIP ? s->len : s->len - ember_jspace_suffix(s->s + start, s->len - start);
    return ember_jv_str(c, s->s + start, end - start, out);
}

static bool affix(ember_jctx *c, const ember_jstr *s, bool start, const ember_jargs *a, ember_jv *out)
{
    ember_jv p;
    if (!ember_jarg(a, 0, NULL, &p)) return ember_jfail(c, "%s() requires an argument", start ? "startswith" : "endswith");
    uint32_t n = p.kind == EJV_LIST ? p.u.l->n : 1;
    if (p.kind != EJV_LIST && p.kind != EJV_STR) return ember_jfail(c, "the argument must be a string or a tuple of strings");
    for (uint32_t i = 0; i < n; i++) {
        ember_jv x = p.kind == EJV_LIST ? p.u.l->v[i] : p;
        if (x.kind != EJV_STR) return ember_jfail(c, "tuple elements must be strings");
        size_t k = x.u.s->len;
        if (k <= s->len && memcmp(start ? s->s : s->s + s->len - k, x.u.s->s, k) == 0) {
            *out = ember_jv_bool(true);
            return true;
        }
    }
    *out = ember_jv_bool(false);
    return true;
}

/* A list of strings being built. */
typedef struct strs {
    ember_jv *v;
    uint32_t n, cap;
} strs;

static bool strs_add(ember_jctx *c, strs *l, const char *s, size_t n)
{
    if (!ember_jstep(c, 1)) return false;
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 8;
        ember_jv *v = ember_jalloc(c, cap * sizeof *v);
        if (!v) return false;
        if (l->n) memcpy(v, l->v, l->n * sizeof *v);
        l->v = v, l->cap = cap;
    }
    return ember_jv_str(c, s, n, &l->v[l->n++]);
}

static bool strs_list(ember_jctx *c, strs *l, ember_jv *out)
{
    if (!ember_jv_list(c, l->n, false, out)) return false;
    if (l->n) memcpy(out->u.l->v, l->v, l->n * sizeof *l->v);
    return true;
}

static const char *find_bytes(const char *s, size_t n, const char *w, size_t k)
{
    for (size_t i = 0; k <= n && i + k <= n; i++)
        if (memcmp(s + i, w, k) == 0) return s + i;
    return NULL;
}

/* split(): runs of non-space; split(sep): JavaScript's split. maxsplit as Python's. */
static bool split(ember_jctx *c, const ember_jstr *s, const ember_jargs *a, ember_jv *out)
{
    ember_jv sep = ember_jv_none(), max = ember_jv_int(-1);
    ember_jarg(a, 0, "sep", &sep);
    ember_jarg(a, 1, "maxsplit", &max);
    if (sep.kind != EJV_STR && sep.kind != EJV_NONE) return ember_jfail(c, "sep argument must be a string or null");
    if (max.kind != EJV_INT) return ember_jfail(c, "maxsplit argument must be a number");
    strs l = {0};
    const char *p = s->s, *end = s->s + s->len;
    if (sep.kind == EJV_NONE) {
        p += ember_jspace_prefix(p, (size_t)(end - p));
        while (p < end) {
            if (max.u.i >= 0 && l.n >= (uint64_t)max.u.i) return strs_add(c, &l, p, (size_t)(end - p)) && strs_list(c, &l, out);
            size_t i = 0, n = (size_t)(end - p);
            while (i < n) {
                size_t j = i;
                if (ember_jis_space(ember_jutf8_next(p, n, &j))) break;
                i = j;
            }
            if (!strs_add(c, &l, p, i)) return false;
            p += i;
            p += ember_jspace_prefix(p, (size_t)(end - p));
        }
        return strs_list(c, &l, out);
    }
    if (sep.u.s->len == 0) return ember_jfail(c, "empty separator");
    for (;;) {
        const char *q = max.u.i >= 0 && l.n >= (uint64_t)max.u.i ? NULL : find_bytes(p, (size_t)(end - p), sep.u.s->s, sep.u.s->len);
        if (!q) return strs_add(c, &l, p, (size_t)(end - p)) && strs_list(c, &l, out);
        if (!strs_add(c, &l, p, (size_t)(q - p))) return false;
        p = q + sep.u.s->len;
    }
}

static bool splitlines(ember_jctx *c, const ember_jstr *s, ember_jv *out)
{
    strs l = {0};
    const char *p = s->s, *end = s->s + s->len;
    while (p < end) {
        const char *q = p;
        while (q < end && *q != '\n' && *q != '\r') q++;
        if (!strs_add(c, &l, p, (size_t)(q - p))) return false;
        p = q + (q < end) + (q + 1 < end && q[0] == '\r' && q[1] == '\n');
    }
    return strs_list(c, &l, out);
}

/* replace(old, new[, count]): every occurrence (count of them when count >= 0); an
 * empty old matches before every character and at the end, as JavaScript's does. */
static bool replace(ember_jctx *c, const ember_jstr *s, const ember_jargs *a, ember_jv *out)
{
    ember_jv from = {0}, to = {0}, count = ember_jv_none();
    if (!want_str(c, a, 0, NULL, "replace()'s first argument", &from) || !want_str(c, a, 1, NULL, "replace()'s second argument", &to))
        return false;
    ember_jarg(a, 2, "count", &count);
    if (count.kind != EJV_INT && count.kind != EJV_NONE) return ember_jfail(c, "replace() count argument must be a number or null");
    int64_t left = count.kind == EJV_INT && count.u.i >= 0 ? count.u.i : INT64_MAX;
    ember_sbuf b = {0};
    size_t k = from.u.s->len;
    for (size_t i = 0; i <= s->len;) {
        if (left > 0 && (k ? (i + k <= s->len && memcmp(s->s + i, from.u.s->s, k) == 0) : true)) {
            ember_sbuf_add(&b, to.u.s->s, to.u.s->len);
            left--;
            if (k) {
                i += k;
                continue;
            }
        }
        if (i == s->len) break;
        size_t j = i;
        ember_jutf8_next(s->s, s->len, &j);
        ember_sbuf_add(&b, s->s + i, j - i);
        i = j;
        if (b.len > c->max_output) {
            ember_free(b.s);
            return ember_jfail(c, "a string of more than %zu bytes (the limit max_output)", c->max_output);
        }
    }
    return ember_jv_str_sb(c, &b, out);
}

/* Python's find, rfind and count, in code points. */
static bool search(ember_jctx *c, const ember_jstr *s, int m, const ember_jargs *a, ember_jv *out)
{
    ember_jv w = {0};
    if (!want_str(c, a, 0, NULL, "the argument", &w)) return false;
    int64_t found = -1, count = 0, cps = 0;
    for (size_t i = 0; i <= s->len; cps++) {
        if (i + w.u.s->len <= s->len && memcmp(s->s + i, w.u.s->s, w.u.s->len) == 0) {
            if (found < 0 || m == M_RFIND) found = cps;
            count++;
            if (m == M_FIND) break;
            if (m == M_COUNT && w.u.s->len) {
                for (size_t e = i + w.u.s->len; i < e; cps++) ember_jutf8_next(s->s, s->len, &i);
                cps--;
                continue;
            }
        }
        if (i == s->len) break;
        ember_jutf8_next(s->s, s->len, &i);
    }
    *out = ember_jv_int(m == M_COUNT ? count : found);
    return true;
}

static bool str_method(ember_jctx *c, int m, const ember_jstr *s, const ember_jargs *a, ember_jv *out)
{
    switch (m) {
    case M_UPPER: return ember_jstr_case(c, s, JCASE_UPPER, out);
    case M_LOWER: return ember_jstr_case(c, s, JCASE_LOWER, out);
    case M_TITLE: return ember_jstr_case(c, s, JCASE_TITLE, out);
    case M_CAPITALIZE: return ember_jstr_case(c, s, JCASE_CAPITALIZE, out);
    case M_STRIP:
    case M_LSTRIP:
    case M_RSTRIP: return strip(c, s, m, out);
    case M_STARTSWITH:
    case M_ENDSWITH: return affix(c, s, m == M_STARTSWITH, a, out);
    case M_SPLIT: return split(c, s, a, out);
    case M_SPLITLINES: return splitlines(c, s, out);
    case M_REPLACE: return replace(c, s, a, out);
    default: return search(c, s, m, a, out);
    }
}

/* ---- dicts -------------------------------------------------------------------------------- */

bool ember_jdict_items(ember_jctx *c, const ember_jdict *d, ember_jv *out)
{
    if (!ember_jstep(c, d->n) || !ember_jv_list(c, d->n, false, out)) return false;
    for (uint32_t i = 0; i < d->n; i++) {
        ember_jv pair;
        if (!ember_jv_list(c, 2, false, &pair)) return false;
        pair.u.l->v[0] = (ember_jv){.kind = EJV_STR, .u.s = d->k[i]};
        pair.u.l->v[1] = d->v[i];
        out->u.l->v[i] = pair;
    }
    return true;
}

static bool merge(ember_jctx *c, ember_jv *v, ember_jv *k, ember_jv *tv, ember_jv *tk, uint32_t n, bool cs, bool rev)
{
    if (n < 2) return true;
    uint32_t h = n / 2;
    if (!merge(c, v, k, tv, tk, h, cs, rev) || !merge(c, v + h, k + h, tv, tk, n - h, cs, rev)) return false;
    uint32_t i = 0, j = h, o = 0;
    while (i < h && j < n) {
        int r;
        if (!ember_jstep(c, 1) || !ember_jv_compare(c, k[j], k[i], cs, &r)) return false;
        bool take_right = rev ? r > 0 : r < 0; /* only a strictly earlier right item jumps: stable */
        tv[o] = take_right ? v[j] : v[i], tk[o++] = take_right ? k[j++] : k[i++];
    }
    while (i < h) tv[o] = v[i], tk[o++] = k[i++];
    while (j < n) tv[o] = v[j], tk[o++] = k[j++];
    memcpy(v, tv, n * sizeof *v);
    memcpy(k, tk, n * sizeof *k);
    return true;
}

bool ember_jsort(ember_jctx *c, ember_jv *v, ember_jv *keys, uint32_t n, bool case_sensitive, bool reverse)
{
    ember_jv *tv = ember_jalloc(c, sizeof *tv * (n ? n : 1)), *tk = tv ? ember_jalloc(c, sizeof *tk * (n ? n : 1)) : NULL;
    return tk && merge(c, v, keys, tv, tk, n, case_sensitive, reverse);
}

bool ember_jdict_sorted(ember_jctx *c, const ember_jdict *d, bool by_value, bool case_sensitive, bool reverse,
                        ember_jv *out)
{
    if (!ember_jdict_items(c, d, out)) return false;
    ember_jv *keys = ember_jalloc(c, sizeof *keys * (d->n ? d->n : 1));
    if (!keys) return false;
    for (uint32_t i = 0; i < d->n; i++) keys[i] = out->u.l->v[i].u.l->v[by_value];
    return ember_jsort(c, out->u.l->v, keys, d->n, case_sensitive, reverse);
}

static bool want_bool(ember_jctx *c, const ember_jargs *a, uint32_t i, const char *name, bool *out)
{
    ember_jv v;
    if (!ember_jarg(a, i, name, &v)) return true;
    if (v.kind != EJV_BOOL) return ember_jfail(c, "%s must be a boolean", name);
    *out = v.u.b;
    return true;
}

static bool dict_method(ember_jctx *c, int m, ember_jdict *d, const ember_jargs *a, ember_jv *out)
{
    if (m == M_GET) {
        ember_jv key, dflt = ember_jv_none();
        if (!ember_jarg(a, 0, NULL, &key) || key.kind != EJV_STR) return ember_jfail(c, "object key must be a string");
        ember_jarg(a, 1, NULL, &dflt);
        ember_jv *v = ember_jdict_get(d, key.u.s->s, key.u.s->len);
        *out = v ? *v : dflt;
        return true;
    }
    if (m == M_ITEMS) return ember_jdict_items(c, d, out);
    if (m == M_KEYS || m == M_VALUES) {
        if (!ember_jstep(c, d->n) || !ember_jv_list(c, d->n, false, out)) return false;
        for (uint32_t i = 0; i < d->n; i++)
            out->u.l->v[i] = m == M_VALUES ? d->v[i] : (ember_jv){.kind = EJV_STR, .u.s = d->k[i]};
        return true;
    }
    bool cs = false, rev = false;
    ember_jv by = {.kind = EJV_UNDEF};
    if (!want_bool(c, a, 0, "case_sensitive", &cs) || !want_bool(c, a, 2, "reverse", &rev)) return false;
    bool has_by = ember_jarg(a, 1, "by", &by);
    if (has_by && (by.kind != EJV_STR || (strcmp(by.u.s->s, "key") && strcmp(by.u.s->s, "value"))))
        return ember_jfail(c, "by must be either 'key' or 'value'");
    return ember_jdict_sorted(c, d, has_by && !strcmp(by.u.s->s, "value"), cs, rev, out);
}

/* ---- globals ---------------------------------------------------------------------------- */

static bool range(ember_jctx *c, const ember_jargs *a, ember_jv *out)
{
    ember_jv v[3] = {ember_jv_int(0), ember_jv_int(0), ember_jv_int(1)};
    uint32_t n = a->n < 3 ? a->n : 3;
    if (n == 0) return ember_jfail(c, "range() needs an argument");
    for (uint32_t i = 0; i < n; i++) {
        if (a->pos[i].kind != EJV_INT) return ember_jfail(c, "range() takes integers");
        v[n == 1 ? 1 : i] = a->pos[i];
    }
    int64_t start = v[0].u.i, stop = v[1].u.i, step = v[2].u.i;
    if (step == 0) return ember_jfail(c, "range() step must not be zero");
    uint64_t count = 0;
    if (step > 0 && start < stop) count = ((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1;
    if (step < 0 && start > stop) count = ((uint64_t)start - (uint64_t)stop - 1) / (0 - (uint64_t)step) + 1;
    if (!ember_jstep(c, count) || count > UINT32_MAX || !ember_jv_list(c, (uint32_t)count, false, out)) return false;
    for (uint64_t i = 0; i < count; i++) out->u.l->v[i] = ember_jv_int((int64_t)((uint64_t)start + i * (uint64_t)step));
    return true;
}

/* namespace(dict or pairs, name=value...): the one object a template may change. */
static bool namespace(ember_jctx *c, const ember_jargs *a, ember_jv *out)
{
    if (a->n > 1) return ember_jfail(c, "namespace expected at most 1 argument, got %u", a->n);
    if (!ember_jv_dict(c, 8, true, out)) return false;
    ember_jdict *d = out->u.d;
    if (a->n == 1) {
        ember_jv src = a->pos[0];
        if (src.kind == EJV_DICT && !src.u.d->ns) {
            for (uint32_t i = 0; i < src.u.d->n; i++)
                if (!ember_jdict_set(c, d, src.u.d->k[i], src.u.d->v[i])) return false;
        } else if (src.kind == EJV_LIST) {
            for (uint32_t i = 0; i < src.u.l->n; i++) {
                ember_jv p = src.u.l->v[i];
                if (p.kind != EJV_LIST || p.u.l->n != 2 || p.u.l->v[0].kind != EJV_STR)
                    return ember_jfail(c, "namespace expected an object or an iterable of [key, value] pairs");
                if (!ember_jdict_set(c, d, p.u.l->v[0].u.s, p.u.l->v[1])) return false;
            }
        } else {
            return ember_jfail(c, "'%s' object is not iterable", ember_jv_type_name(src));
        }
    }
    for (uint32_t i = 0; i < a->n_kw; i++)
        if (!ember_jdict_set(c, d, a->kw_name[i], a->kw[i])) return false;
    return true;
}

static bool raise_exception(ember_jctx *c, const ember_jargs *a)
{
    ember_sbuf b = {0};
    if (a->n) ember_jv_print(c, a->pos[0], &b);
    ember_jfail(c, "the template raised: %s", b.s ? b.s : "");
    ember_free(b.s);
    return false;
}

/* strftime_now(format): @huggingface/jinja's subset (%Y %m %d %b %B %H %M %%, the rest
 * kept as written). The time is the context's __now (UTC) when given, else now (local). */
static bool strftime_now(ember_jctx *c, const ember_jargs *a, ember_jv *out)
{
    static const char *const months[] = {"January", "February", "March",     "April",   "May",      "June",
                                         "July",    "August",   "September", "October", "November", "December"};
    ember_jv f = {0};
    if (!want_str(c, a, 0, NULL, "strftime_now()'s format", &f)) return false;
    time_t t = c->has_now ? (time_t)c->now : time(NULL);
    struct tm tm;
    if (!ember_calendar((int64_t)t, !c->has_now, &tm)) return ember_jfail(c, "strftime_now: no such time");
    ember_sbuf b = {0};
    for (size_t i = 0; i < f.u.s->len; i++) {
        char k = i + 1 < f.u.s->len && f.u.s->s[i] == '%' ? f.u.s->s[i + 1] : 0;
        if (!k || !strchr("YmdbBHM%", k)) {
            ember_sbuf_add(&b, f.u.s->s + i, 1);
            continue;
        }
        i++;
        if (k == 'Y') ember_sbuf_printf(&b, "%d", tm.tm_year + 1900);
        else if (k == 'm') ember_sbuf_printf(&b, "%02d", tm.tm_mon + 1);
        else if (k == 'd') ember_sbuf_printf(&b, "%02d", tm.tm_mday);
        else if (k == 'b') ember_sbuf_printf(&b, "%.3s", months[tm.tm_mon]);
        else if (k == 'B') ember_sbuf_puts(&b, months[tm.tm_mon]);
        else if (k == 'H') ember_sbuf_printf(&b, "%02d", tm.tm_hour);
        else if (k == 'M') ember_sbuf_printf(&b, "%02d", tm.tm_min);
        else ember_sbuf_add(&b, "%", 1);
    }
    return ember_jv_str_sb(c, &b, out);
}

static bool dict_global(ember_jctx *c, const ember_jargs *a, ember_jv *out)
{
    if (!ember_jv_dict(c, a->n_kw, false, out)) return false;
    if (a->n > 1 || (a->n == 1 && (a->pos[0].kind != EJV_DICT || a->pos[0].u.d->ns)))
        return ember_jfail(c, "dict() takes one dict and name=value arguments");
    for (uint32_t i = 0; a->n == 1 && i < a->pos[0].u.d->n; i++)
        if (!ember_jdict_set(c, out->u.d, a->pos[0].u.d->k[i], a->pos[0].u.d->v[i])) return false;
    for (uint32_t i = 0; i < a->n_kw; i++)
        if (!ember_jdict_set(c, out->u.d, a->kw_name[i], a->kw[i])) return false;
    return true;
}

bool ember_jinja_call_builtin(ember_jctx *c, const ember_jfunc *fn, const ember_jargs *a, ember_jv *out)
{
    *out = ember_jv_undef();
    if (fn->kind == JF_METHOD && fn->self.kind == EJV_STR) return str_method(c, fn->id, fn->self.u.s, a, out);
    if (fn->kind == JF_METHOD && fn->self.kind == EJV_DICT) return dict_method(c, fn->id, fn->self.u.d, a, out);
    switch (fn->id) {
    case G_RANGE: return range(c, a, out);
    case G_NAMESPACE: return namespace(c, a, out);
    case G_RAISE: return raise_exception(c, a);
    case G_STRFTIME: return strftime_now(c, a, out);
    case G_DICT: return dict_global(c, a, out);
    }
    return ember_jfail(c, "cannot call this");
}
