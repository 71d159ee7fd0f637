/* jinja_eval.c — the tree walker (see jinja_eval.h): one function per kind of node,
 * statements returning how the block goes on (normally, break, continue, failed). */
#include <string.h>

#include "common/alloc.h"
#include "jinja_eval.h"
#include "jinja_filters.h"
#include "jinja_json.h"
#include "jinja_methods.h"
#include "jinja_ops.h"

enum { X_FAIL, X_OK, X_BREAK, X_CONTINUE };

typedef struct scope {
    struct scope *parent;
    ember_jdict vars;
} scope;

typedef struct ev {
    ember_jctx *c;
    uint32_t loops; /* for loops around the statement being run, in the current macro */
} ev;

static bool eval(ev *e, scope *sc, const ember_jnode *x, ember_jv *out);
static int exec_block(ev *e, scope *sc, ember_jnode *const *kids, uint32_t n, ember_sbuf *out);

/* ---- scopes ----------------------------------------------------------------------------- */

static scope *scope_new(ev *e, scope *parent)
{
    scope *s = ember_jalloc(e->c, sizeof *s);
    if (s) s->parent = parent;
    return s;
}

static ember_jv lookup(const scope *sc, const char *name, size_t len)
{
    for (; sc; sc = sc->parent) {
        ember_jv *v = ember_jdict_get(&sc->vars, name, len);
        if (v) return *v;
    }
    return ember_jv_undef();
}

static bool scope_set(ev *e, scope *sc, const ember_jstr *name, ember_jv v)
{
    return ember_jdict_set(e->c, &sc->vars, name, v);
}

/* Errors name the place of the node being evaluated. */
static void at(ev *e, const ember_jnode *x)
{
    e->c->line = x->line, e->c->col = x->col;
}

/* ---- output ------------------------------------------------------------------------------ */

static bool check_out(ev *e, ember_sbuf *out)
{
    if (out->oom) {
        ember_jfail(e->c, "out of memory");
        e->c->status = EMBER_ERR_OUT_OF_MEMORY;
        return false;
    }
    if (out->len > e->c->max_output)
        return ember_jfail(e->c, "the output is longer than %zu bytes (the limit max_output)", e->c->max_output);
    return true;
}

static bool emit_value(ev *e, ember_jv v, ember_sbuf *out)
{
    if (v.kind == EJV_NONE || v.kind == EJV_UNDEF) return true;
    return ember_jv_print(e->c, v, out) && check_out(e, out);
}

/* Renders a block into a string value (set blocks, macro bodies, filter blocks). */
static bool render_string(ev *e, scope *sc, ember_jnode *const *kids, uint32_t n, ember_jv *out)
{
    ember_sbuf b = {0};
    int r = exec_block(e, sc, kids, n, &b);
    if (r == X_BREAK || r == X_CONTINUE) r = ember_jfail(e->c, "break or continue outside a loop") ? X_OK : X_FAIL;
    if (r != X_OK) {
        ember_free(b.s);
        return false;
    }
    return ember_jv_str_sb(e->c, &b, out);
}

/* ---- arguments and calls ------------------------------------------------------------------- */

static bool grow(ev *e, ember_jv **v, const ember_jstr ***names, uint32_t *cap, uint32_t need)
{
    if (need <= *cap) return true;
    uint32_t c = *cap ? *cap * 2 : 8;
    while (c < need) c *= 2;
    ember_jv *nv = ember_jalloc(e->c, sizeof *nv * c);
    const ember_jstr **nn = nv && names ? ember_jalloc(e->c, sizeof *nn * c) : NULL;
    if (!nv || (names && !nn)) return false;
    if (*cap) memcpy(nv, *v, sizeof *nv * *cap);
    if (names && *cap) memcpy(nn, *names, sizeof *nn * *cap);
    *v = nv, *cap = c;
    if (names) *names = nn;
    return true;
}

