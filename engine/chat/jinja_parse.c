/* jinja_parse.c — the recursive-descent parser, one function per rule of
 * @huggingface/jinja's parser.ts (see jinja_parse.h). Nodes live in the template's
 * arena; lists are collected in a growing vector first and copied there. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "jinja_parse.h"

typedef struct parser {
    const ember_jtok *t;
    size_t n, at;
    ember_jctx *arena;
    uint32_t nesting;
    ember_err *err;
    ember_status status;
    bool failed;
} parser;

typedef struct nvec {
    ember_jnode **v;
    uint32_t n, cap;
} nvec;

/* ---- tokens and errors ------------------------------------------------------------------ */

static const ember_jtok *cur(const parser *p) { return p->at < p->n ? &p->t[p->at] : NULL; }

static bool fail(parser *p, const char *fmt, ...) EMBER_PRINTF(2, 3);
static bool fail(parser *p, const char *fmt, ...)
{
    if (p->failed) return false;
    p->failed = true;
    const ember_jtok *t = cur(p) ? cur(p) : p->n ? &p->t[p->n - 1] : NULL;
    char why[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    p->status = ember_fail(p->err, EMBER_ERR_INVALID_ARG, "jinja: line %u, column %u: %s%s", t ? t->line : 1,
                           t ? t->col : 1, why, cur(p) ? "" : " (at the end of the template)");
    return false;
}

static bool is(const parser *p, ember_jtok_kind k) { return cur(p) && cur(p)->kind == k; }

static bool is_at(const parser *p, size_t ahead, ember_jtok_kind k, const char *name)
{
    if (p->at + ahead >= p->n) return false;
    const ember_jtok *t = &p->t[p->at + ahead];
    return t->kind == k && (!name || (t->len == strlen(name) && memcmp(t->s, name, t->len) == 0));
}

static bool is_name(const parser *p, const char *name) { return is_at(p, 0, JT_NAME, name); }

/* {% followed by one of the names (a NULL-terminated list). */
static bool is_stmt(const parser *p, const char *const *names)
{
    for (; *names; names++)
        if (is_at(p, 0, JT_OPEN_STMT, NULL) && is_at(p, 1, JT_NAME, *names)) return true;
    return false;
}

static bool expect(parser *p, ember_jtok_kind k, const char *what)
{
    if (!is(p, k)) return fail(p, "expected %s", what);
    p->at++;
    return true;
}

static bool expect_name(parser *p, const char *name)
{
    if (!is_name(p, name)) return fail(p, "expected '%s'", name);
    p->at++;
    return true;
}

/* ---- nodes ------------------------------------------------------------------------------- */

static ember_jnode *node(parser *p, ember_jnode_kind kind, const ember_jtok *at)
{
    ember_jnode *x = ember_jalloc(p->arena, sizeof *x);
    if (!x) {
        fail(p, "out of memory");
        p->status = EMBER_ERR_OUT_OF_MEMORY;
        return NULL;
    }
    x->kind = kind;
    if (!at) at = cur(p) ? cur(p) : p->n ? &p->t[p->n - 1] : NULL;
    if (at) x->line = at->line, x->col = at->col;
    return x;
}

/* s[0..len) as an ember_jstr in the arena, so that evaluating a literal or naming a
 * variable allocates nothing. */
static const ember_jstr *jstr(parser *p, const char *s, size_t len)
{
    ember_jstr *t = ember_jalloc(p->arena, sizeof *t + len + 1);
    if (!t) {
        fail(p, "out of memory");
        p->status = EMBER_ERR_OUT_OF_MEMORY;
        return NULL;
    }
    t->len = len;
    memcpy(t->s, s, len);
    return t;
}

static uint32_t depth_of(ember_jnode *const *v, uint32_t n)
{
    uint32_t d = 0;
    for (uint32_t i = 0; i < n; i++)
        if (v[i] && v[i]->depth > d) d = v[i]->depth;
    return d;
}

/* Sets x's depth from its children; refuses a tree deeper than the evaluator may go. */
static ember_jnode *done(parser *p, ember_jnode *x)
{
    if (!x) return NULL;
    ember_jnode *abc[3] = {x->a, x->b, x->c};
    uint32_t d = depth_of(abc, 3), k = depth_of(x->kids, x->n), k2 = depth_of(x->kids2, x->n2);
    d = d > k ? d : k;
    x->depth = 1 + (d > k2 ? d : k2);
    if (x->depth > EMBER_JINJA_MAX_NESTING) {
        fail(p, "nested more than %d deep", EMBER_JINJA_MAX_NESTING);
        return NULL;
    }
    return x;
}

static bool vec_push(parser *p, nvec *v, ember_jnode *x)
{
    if (!x) return false;
    if (v->n == v->cap) {
        uint32_t cap = v->cap ? v->cap * 2 : 8;
        ember_jnode **nv = ember_realloc(v->v, cap * sizeof *nv);
        if (!nv) {
            fail(p, "out of memory");
            p->status = EMBER_ERR_OUT_OF_MEMORY;
            return false;
        }
        v->v = nv, v->cap = cap;
    }
    v->v[v->n++] = x;
    return true;
}

/* Moves the vector's nodes into the arena (the vector is freed either way). */
static bool vec_take(parser *p, nvec *v, ember_jnode ***out, uint32_t *n)
{
    *out = NULL, *n = 0;
    if (!p->failed && v->n) {
        *out = ember_jalloc(p->arena, v->n * sizeof **out);
        if (*out) memcpy(*out, v->v, v->n * sizeof **out), *n = v->n;
        else fail(p, "out of memory");
    }
    ember_free(v->v);
    *v = (nvec){0};
    return !p->failed;
}

static ember_jnode *unary(parser *p, ember_jnode_kind kind, int op, const ember_jtok *at, ember_jnode *a)
{
    if (!a) return NULL;
    ember_jnode *x = node(p, kind, at);
    if (x) x->op = op, x->a = a;
    return done(p, x);
}

static ember_jnode *binary(parser *p, int op, const ember_jtok *at, ember_jnode *a, ember_jnode *b)
{
    if (!a || !b) return NULL;
    ember_jnode *x = node(p, JN_BINARY, at);
    if (x) x->op = op, x->a = a, x->b = b;
    return done(p, x);
}

/* ---- expressions ------------------------------------------------------------------------- */

static ember_jnode *expression(parser *p);
static ember_jnode *primary(parser *p);
static ember_jnode *member(parser *p, ember_jnode *obj);
static ember_jnode *call(parser *p, ember_jnode *callee);

/* Nesting by recursion (parentheses, lists, arguments): bounded before the tree is. */
static bool enter(parser *p)
{
    if (++p->nesting > EMBER_JINJA_MAX_NESTING) return fail(p, "nested more than %d deep", EMBER_JINJA_MAX_NESTING);
    return true;
}

/* a, b, c as a tuple (or the one expression). primary: items are primaries (for targets). */
static ember_jnode *sequence(parser *p, bool prim)
{
    const ember_jtok *at = cur(p);
    ember_jnode *first = prim ? primary(p) : expression(p);
    if (!first || !is(p, JT_COMMA)) return first;
    nvec v = {0};
    vec_push(p, &v, first);
    while (is(p, JT_COMMA) && !p->failed) {
        p->at++;
        if (!vec_push(p, &v, prim ? primary(p) : expression(p))) break;
    }
    ember_jnode *x = p->failed ? NULL : node(p, JN_TUPLE, at);
    if (!x) {
        ember_free(v.v);
        return NULL;
    }
    return vec_take(p, &v, &x->kids, &x->n) ? done(p, x) : NULL;
}

/* ( arguments ): expressions, name=value, *list, **dict; params: names and name=default. */
static bool arguments(parser *p, bool params, ember_jnode ***out, uint32_t *n)
{
    nvec v = {0};
    bool ok = expect(p, JT_LPAREN, "'('");
    while (ok && !is(p, JT_RPAREN)) {
        const ember_jtok *at = cur(p);
        if (!at) { ok = fail(p, "expected ')'"); break; }
        bool kw_spread = is(p, JT_POW), spread = is(p, JT_MUL) && at->len == 1 && at->s[0] == '*';
        if (params && (kw_spread || spread)) { ok = fail(p, "a macro's parameters cannot unpack"); break; }
        ember_jnode *arg;
        if (kw_spread || spread) {
            p->at++;
            arg = unary(p, kw_spread ? JN_KWSPREAD : JN_SPREAD, 0, at, expression(p));
        } else {
            arg = expression(p);
            if (arg && is(p, JT_ASSIGN)) {
                p->at++;
                if (arg->kind != JN_NAME) { ok = fail(p, "expected a name before '='"); break; }
                ember_jnode *kw = node(p, JN_KWARG, at);
                if (kw) kw->s = arg->s, kw->len = arg->len, kw->str = arg->str, kw->a = expression(p);
                arg = kw && kw->a ? done(p, kw) : NULL;
            } else if (arg && params && arg->kind != JN_NAME) {
                ok = fail(p, "expected a parameter name");
                break;
            }
        }
        if (!vec_push(p, &v, arg)) { ok = false; break; }
        if (is(p, JT_COMMA)) p->at++;
    }
    ok = ok && expect(p, JT_RPAREN, "')'");
    return vec_take(p, &v, out, n) && ok;
}

static ember_jnode *call(parser *p, ember_jnode *callee)
{
    if (!callee) return NULL;
    ember_jnode *x = node(p, JN_CALL, cur(p));
    if (!x) return NULL;
    x->a = callee, x->line = callee->line, x->col = callee->col; /* errors name the callee */
    if (!arguments(p, false, &x->kids, &x->n) || !done(p, x)) return NULL;
    x = member(p, x);
    return x && is(p, JT_LPAREN) ? call(p, x) : x;
}

/* The inside of [ ]: an index, or a slice start:stop:step with any part left out. */
static ember_jnode *subscript(parser *p)
{
    ember_jnode *part[4] = {0};
    int n = 0;
    bool slice = false;
    const ember_jtok *at = cur(p);
    while (!is(p, JT_RBRACKET)) {
        if (!cur(p)) return fail(p, "expected ']'"), NULL;
        if (n == 4) return fail(p, "a slice has at most 3 parts"), NULL;
        if (is(p, JT_COLON)) {
            part[n++] = NULL, p->at++, slice = true;
            continue;
        }
        if (!(part[n++] = expression(p))) return NULL;
        if (is(p, JT_COLON)) p->at++, slice = true;
    }
    if (n == 0) return fail(p, "expected an index or a slice"), NULL;
    if (!slice) return part[0];
    if (n > 3) return fail(p, "a slice has at most 3 parts"), NULL;
    ember_jnode *x = node(p, JN_SLICE, at);
    if (x) x->a = part[0], x->b = part[1], x->c = part[2];
    return done(p, x);
}

static ember_jnode *member(parser *p, ember_jnode *obj)
{
    while (obj && (is(p, JT_DOT) || is(p, JT_LBRACKET))) {
        const ember_jtok *at = cur(p);
        bool computed = at->kind == JT_LBRACKET;
        p->at++;
        ember_jnode *prop;
        if (computed) {
            prop = subscript(p);
            if (prop && !expect(p, JT_RBRACKET, "']'")) return NULL;
        } else {
            prop = primary(p);
            if (prop && prop->kind != JN_NAME && prop->kind != JN_INT)
                return fail(p, "expected a name or an integer after '.'"), NULL;
        }
        if (!prop) return NULL;
        ember_jnode *x = node(p, JN_MEMBER, at);
        if (!x) return NULL;
        x->a = obj, x->b = prop, x->op = computed;
        obj = done(p, x);
    }
    return obj;
}

static ember_jnode *literal_list(parser *p, const ember_jtok *at, bool dict)
{
    nvec keys = {0}, vals = {0};
    ember_jtok_kind close = dict ? JT_RBRACE : JT_RBRACKET;
    while (!p->failed && !is(p, close)) {
        if (!cur(p)) { fail(p, dict ? "expected '}'" : "expected ']'"); break; }
        if (!vec_push(p, &keys, expression(p))) break;
        if (dict && (!expect(p, JT_COLON, "':' between a key and its value") || !vec_push(p, &vals, expression(p))))
            break;
        if (is(p, JT_COMMA)) p->at++;
    }
    if (!p->failed) p->at++;
    ember_jnode *x = p->failed ? NULL : node(p, dict ? JN_DICT : JN_LIST, at);
    ember_jnode **none = NULL;
    uint32_t zero = 0;
    vec_take(p, &keys, x ? &x->kids : &none, x ? &x->n : &zero);
    vec_take(p, &vals, x ? &x->kids2 : &none, x ? &x->n2 : &zero);
    return p->failed ? NULL : done(p, x);
}

static ember_jnode *number(parser *p, const ember_jtok *t)
{
    char buf[64];
    size_t n = t->len < sizeof buf - 1 ? t->len : sizeof buf - 1;
    memcpy(buf, t->s, n);
    buf[n] = 0;
    bool fractional = memchr(t->s, '.', t->len) != NULL;
    double d = strtod(buf, NULL);
    ember_jnode *x = node(p, fractional || d >= 9.2e18 || d <= -9.2e18 ? JN_FLOAT : JN_INT, t);
    if (!x) return NULL;
    if (x->kind == JN_INT) x->i = strtoll(buf, NULL, 10);
    x->f = d;
    return done(p, x);
}

/* Adjacent string literals join into one ('a' 'b' is 'ab'). */
static ember_jnode *string(parser *p, const ember_jtok *t)
{
    size_t len = t->len, k = p->at;
    for (; k < p->n && p->t[k].kind == JT_STR; k++) len += p->t[k].len;
    char *s = ember_jalloc(p->arena, len + 1);
    ember_jnode *x = s ? node(p, JN_STR, t) : NULL;
    if (!x) return fail(p, "out of memory"), NULL;
    memcpy(s, t->s, t->len);
    for (size_t o = t->len; p->at < k; p->at++) memcpy(s + o, p->t[p->at].s, p->t[p->at].len), o += p->t[p->at].len;
    x->s = s, x->len = len;
    x->str = jstr(p, s, len);
    return x->str ? done(p, x) : NULL;
}

static ember_jnode *primary(parser *p)
{
    const ember_jtok *t = cur(p);
    if (!t) return fail(p, "expected an expression"), NULL;
    p->at++;
    switch (t->kind) {
    case JT_NUM: return number(p, t);
    case JT_STR: return string(p, t);
    case JT_NAME: {
        ember_jnode *x = node(p, JN_NAME, t);
        if (x) x->s = t->s, x->len = t->len, x->str = jstr(p, t->s, t->len);
        return x && x->str ? done(p, x) : NULL;
    }
    case JT_LPAREN: {
        if (!enter(p)) return NULL;
        ember_jnode *x = sequence(p, false);
        p->nesting--;
        return x && expect(p, JT_RPAREN, "')'") ? x : NULL;
    }
    case JT_LBRACKET:
    case JT_LBRACE: {
        if (!enter(p)) return NULL;
        ember_jnode *x = literal_list(p, t, t->kind == JT_LBRACE);
        p->nesting--;
        return x;
    }
    default: p->at--; return fail(p, "unexpected '%.*s'", (int)(t->len > 20 ? 20 : t->len), t->s), NULL;
    }
}

static ember_jnode *call_member(parser *p)
{
    ember_jnode *x = member(p, primary(p));
    return x && is(p, JT_LPAREN) ? call(p, x) : x;
}

static ember_jnode *sign(parser *p)
{
    const ember_jtok *t = cur(p);
    if (t && (t->kind == JT_UNARY || t->kind == JT_ADD) && t->len == 1 && (t->s[0] == '-' || t->s[0] == '+')) {
        p->at++;
        if (!enter(p)) return NULL;
        ember_jnode *x = unary(p, JN_SIGN, t->s[0], t, sign(p));
        p->nesting--;
        return x;
    }
    return call_member(p);
}

/* x | name and x | name(args); x is name and x is not name(args). */
static ember_jnode *named_op(parser *p, ember_jnode *operand, ember_jnode_kind kind, bool negate, const ember_jtok *at)
{
    ember_jnode *name = primary(p);
    if (!name) return NULL;
    if (name->kind != JN_NAME) return fail(p, kind == JN_FILTER ? "expected a filter's name" : "expected a test's name"), NULL;
    ember_jnode *x = node(p, kind, at);
    if (!x) return NULL;
    x->a = operand, x->s = name->s, x->len = name->len, x->op = negate;
    if (is(p, JT_LPAREN)) {
        if (kind == JN_FILTER) x->op = 1;
        if (!arguments(p, false, &x->kids, &x->n)) return NULL;
    }
    return done(p, x);
}

static ember_jnode *filtered(parser *p)
{
    ember_jnode *x = sign(p);
    while (x && is(p, JT_PIPE)) {
        const ember_jtok *at = cur(p);
        p->at++;
        x = named_op(p, x, JN_FILTER, false, at);
    }
    return x;
}

static ember_jnode *tested(parser *p)
{
    ember_jnode *x = filtered(p);
    while (x && is_name(p, "is")) {
        const ember_jtok *at = cur(p);
        p->at++;
        bool negate = is_name(p, "not");
        p->at += negate;
        x = named_op(p, x, JN_TEST, negate, at);
    }
    return x;
}

static ember_jnode *power(parser *p)
{
    ember_jnode *x = tested(p);
    while (x && is(p, JT_POW)) {
        const ember_jtok *at = cur(p);
        p->at++;
        x = binary(p, JOP_POW, at, x, tested(p));
    }
    return x;
}

static ember_jnode *multiplicative(parser *p)
{
    ember_jnode *x = power(p);
    while (x && is(p, JT_MUL)) {
        const ember_jtok *at = cur(p);
        p->at++;
        int op = at->len == 2 ? JOP_FLOORDIV : at->s[0] == '*' ? JOP_MUL : at->s[0] == '/' ? JOP_DIV : JOP_MOD;
        x = binary(p, op, at, x, power(p));
    }
    return x;
}

static ember_jnode *additive(parser *p)
{
    ember_jnode *x = multiplicative(p);
    while (x && is(p, JT_ADD)) {
        const ember_jtok *at = cur(p);
        p->at++;
        x = binary(p, at->s[0] == '+' ? JOP_ADD : at->s[0] == '-' ? JOP_SUB : JOP_CAT, at, x, multiplicative(p));
    }
    return x;
}

static int compare_op(const ember_jtok *t)
{
    if (t->len == 2) return t->s[0] == '=' ? JOP_EQ : t->s[0] == '!' ? JOP_NE : t->s[0] == '<' ? JOP_LE : JOP_GE;
    return t->s[0] == '<' ? JOP_LT : JOP_GT;
}

static ember_jnode *comparison(parser *p)
{
    ember_jnode *x = additive(p);
    for (;;) {
        const ember_jtok *at = cur(p);
        int op;
        if (is_name(p, "not") && is_at(p, 1, JT_NAME, "in")) op = JOP_NOT_IN, p->at += 2;
        else if (is_name(p, "in")) op = JOP_IN, p->at++;
        else if (is(p, JT_CMP)) op = compare_op(at), p->at++;
        else return x;
        if (!x) return NULL;
        x = binary(p, op, at, x, additive(p));
    }
}

static ember_jnode *negation(parser *p)
{
    if (!is_name(p, "not")) return comparison(p);
    const ember_jtok *at = cur(p);
    p->at++;
    if (!enter(p)) return NULL;
    ember_jnode *x = unary(p, JN_NOT, 0, at, negation(p));
    p->nesting--;
    return x;
}

static ember_jnode *logical(parser *p, bool or)
{
    ember_jnode *x = or ? logical(p, false) : negation(p);
    while (x && is_name(p, or ? "or" : "and")) {
        const ember_jtok *at = cur(p);
        p->at++;
        x = binary(p, or ? JOP_OR : JOP_AND, at, x, or ? logical(p, false) : negation(p));
    }
    return x;
}

/* a if c else b; a if c (undefined when c is false; a loop filter in a for). */
static ember_jnode *expression(parser *p)
{
    if (!enter(p)) return NULL;
    ember_jnode *x = logical(p, true);
    if (x && is_name(p, "if")) {
        const ember_jtok *at = cur(p);
        p->at++;
        ember_jnode *test = logical(p, true), *y = node(p, JN_SELECT, at);
        if (test && y && is_name(p, "else")) {
            p->at++;
            y->kind = JN_TERNARY, y->a = test, y->b = x, y->c = expression(p);
            x = y->c ? done(p, y) : NULL;
        } else {
            if (y) y->a = test, y->b = x;
            x = test && y ? done(p, y) : NULL;
        }
    }
    p->nesting--;
    return x;
}

/* ---- statements -------------------------------------------------------------------------- */

static ember_jnode *any(parser *p);

/* Statements up to one of the names (left unconsumed). */
static bool block(parser *p, const char *const *until, ember_jnode ***out, uint32_t *n)
{
    nvec v = {0};
    while (!p->failed && !is_stmt(p, until)) {
        if (!cur(p)) {
            fail(p, "expected {%% %s %%}", until[0]);
            break;
        }
        vec_push(p, &v, any(p));
    }
    return vec_take(p, &v, out, n);
}

/* {% NAME %} closing a block. */
static bool end_tag(parser *p, const char *name)
{
    return expect(p, JT_OPEN_STMT, "'{%'") && expect_name(p, name) && expect(p, JT_CLOSE_STMT, "'%}'");
}

static ember_jnode *if_stmt(parser *p, const ember_jtok *at)
{
    static const char *const stops[] = {"elif", "else", "endif", NULL}, *const endif[] = {"endif", NULL};
    ember_jnode *x = node(p, JN_IF, at);
    if (!x || !(x->a = expression(p)) || !expect(p, JT_CLOSE_STMT, "'%}'") || !block(p, stops, &x->kids, &x->n))
        return NULL;
    if (is_stmt(p, (const char *const[]){"elif", NULL})) {
        const ember_jtok *elif = &p->t[p->at + 1];
        p->at += 2;
        ember_jnode *alt = if_stmt(p, elif);
        if (!alt || !(x->kids2 = ember_jalloc(p->arena, sizeof *x->kids2))) return NULL;
        x->kids2[0] = alt, x->n2 = 1;
    } else if (is_stmt(p, (const char *const[]){"else", NULL})) {
        p->at += 2;
        if (!expect(p, JT_CLOSE_STMT, "'%}'") || !block(p, endif, &x->kids2, &x->n2)) return NULL;
    }
    return done(p, x);
}

static ember_jnode *for_stmt(parser *p, const ember_jtok *at)
{
    static const char *const stops[] = {"endfor", "else", NULL}, *const endfor[] = {"endfor", NULL};
    ember_jnode *x = node(p, JN_FOR, at);
    if (!x || !(x->a = sequence(p, true))) return NULL;
    if (x->a->kind != JN_NAME && x->a->kind != JN_TUPLE) return fail(p, "expected a name or names to loop with"), NULL;
    if (!expect_name(p, "in") || !(x->b = expression(p)) || !expect(p, JT_CLOSE_STMT, "'%}'")) return NULL;
    if (x->b->kind == JN_SELECT) x->c = x->b->a, x->b = x->b->b; /* for x in xs if cond */
    if (!block(p, stops, &x->kids, &x->n)) return NULL;
    if (is_stmt(p, (const char *const[]){"else", NULL})) {
        p->at += 2;
        if (!expect(p, JT_CLOSE_STMT, "'%}'") || !block(p, endfor, &x->kids2, &x->n2)) return NULL;
    }
    return end_tag(p, "endfor") ? done(p, x) : NULL;
}

static ember_jnode *set_stmt(parser *p, const ember_jtok *at)
{
    static const char *const endset[] = {"endset", NULL};
    ember_jnode *x = node(p, JN_SET, at);
    if (!x || !(x->a = sequence(p, false))) return NULL;
    if (is(p, JT_ASSIGN)) {
        p->at++;
        if (!(x->b = sequence(p, false)) || !expect(p, JT_CLOSE_STMT, "'%}'")) return NULL;
        return done(p, x);
    }
    if (!expect(p, JT_CLOSE_STMT, "'%}'") || !block(p, endset, &x->kids, &x->n)) return NULL;
    return end_tag(p, "endset") ? done(p, x) : NULL;
}

/* Which of varargs, kwargs and caller a body names (then a macro takes them). */
static int special_names(const ember_jnode *x)
{
    if (!x) return 0;
    int f = 0;
    if (x->kind == JN_NAME) {
        if (x->len == 7 && !memcmp(x->s, "varargs", 7)) f |= JMACRO_VARARGS;
        if (x->len == 6 && !memcmp(x->s, "kwargs", 6)) f |= JMACRO_KWARGS;
        if (x->len == 6 && !memcmp(x->s, "caller", 6)) f |= JMACRO_CALLER;
    }
    f |= special_names(x->a) | special_names(x->b) | special_names(x->c);
    for (uint32_t i = 0; i < x->n; i++) f |= special_names(x->kids[i]);
    for (uint32_t i = 0; i < x->n2; i++) f |= special_names(x->kids2[i]);
    return f;
}

static ember_jnode *macro_stmt(parser *p, const ember_jtok *at)
{
    static const char *const end[] = {"endmacro", NULL};
    ember_jnode *x = node(p, JN_MACRO, at), *name = x ? primary(p) : NULL;
    if (!name) return NULL;
    if (name->kind != JN_NAME) return fail(p, "expected the macro's name"), NULL;
    x->s = name->s, x->len = name->len, x->str = name->str;
    if (!arguments(p, true, &x->kids2, &x->n2) || !expect(p, JT_CLOSE_STMT, "'%}'") || !block(p, end, &x->kids, &x->n))
        return NULL;
    for (uint32_t i = 0; i < x->n; i++) x->op |= special_names(x->kids[i]);
    return end_tag(p, "endmacro") ? done(p, x) : NULL;
}

static ember_jnode *call_stmt(parser *p, const ember_jtok *at)
{
    static const char *const end[] = {"endcall", NULL};
    ember_jnode *x = node(p, JN_CALLBLOCK, at);
    if (!x || (is(p, JT_LPAREN) && !arguments(p, true, &x->kids2, &x->n2))) return NULL;
    ember_jnode *callee = primary(p);
    if (!callee) return NULL;
    if (callee->kind != JN_NAME) return fail(p, "expected the name of the macro to call"), NULL;
    ember_jnode *c = node(p, JN_CALL, at);
    if (!c) return NULL;
    c->a = callee;
    if (!arguments(p, false, &c->kids, &c->n) || !done(p, c) || !expect(p, JT_CLOSE_STMT, "'%}'") ||
        !block(p, end, &x->kids, &x->n))
        return NULL;
    x->a = c;
    for (uint32_t i = 0; i < x->n; i++) x->op |= special_names(x->kids[i]);
    return end_tag(p, "endcall") ? done(p, x) : NULL;
}

static ember_jnode *filter_stmt(parser *p, const ember_jtok *at)
{
    static const char *const end[] = {"endfilter", NULL};
    ember_jnode *x = named_op(p, NULL, JN_FILTER, false, at), *b = x ? node(p, JN_FILTERBLOCK, at) : NULL;
    if (!b || !expect(p, JT_CLOSE_STMT, "'%}'") || !block(p, end, &b->kids, &b->n)) return NULL;
    b->a = x;
    return end_tag(p, "endfilter") ? done(p, b) : NULL;
}

static ember_jnode *statement(parser *p)
{
    const ember_jtok *open = cur(p);
    p->at++;
    const ember_jtok *t = cur(p);
    if (!t || t->kind != JT_NAME) return fail(p, "expected a statement's name after '{%%'"), NULL;
    p->at++;
#define IS(w) (t->len == sizeof w - 1 && memcmp(t->s, w, t->len) == 0)
    if (IS("set")) return set_stmt(p, open);
    if (IS("if")) {
        ember_jnode *x = if_stmt(p, open);
        return x && end_tag(p, "endif") ? x : NULL;
    }
    if (IS("for")) return for_stmt(p, open);
    if (IS("macro")) return macro_stmt(p, open);
    if (IS("call")) return call_stmt(p, open);
    if (IS("filter")) return filter_stmt(p, open);
    if (IS("break") || IS("continue")) {
        ember_jnode *x = node(p, IS("break") ? JN_BREAK : JN_CONTINUE, open);
        return x && expect(p, JT_CLOSE_STMT, "'%}'") ? done(p, x) : NULL;
    }
#undef IS
    p->at--;
    return fail(p, "unknown statement '%.*s'", (int)(t->len > 30 ? 30 : t->len), t->s), NULL;
}

static ember_jnode *any(parser *p)
{
    const ember_jtok *t = cur(p);
    if (!enter(p)) return NULL;
    ember_jnode *x = NULL;
    switch (t->kind) {
    case JT_COMMENT: p->at++, x = done(p, node(p, JN_COMMENT, t)); break;
    case JT_TEXT:
        p->at++;
        if ((x = node(p, JN_TEXT, t))) x->s = t->s, x->len = t->len, x = done(p, x);
        break;
    case JT_OPEN_STMT: x = statement(p); break;
    case JT_OPEN_EXPR:
        p->at++;
        x = expression(p);
        if (x && !expect(p, JT_CLOSE_EXPR, "'}}'")) x = NULL;
        break;
    default: fail(p, "unexpected '%.*s'", (int)(t->len > 20 ? 20 : t->len), t->s);
    }
    p->nesting--;
    return x;
}

ember_status ember_jinja_parse_toks(const ember_jtoks *toks, ember_jctx *arena, ember_jnode ***body, uint32_t *n,
                                    ember_err *err)
{
    parser p = {.t = toks->v, .n = toks->n, .arena = arena, .err = err};
    nvec v = {0};
    while (!p.failed && p.at < p.n) vec_push(&p, &v, any(&p));
    vec_take(&p, &v, body, n);
    if (p.failed && arena->failed && p.status == EMBER_OK) p.status = arena->status;
    return p.failed ? p.status : EMBER_OK;
}
