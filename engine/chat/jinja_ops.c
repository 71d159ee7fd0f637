/* jinja_ops.c — operators, members and slices, in the order @huggingface/jinja's
 * evaluateBinaryExpression tries its cases (see jinja_ops.h). */
#include <math.h>
#include <string.h>

#include "common/alloc.h"
#include "jinja_json.h"
#include "jinja_methods.h"
#include "jinja_ops.h"

static const char *const OP_TEXT[] = {"+", "-", "~", "*", "/", "//", "%", "**", "==", "!=",
                                      "<", ">", "<=", ">=", "in", "not in", "and", "or"};

static bool is_num(ember_jv v) { return v.kind == EJV_INT || v.kind == EJV_FLOAT; }
static double num(ember_jv v) { return v.kind == EJV_INT ? (double)v.u.i : v.kind == EJV_FLOAT ? v.u.f : v.u.b; }

/* + - * // % on two integers, in integers where the result fits (as JavaScript's
 * doubles give for the numbers templates use). */
static bool int_arith(ember_jctx *c, int op, int64_t a, int64_t b, ember_jv *out)
{
    int64_t r;
    bool over = false;
    switch (op) {
    case JOP_ADD: over = __builtin_add_overflow(a, b, &r); break;
    case JOP_SUB: over = __builtin_sub_overflow(a, b, &r); break;
    case JOP_MUL: over = __builtin_mul_overflow(a, b, &r); break;
    case JOP_FLOORDIV:
        if (b == 0 || (a == INT64_MIN && b == -1)) return *out = ember_jv_float(floor((double)a / (double)b)), true;
        r = a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
        break;
    default: /* JOP_MOD: JavaScript's remainder takes the dividend's sign */
        if (b == 0) return *out = ember_jv_float(NAN), true;
        r = b == -1 ? 0 : a % b;
        break;
    }
    *out = over ? ember_jv_float(op == JOP_ADD ? (double)a + b : op == JOP_SUB ? (double)a - b : (double)a * b)
                : ember_jv_int(r);
    return true;
}

static bool numeric(ember_jctx *c, int op, ember_jv l, ember_jv r, ember_jv *out)
{
    double a = num(l), b = num(r);
    bool fl = l.kind == EJV_FLOAT || r.kind == EJV_FLOAT;
    switch (op) {
    case JOP_LT: *out = ember_jv_bool(a < b); return true;
    case JOP_GT: *out = ember_jv_bool(a > b); return true;
    case JOP_LE: *out = ember_jv_bool(a <= b); return true;
    case JOP_GE: *out = ember_jv_bool(a >= b); return true;
    case JOP_DIV: *out = ember_jv_float(a / b); return true;
    case JOP_ADD:
    case JOP_SUB:
    case JOP_MUL:
    case JOP_FLOORDIV:
    case JOP_MOD:
        if (!fl) return int_arith(c, op, l.u.i, r.u.i, out);
        *out = ember_jv_float(op == JOP_ADD ? a + b : op == JOP_SUB ? a - b : op == JOP_MUL ? a * b
                              : op == JOP_FLOORDIV ? floor(a / b) : fmod(a, b));
        return true;
    }
    return ember_jfail(c, "unknown operator \"%s\" between %s and %s", OP_TEXT[op], ember_jv_type_name(l),
                       ember_jv_type_name(r));
}

/* JavaScript's toString of both, joined. */
static bool concat(ember_jctx *c, ember_jv l, ember_jv r, ember_jv *out)
{
    ember_sbuf b = {0};
    if (l.kind != EJV_UNDEF) ember_jv_raw(c, l, &b);
    if (r.kind != EJV_UNDEF) ember_jv_raw(c, r, &b);
    if (c->failed) {
        ember_free(b.s);
        return false;
    }
    return ember_jv_str_sb(c, &b, out);
}