static bool add_kw(ev *e, ember_jargs *a, ember_jv **kw, const ember_jstr ***names, uint32_t *cap, const ember_jstr *k,
                   ember_jv v)
{
    for (uint32_t i = 0; i < a->n_kw; i++)
        if (!strcmp((*names)[i]->s, k->s)) return ember_jfail(e->c, "got multiple values for keyword argument '%s'", k->s);
    if (!grow(e, kw, names, cap, a->n_kw + 1)) return false;
    (*kw)[a->n_kw] = v, (*names)[a->n_kw++] = k;
    a->kw = *kw, a->kw_name = *names;
    return true;
}

/* Evaluates call arguments: positional ones (with *list spread), then keywords (with
 * **dict spread), as @huggingface/jinja orders them. */
static bool arguments(ev *e, scope *sc, ember_jnode *const *kids, uint32_t n, ember_jargs *a)
{
    ember_jv *pos = NULL, *kw = NULL, v;
    const ember_jstr **names = NULL;
    uint32_t pcap = 0, kcap = 0;
    *a = (ember_jargs){0};
    for (uint32_t i = 0; i < n; i++) {
        const ember_jnode *k = kids[i];
        if (k->kind == JN_KWARG || k->kind == JN_KWSPREAD) continue;
        if (!eval(e, sc, k->kind == JN_SPREAD ? k->a : k, &v)) return false;
        if (k->kind == JN_SPREAD && v.kind != EJV_LIST) return at(e, k), ember_jfail(e->c, "cannot unpack %s", ember_jv_type_name(v));
        uint32_t add = k->kind == JN_SPREAD ? v.u.l->n : 1;
        if (!grow(e, &pos, NULL, &pcap, a->n + add)) return false;
        if (k->kind == JN_SPREAD) memcpy(pos + a->n, v.u.l->v, sizeof *pos * add);
        else pos[a->n] = v;
        a->n += add, a->pos = pos;
    }
    for (uint32_t i = 0; i < n; i++) {
        const ember_jnode *k = kids[i];
        if (k->kind != JN_KWARG && k->kind != JN_KWSPREAD) continue;
        if (!eval(e, sc, k->a, &v)) return false;
        if (k->kind == JN_KWARG && !add_kw(e, a, &kw, &names, &kcap, k->str, v)) return false;
        if (k->kind == JN_KWSPREAD) {
            if (v.kind != EJV_DICT || v.u.d->ns) return at(e, k), ember_jfail(e->c, "argument after ** must be a mapping");
            for (uint32_t m = 0; m < v.u.d->n; m++)
                if (!add_kw(e, a, &kw, &names, &kcap, v.u.d->k[m], v.u.d->v[m])) return false;
        }
    }
    return true;
}

/* Binds a macro's (or a call block's) parameters in ms: positional arguments, then
 * keywords, then defaults (evaluated in ms, after the others are bound). */
static bool bind_params(ev *e, const ember_jnode *def, ember_jnode *const *params, uint32_t n, const ember_jargs *a,
                        scope *ms)
{
    bool *used = ember_jalloc(e->c, a->n_kw + 1);
    const ember_jnode **pending = ember_jalloc(e->c, sizeof *pending * (n + 1));
    uint32_t n_pending = 0;
    if (!used || !pending) return false;
    for (uint32_t i = 0; i < n; i++) {
        const ember_jnode *p = params[i];
        ember_jv v = ember_jv_undef();
        bool given = i < a->n;
        if (given) v = a->pos[i];
        for (uint32_t k = 0; !given && k < a->n_kw; k++)
            if (!used[k] && !strcmp(a->kw_name[k]->s, p->str->s)) v = a->kw[k], used[k] = true, given = true;
        if (!given && p->kind == JN_KWARG) pending[n_pending++] = p;
        if (!scope_set(e, ms, p->str, v)) return false;
    }
    at(e, def);
    ember_jv rest;
    if (def->op & JMACRO_KWARGS) {
        if (!ember_jv_dict(e->c, a->n_kw, false, &rest)) return false;
        for (uint32_t k = 0; k < a->n_kw; k++)
            if (!used[k] && !ember_jdict_set(e->c, rest.u.d, a->kw_name[k], a->kw[k])) return false;
        if (!ember_jdict_set_text(e->c, &ms->vars, "kwargs", rest)) return false;
    } else {
        for (uint32_t k = 0; k < a->n_kw; k++)
            if (!used[k]) return ember_jfail(e->c, "the macro takes no keyword argument '%s'", a->kw_name[k]->s);
    }
    if (def->op & JMACRO_VARARGS) {
        uint32_t extra = a->n > n ? a->n - n : 0;
        if (!ember_jv_list(e->c, extra, false, &rest)) return false;
        if (extra) memcpy(rest.u.l->v, a->pos + n, sizeof *a->pos * extra);
        if (!ember_jdict_set_text(e->c, &ms->vars, "varargs", rest)) return false;
    } else if (a->n > n) {
        return ember_jfail(e->c, "the macro takes not more than %u argument(s)", n);
    }
    for (uint32_t i = 0; i < n_pending; i++) {
        ember_jv v;
        if (!eval(e, ms, pending[i]->a, &v) || !scope_set(e, ms, pending[i]->str, v)) return false;
    }
    return true;
}

/* Runs a macro's or a caller's body in a scope of its own; the nesting is bounded. */
static bool invoke(ev *e, const ember_jfunc *fn, const ember_jargs *a, const ember_jv *caller, ember_jv *out)
{
    const ember_jnode *def = fn->node;
    if (++e->c->depth > e->c->max_depth) {
        at(e, def);
        return ember_jfail(e->c, "macro calls nested more than %u deep (the limit max_depth)", e->c->max_depth);
    }
    scope *parent = fn->scope, *ms = NULL;
    if (fn->kind == JF_MACRO && (def->op & JMACRO_CALLER) && (parent = scope_new(e, parent)))
        ember_jdict_set_text(e->c, &parent->vars, "caller", caller ? *caller : ember_jv_undef());
    if (parent) ms = scope_new(e, parent);
    uint32_t loops = e->loops;
    e->loops = 0;
    bool ok = ms && bind_params(e, def, def->kids2, def->n2, a, ms) && render_string(e, ms, def->kids, def->n, out);
    e->loops = loops;
    e->c->depth--;
    return ok;
}

static bool make_func(ev *e, int kind, const ember_jnode *node, scope *sc, ember_jv *out)
{
    ember_jfunc *f = ember_jalloc(e->c, sizeof *f);
    if (!f) return false;
    f->kind = kind, f->node = node, f->scope = sc;
    *out = (ember_jv){.kind = EJV_FUNC, .u.fn = f};
    return true;
}

static bool call_value(ev *e, const ember_jnode *x, ember_jv fn, const ember_jargs *a, const ember_jv *caller, ember_jv *out)
{
    at(e, x);
    if (fn.kind != EJV_FUNC) return ember_jfail(e->c, "cannot call something that is not a function: got %s", ember_jv_type_name(fn));
    if (fn.u.fn->kind == JF_MACRO || fn.u.fn->kind == JF_CALLER) return invoke(e, fn.u.fn, a, caller, out);
    return ember_jinja_call_builtin(e->c, fn.u.fn, a, out);
}

static bool eval_call(ev *e, scope *sc, const ember_jnode *x, ember_jv *out)
{
    ember_jargs a;
    ember_jv fn;
    return arguments(e, sc, x->kids, x->n, &a) && eval(e, sc, x->a, &fn) && call_value(e, x, fn, &a, NULL, out);
}

/* ---- expressions ------------------------------------------------------------------------- */