static bool power(ember_jctx *c, ember_jv l, ember_jv r, ember_jv *out)
{
    double a = num(l), b = num(r), p = pow(a, b);
    if (a == 0 && b < 0) return ember_jfail(c, "0.0 cannot be raised to a negative power");
    if (!isfinite(p)) return ember_jfail(c, "exponentiation result is not a finite real number");
    bool fl = l.kind == EJV_FLOAT || r.kind == EJV_FLOAT || b < 0 || fabs(p) >= 9.2e18;
    *out = fl ? ember_jv_float(p) : ember_jv_int((int64_t)p);
    return true;
}

static bool list_concat(ember_jctx *c, const ember_jlist *a, const ember_jlist *b, ember_jv *out)
{
    if (!ember_jstep(c, (uint64_t)a->n + b->n) || (uint64_t)a->n + b->n > UINT32_MAX ||
        !ember_jv_list(c, a->n + b->n, false, out))
        return false;
    if (a->n) memcpy(out->u.l->v, a->v, a->n * sizeof *a->v);
    if (b->n) memcpy(out->u.l->v + a->n, b->v, b->n * sizeof *b->v);
    return true;
}

static bool str_in(const ember_jstr *needle, const ember_jstr *hay)
{
    for (size_t i = 0; needle->len <= hay->len && i + needle->len <= hay->len; i++)
        if (memcmp(hay->s + i, needle->s, needle->len) == 0) return true;
    return false;
}

/* What Python's Jinja does where @huggingface/jinja has no rule: strings compared,
 * a string repeated. */
static bool extras(ember_jctx *c, int op, ember_jv l, ember_jv r, ember_jv *out)
{
    if (l.kind == EJV_STR && r.kind == EJV_STR && op >= JOP_LT && op <= JOP_GE) {
        int k;
        ember_jv_compare(c, l, r, true, &k);
        *out = ember_jv_bool(op == JOP_LT ? k < 0 : op == JOP_GT ? k > 0 : op == JOP_LE ? k <= 0 : k >= 0);
        return true;
    }
    if (l.kind == EJV_STR && r.kind == EJV_INT && op == JOP_MUL) {
        int64_t n = r.u.i > 0 ? r.u.i : 0;
        if (l.u.s->len && (uint64_t)n > c->max_output / l.u.s->len)
            return ember_jfail(c, "a string of more than %zu bytes (the limit max_output)", c->max_output);
        ember_jstr *s = ember_jstr_new(c, l.u.s->len * (size_t)n);
        if (!s) return false;
        for (int64_t i = 0; i < n; i++) memcpy(s->s + (size_t)i * l.u.s->len, l.u.s->s, l.u.s->len);
        *out = (ember_jv){.kind = EJV_STR, .u.s = s};
        return true;
    }
    return ember_jfail(c, "unknown operator \"%s\" between %s and %s", OP_TEXT[op], ember_jv_type_name(l),
                       ember_jv_type_name(r));
}

/* The cases after the first matching one of the if-else chain: strings and dicts. */
static bool late_cases(ember_jctx *c, int op, ember_jv l, ember_jv r, ember_jv *out)
{
    bool in = op == JOP_IN || op == JOP_NOT_IN;
    if ((l.kind == EJV_STR || r.kind == EJV_STR) && op == JOP_ADD) return concat(c, l, r, out);
    if (l.kind == EJV_STR && r.kind == EJV_STR && in) {
        *out = ember_jv_bool(str_in(l.u.s, r.u.s) == (op == JOP_IN));
        return true;
    }
    if (l.kind == EJV_STR && r.kind == EJV_DICT && !r.u.d->ns && in) {
        *out = ember_jv_bool((ember_jdict_get(r.u.d, l.u.s->s, l.u.s->len) != NULL) == (op == JOP_IN));
        return true;
    }
    return extras(c, op, l, r, out);
}