static bool eval_member(ev *e, scope *sc, const ember_jnode *x, ember_jv *out)
{
    ember_jv obj, prop, parts[3];
    if (!eval(e, sc, x->a, &obj)) return false;
    const ember_jnode *p = x->b;
    if (p->kind == JN_SLICE) {
        const ember_jnode *k[3] = {p->a, p->b, p->c};
        for (int i = 0; i < 3; i++) {
            parts[i] = ember_jv_undef();
            if (k[i] && !eval(e, sc, k[i], &parts[i])) return false;
        }
        at(e, x);
        return ember_jinja_slice(e->c, obj, parts[0], parts[1], parts[2], out);
    }
    if (!x->op && p->kind == JN_NAME) { /* a.name: no string made for the name */
        bool found;
        at(e, x);
        ember_jv *v = obj.kind == EJV_DICT ? ember_jdict_get(obj.u.d, p->s, p->len) : NULL;
        if (v) return *out = *v, true;
        return ember_jinja_method(e->c, obj, p->s, p->len, out, &found);
    }
    if (x->op) {
        if (!eval(e, sc, p, &prop)) return false;
    } else {
        prop = ember_jv_int(p->i);
    }
    at(e, x);
    return ember_jinja_member(e->c, obj, prop, out);
}

static bool eval_binary(ev *e, scope *sc, const ember_jnode *x, ember_jv *out)
{
    ember_jv l, r;
    if (!eval(e, sc, x->a, &l)) return false;
    if (x->op == JOP_AND || x->op == JOP_OR) {
        if (ember_jv_truthy(l) == (x->op == JOP_OR)) return *out = l, true;
        return eval(e, sc, x->b, out);
    }
    if (!eval(e, sc, x->b, &r)) return false;
    at(e, x);
    return ember_jinja_binary(e->c, x->op, l, r, out);
}

static bool eval_list(ev *e, scope *sc, const ember_jnode *x, ember_jv *out)
{
    if (!ember_jv_list(e->c, x->n, x->kind == JN_TUPLE, out)) return false;
    for (uint32_t i = 0; i < x->n; i++)
        if (!eval(e, sc, x->kids[i], &out->u.l->v[i])) return false;
    return true;
}

static bool eval_dict(ev *e, scope *sc, const ember_jnode *x, ember_jv *out)
{
    if (!ember_jv_dict(e->c, x->n, false, out)) return false;
    for (uint32_t i = 0; i < x->n; i++) {
        ember_jv k, v;
        if (!eval(e, sc, x->kids[i], &k)) return false;
        if (k.kind != EJV_STR) return at(e, x->kids[i]), ember_jfail(e->c, "object keys must be strings: got %s", ember_jv_type_name(k));
        if (!eval(e, sc, x->kids2[i], &v) || !ember_jdict_set(e->c, out->u.d, k.u.s, v)) return false;
    }
    return true;
}

static bool eval_named(ev *e, scope *sc, const ember_jnode *x, ember_jv *out)
{
    ember_jv v;
    ember_jargs a;
    if ((x->a && !eval(e, sc, x->a, &v)) || !arguments(e, sc, x->kids, x->n, &a)) return false;
    at(e, x);
    if (x->kind == JN_FILTER) return ember_jinja_filter(e->c, x->s, x->len, v, x->op, &a, out);
    bool r;
    if (!ember_jinja_test(e->c, x->s, x->len, v, &a, &r)) return false;
    *out = ember_jv_bool(r != (x->op != 0));
    return true;
}

static bool eval(ev *e, scope *sc, const ember_jnode *x, ember_jv *out)
{
    ember_jv v;
    at(e, x);
    if (!ember_jstep(e->c, 1)) return false;
    switch (x->kind) {
    case JN_NAME: *out = lookup(sc, x->s, x->len); return true;
    case JN_INT: *out = ember_jv_int(x->i); return true;
    case JN_FLOAT: *out = ember_jv_float(x->f); return true;
    case JN_STR: *out = (ember_jv){.kind = EJV_STR, .u.s = x->str}; return true;
    case JN_LIST:
    case JN_TUPLE: return eval_list(e, sc, x, out);
    case JN_DICT: return eval_dict(e, sc, x, out);
    case JN_BINARY: return eval_binary(e, sc, x, out);
    case JN_NOT: return eval(e, sc, x->a, &v) && (*out = ember_jv_bool(!ember_jv_truthy(v)), true);
    case JN_SIGN: return eval(e, sc, x->a, &v) && (at(e, x), ember_jinja_sign(e->c, x->op, v, out));
    case JN_MEMBER: return eval_member(e, sc, x, out);
    case JN_CALL: return eval_call(e, sc, x, out);
    case JN_FILTER:
    case JN_TEST: return eval_named(e, sc, x, out);
    case JN_TERNARY: return eval(e, sc, x->a, &v) && eval(e, sc, ember_jv_truthy(v) ? x->b : x->c, out);
    case JN_SELECT:
        if (!eval(e, sc, x->a, &v)) return false;
        if (!ember_jv_truthy(v)) return *out = ember_jv_undef(), true;
        return eval(e, sc, x->b, out);
    default: return ember_jfail(e->c, "this is not an expression");
    }
}

/* ---- statements ------------------------------------------------------------------------ */

/* Binds a loop's or a set's target: a name, or names unpacking a list. */
static bool bind_target(ev *e, scope *sc, const ember_jnode *t, ember_jv v)
{
    if (t->kind == JN_NAME) return scope_set(e, sc, t->str, v);
    at(e, t);
    if (v.kind != EJV_LIST) return ember_jfail(e->c, "cannot unpack %s", ember_jv_type_name(v));
    if (v.u.l->n != t->n) return ember_jfail(e->c, "too %s items to unpack", t->n > v.u.l->n ? "few" : "many");
    for (uint32_t i = 0; i < t->n; i++) {
        if (t->kids[i]->kind != JN_NAME) return ember_jfail(e->c, "cannot unpack into %s", "an expression");
        if (!scope_set(e, sc, t->kids[i]->str, v.u.l->v[i])) return false;
    }
    return true;
}

static int exec_set(ev *e, scope *sc, const ember_jnode *x)
{
    ember_jv v, obj;
    if (!(x->b ? eval(e, sc, x->b, &v) : render_string(e, sc, x->kids, x->n, &v))) return X_FAIL;
    const ember_jnode *t = x->a;
    if (t->kind == JN_NAME || t->kind == JN_TUPLE) return bind_target(e, sc, t, v) ? X_OK : X_FAIL;
    at(e, t);
    if (t->kind != JN_MEMBER) return ember_jfail(e->c, "cannot assign to this"), X_FAIL;
    if (!eval(e, sc, t->a, &obj)) return X_FAIL;
    at(e, t);
    if (obj.kind != EJV_DICT || !obj.u.d->ns) return ember_jfail(e->c, "cannot assign attribute on non-namespace object"), X_FAIL;
    if (t->op || t->b->kind != JN_NAME) return ember_jfail(e->c, "cannot assign to a member with a non-identifier property"), X_FAIL;
    return ember_jdict_set(e->c, obj.u.d, t->b->str, v) ? X_OK : X_FAIL;
}

/* The items a for loop goes over: a list's, a dict's keys; checked against a tuple
 * target and filtered by the loop's condition (in a scope of its own, as each item). */