bool ember_jinja_binary(ember_jctx *c, int op, ember_jv l, ember_jv r, ember_jv *out)
{
    bool in = op == JOP_IN || op == JOP_NOT_IN;
    if (op == JOP_EQ || op == JOP_NE) {
        *out = ember_jv_bool(ember_jv_loose_eq(l, r) == (op == JOP_EQ));
        return true;
    }
    if (is_num(l) && is_num(r) && op != JOP_CAT && op != JOP_POW) {
        if (op == JOP_IN || op == JOP_NOT_IN) return late_cases(c, op, l, r, out);
        return numeric(c, op, l, r, out);
    }
    if (l.kind == EJV_UNDEF || r.kind == EJV_UNDEF) {
        if (r.kind == EJV_UNDEF && in) return *out = ember_jv_bool(op == JOP_NOT_IN), true;
        if (op == JOP_CAT && l.kind != EJV_NONE && r.kind != EJV_NONE) return concat(c, l, r, out);
        return ember_jfail(c, "cannot perform operation \"%s\" on undefined values", OP_TEXT[op]);
    }
    if (l.kind == EJV_NONE || r.kind == EJV_NONE)
        return ember_jfail(c, "cannot perform operation \"%s\" on none", OP_TEXT[op]);
    if (op == JOP_CAT) return concat(c, l, r, out);
    bool l_num = is_num(l) || l.kind == EJV_BOOL, r_num = is_num(r) || r.kind == EJV_BOOL;
    if (op == JOP_POW && l_num && r_num) return power(c, l, r, out);
    if (l.kind == EJV_LIST && r.kind == EJV_LIST) {
        if (op == JOP_ADD) return list_concat(c, l.u.l, r.u.l, out);
    } else if (r.kind == EJV_LIST && in) {
        bool found = false;
        for (uint32_t i = 0; i < r.u.l->n && !found; i++) found = ember_jv_strict_eq(r.u.l->v[i], l);
        *out = ember_jv_bool(found == (op == JOP_IN));
        return ember_jstep(c, r.u.l->n);
    }
    return late_cases(c, op, l, r, out);
}

bool ember_jinja_sign(ember_jctx *c, int sign, ember_jv v, ember_jv *out)
{
    if (v.kind == EJV_FLOAT) return *out = ember_jv_float(sign == '-' ? -v.u.f : v.u.f), true;
    if (v.kind == EJV_INT || v.kind == EJV_BOOL) {
        int64_t x = v.kind == EJV_BOOL ? v.u.b : v.u.i;
        if (sign == '-' && x == INT64_MIN) return *out = ember_jv_float(-(double)x), true;
        return *out = ember_jv_int(sign == '-' ? -x : x), true;
    }
    return ember_jfail(c, "unknown operator \"%c\" for %s", sign, ember_jv_type_name(v));
}

/* ---- members and slices -------------------------------------------------------------------- */

/* The byte range of code point k of s, or false past its end. */
static bool char_at(const ember_jstr *s, int64_t k, size_t *from, size_t *to)
{
    size_t i = 0;
    for (int64_t n = 0; i < s->len; n++) {
        size_t j = i;
        ember_jutf8_next(s->s, s->len, &j);
        if (n == k) {
            *from = i, *to = j;
            return true;
        }
        i = j;
    }
    return false;
}

static int64_t char_count(const ember_jstr *s)
{
    int64_t n = 0;
    for (size_t i = 0; i < s->len; n++) ember_jutf8_next(s->s, s->len, &i);
    return n;
}

static bool index_of(ember_jctx *c, ember_jv obj, int64_t i, ember_jv *out)
{
    *out = ember_jv_undef();
    int64_t n = obj.kind == EJV_LIST ? obj.u.l->n : char_count(obj.u.s);
    if (i < 0) i += n;
    if (i < 0 || i >= n) return true;
    if (obj.kind == EJV_LIST) return *out = obj.u.l->v[i], true;
    size_t from = 0, to = 0;
    char_at(obj.u.s, i, &from, &to);
    return ember_jv_str(c, obj.u.s->s + from, to - from, out);
}