static bool loop_items(ev *e, scope *ls, const ember_jnode *x, ember_jv it, ember_jlist *items)
{
    at(e, x);
    if (it.kind != EJV_LIST) return ember_jfail(e->c, "expected iterable or object type in for loop: got %s", ember_jv_type_name(it));
    *items = *it.u.l;
    if (x->a->kind == JN_NAME && !x->c) return true;
    ember_jv *keep = ember_jalloc(e->c, sizeof *keep * (items->n ? items->n : 1));
    scope *ts = x->c ? scope_new(e, ls) : NULL;
    if (!keep || (x->c && !ts)) return false;
    uint32_t k = 0;
    for (uint32_t i = 0; i < items->n; i++) {
        ember_jv v = items->v[i], ok = ember_jv_bool(true);
        if (x->a->kind == JN_TUPLE) {
            at(e, x);
            if (v.kind != EJV_LIST) return ember_jfail(e->c, "cannot unpack %s", ember_jv_type_name(v));
            if (v.u.l->n != x->a->n) return ember_jfail(e->c, "too %s items to unpack", x->a->n > v.u.l->n ? "few" : "many");
        }
        if (x->c && (!bind_target(e, ts, x->a, v) || !eval(e, ts, x->c, &ok))) return false;
        if (ember_jv_truthy(ok)) keep[k++] = v;
    }
    items->v = keep, items->n = k;
    return true;
}

static const char *const LOOP_KEYS[] = {"index", "index0", "revindex", "revindex0", "first", "last", "length", "previtem", "nextitem"};

/* `loop`: one dict per for loop, its values set for each iteration. */
static bool loop_update(ember_jdict *d, const ember_jlist *items, uint32_t i)
{
    int64_t n = items->n;
    ember_jv v[9] = {ember_jv_int(i + 1), ember_jv_int(i), ember_jv_int(n - i), ember_jv_int(n - i - 1),
                     ember_jv_bool(i == 0), ember_jv_bool(i == n - 1), ember_jv_int(n),
                     i > 0 ? items->v[i - 1] : ember_jv_undef(), i + 1 < n ? items->v[i + 1] : ember_jv_undef()};
    memcpy(d->v, v, sizeof v);
    return true;
}

static int exec_for(ev *e, scope *sc, const ember_jnode *x, ember_sbuf *out)
{
    scope *ls = scope_new(e, sc);
    ember_jv it, loop;
    ember_jlist items = {0};
    if (!ls || !eval(e, ls, x->b, &it)) return X_FAIL;
    if (it.kind == EJV_DICT && !it.u.d->ns) {
        ember_jv fn;
        bool found;
        if (!ember_jinja_method(e->c, it, "keys", 4, &fn, &found) || !ember_jinja_call_builtin(e->c, fn.u.fn, &(ember_jargs){0}, &it))
            return X_FAIL;
    }
    if (!loop_items(e, ls, x, it, &items) || !ember_jv_dict(e->c, 9, false, &loop)) return X_FAIL;
    for (int i = 0; i < 9; i++)
        if (!ember_jdict_set_text(e->c, loop.u.d, LOOP_KEYS[i], ember_jv_undef())) return X_FAIL;
    if (!ember_jdict_set_text(e->c, &ls->vars, "loop", loop)) return X_FAIL;
    bool ran = false;
    e->loops++;
    for (uint32_t i = 0; i < items.n; i++) {
        loop_update(loop.u.d, &items, i);
        if (!bind_target(e, ls, x->a, items.v[i])) return e->loops--, X_FAIL;
        int r = exec_block(e, ls, x->kids, x->n, out);
        if (r == X_FAIL) return e->loops--, X_FAIL;
        if (r == X_CONTINUE) continue; /* as @huggingface/jinja: an iteration cut short does not count */
        if (r == X_BREAK) break;
        ran = true;
    }
    e->loops--;
    return ran ? X_OK : exec_block(e, ls, x->kids2, x->n2, out);
}

static int exec_stmt(ev *e, scope *sc, const ember_jnode *x, ember_sbuf *out)
{
    ember_jv v;
    at(e, x);
    if (!ember_jstep(e->c, 1)) return X_FAIL;
    switch (x->kind) {
    case JN_TEXT: ember_sbuf_add(out, x->s, x->len); return check_out(e, out) ? X_OK : X_FAIL;
    case JN_COMMENT: return X_OK;
    case JN_IF:
        if (!eval(e, sc, x->a, &v)) return X_FAIL;
        return ember_jv_truthy(v) ? exec_block(e, sc, x->kids, x->n, out) : exec_block(e, sc, x->kids2, x->n2, out);
    case JN_FOR: return exec_for(e, sc, x, out);
    case JN_SET: return exec_set(e, sc, x);
    case JN_MACRO: return make_func(e, JF_MACRO, x, sc, &v) && scope_set(e, sc, x->str, v) ? X_OK : X_FAIL;
    case JN_BREAK:
    case JN_CONTINUE:
        if (!e->loops) return ember_jfail(e->c, "%s outside a loop", x->kind == JN_BREAK ? "break" : "continue"), X_FAIL;
        return x->kind == JN_BREAK ? X_BREAK : X_CONTINUE;
    case JN_CALLBLOCK: {
        ember_jargs a;
        ember_jv caller, fn;
        if (!make_func(e, JF_CALLER, x, sc, &caller) || !arguments(e, sc, x->a->kids, x->a->n, &a) ||
            !eval(e, sc, x->a->a, &fn) || !call_value(e, x, fn, &a, &caller, &v))
            return X_FAIL;
        return emit_value(e, v, out) ? X_OK : X_FAIL;
    }
    case JN_FILTERBLOCK: {
        ember_jargs a;
        if (!render_string(e, sc, x->kids, x->n, &v) || !arguments(e, sc, x->a->kids, x->a->n, &a)) return X_FAIL;
        at(e, x);
        if (!ember_jinja_filter(e->c, x->a->s, x->a->len, v, x->a->op, &a, &v)) return X_FAIL;
        return emit_value(e, v, out) ? X_OK : X_FAIL;
    }
    default: return eval(e, sc, x, &v) && emit_value(e, v, out) ? X_OK : X_FAIL;
    }
}

static int exec_block(ev *e, scope *sc, ember_jnode *const *kids, uint32_t n, ember_sbuf *out)
{
    for (uint32_t i = 0; i < n; i++) {
        int r = exec_stmt(e, sc, kids[i], out);
        if (r != X_OK) return r;
    }
    return X_OK;
}

/* ---- the render ---------------------------------------------------------------------------- */

static bool setup_globals(ev *e, scope *root, const ember_jdict *vars)
{
    static const char *const constants[] = {"true", "false", "none", "True", "False", "None"};
    for (int i = 0; i < 6; i++) {
        ember_jv v = i % 3 == 2 ? ember_jv_none() : ember_jv_bool(i % 3 == 0);
        if (!ember_jdict_set_text(e->c, &root->vars, constants[i], v)) return false;
    }
    for (const char *const *g = ember_jinja_global_names(); *g; g++) {
        ember_jv f;
        ember_jinja_global(*g, &f);
        if (!ember_jdict_set_text(e->c, &root->vars, *g, f)) return false;
    }
    for (uint32_t i = 0; vars && i < vars->n; i++) {
        /* @huggingface/jinja refuses a context variable that would replace a global (dict is ours) */
        if (strcmp(vars->k[i]->s, "dict") && ember_jdict_get(&root->vars, vars->k[i]->s, vars->k[i]->len))
            return ember_jfail(e->c, "variable already declared: %s", vars->k[i]->s);
        if (!ember_jdict_set(e->c, &root->vars, vars->k[i], vars->v[i])) return false;
    }
    return true;
}

bool ember_jinja_eval(ember_jctx *c, ember_jnode *const *body, uint32_t n, const ember_jdict *vars, ember_sbuf *out)
{
    ev e = {.c = c};
    scope *root = scope_new(&e, NULL);
    if (!root || !setup_globals(&e, root, vars)) return false;
    int r = exec_block(&e, root, body, n, out);
    return r == X_OK;
}