bool ember_jinja_member(ember_jctx *c, ember_jv obj, ember_jv prop, ember_jv *out)
{
    bool found;
    *out = ember_jv_undef();
    if (obj.kind == EJV_DICT) {
        if (prop.kind != EJV_STR)
            return ember_jfail(c, "cannot access a member with a non-string: got %s", ember_jv_type_name(prop));
        ember_jv *v = ember_jdict_get(obj.u.d, prop.u.s->s, prop.u.s->len);
        if (v) return *out = *v, true;
        return ember_jinja_method(c, obj, prop.u.s->s, prop.u.s->len, out, &found);
    }
    if (obj.kind == EJV_LIST || obj.kind == EJV_STR) {
        if (prop.kind == EJV_INT) return index_of(c, obj, prop.u.i, out);
        if (prop.kind == EJV_STR) return ember_jinja_method(c, obj, prop.u.s->s, prop.u.s->len, out, &found);
        return ember_jfail(c, "cannot access an item with %s", ember_jv_type_name(prop));
    }
    if (prop.kind != EJV_STR)
        return ember_jfail(c, "cannot access a member with a non-string: got %s", ember_jv_type_name(prop));
    return true; /* numbers, booleans, none, undefined and functions have no members */
}

bool ember_jstr_chars(ember_jctx *c, const ember_jstr *s, ember_jv *out)
{
    int64_t n = char_count(s);
    if (!ember_jstep(c, (uint64_t)n) || !ember_jv_list(c, (uint32_t)n, false, out)) return false;
    for (size_t i = 0, k = 0; i < s->len; k++) {
        size_t j = i;
        ember_jutf8_next(s->s, s->len, &j);
        if (!ember_jv_str(c, s->s + i, j - i, &out->u.l->v[k])) return false;
        i = j;
    }
    return true;
}

/* @huggingface/jinja's slice(): Python's bounds, step 0 gives nothing. */
bool ember_jinja_slice(ember_jctx *c, ember_jv obj, ember_jv start, ember_jv stop, ember_jv step, ember_jv *out)
{
    if (obj.kind != EJV_LIST && obj.kind != EJV_STR) return ember_jfail(c, "a slice needs a list or a string");
    ember_jv parts[3] = {start, stop, step};
    for (int i = 0; i < 3; i++)
        if (parts[i].kind != EJV_INT && parts[i].kind != EJV_UNDEF) return ember_jfail(c, "slice indexes must be integers");
    ember_jv items = obj;
    if (obj.kind == EJV_STR && !ember_jstr_chars(c, obj.u.s, &items)) return false;
    int64_t n = items.u.l->n, st = step.kind == EJV_INT ? step.u.i : 1, dir = st > 0 ? 1 : st < 0 ? -1 : 0, a, b;
    if (dir >= 0) {
        a = start.kind == EJV_INT ? start.u.i : 0, b = stop.kind == EJV_INT ? stop.u.i : n;
        a = a < 0 ? (n + a > 0 ? n + a : 0) : (a < n ? a : n);
        b = b < 0 ? (n + b > 0 ? n + b : 0) : (b < n ? b : n);
    } else {
        a = start.kind == EJV_INT ? start.u.i : n - 1, b = stop.kind == EJV_INT ? stop.u.i : -1;
        a = a < 0 ? (n + a > -1 ? n + a : -1) : (a < n - 1 ? a : n - 1);
        b = b < -1 ? (n + b > -1 ? n + b : -1) : (b < n - 1 ? b : n - 1);
    }
    uint32_t k = 0;
    for (int64_t i = a; dir != 0 && dir * i < dir * b; i += st) k++;
    ember_jv res;
    if (!ember_jstep(c, k) || !ember_jv_list(c, k, false, &res)) return false;
    k = 0;
    for (int64_t i = a; dir != 0 && dir * i < dir * b; i += st) res.u.l->v[k++] = items.u.l->v[i];
    if (obj.kind == EJV_LIST) return *out = res, true;
    ember_sbuf sb = {0};
    for (uint32_t i = 0; i < k; i++) ember_sbuf_add(&sb, res.u.l->v[i].u.s->s, res.u.l->v[i].u.s->len);
    return ember_jv_str_sb(c, &sb, out);
}
