/* grammar.c — GBNF text to the flat rules of grammar.h: a recursive-descent parser whose
 * repetitions and groups become rules of their own, then the checks that make matching
 * safe (every rule defined, none left-recursive). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "engine/tokenizer/utf8.h"
#include "grammar.h"

#define MAX_REPEAT 1000  /* the largest count of x{m,n} (each copy is a reference) */
#define MAX_RULES 65536

typedef struct elemvec {
    ember_gelem *v;
    uint32_t n, cap;
} elemvec;

typedef struct rule_b {
    char *name;
    elemvec body;
    bool defined;
    const char *first_use; /* where a reference named it first (undefined-rule errors) */
} rule_b;

typedef struct parser {
    const char *s, *p, *end;
    rule_b *rules;
    uint32_t n_rules, cap_rules;
    uint32_t *ranges;
    uint32_t n_ranges, cap_ranges;
    ember_gclass *classes;
    uint32_t n_classes, cap_classes;
    ember_err *err;
    bool failed;
    ember_status status; /* the first failure's */
} parser;

/* ---- growing arrays and errors ---------------------------------------------------------- */

static bool grow(parser *ps, void **v, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap) return true;
    uint32_t c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    void *n = ember_realloc(*v, (size_t)c * size);
    if (!n) {
        if (!ps->failed) ps->status = ember_fail(ps->err, EMBER_ERR_OUT_OF_MEMORY, "grammar: out of memory");
        ps->failed = true;
        return false;
    }
    *v = n, *cap = c;
    return true;
}

static void fail_at(parser *ps, const char *at, const char *fmt, ...) EMBER_PRINTF(3, 4);
static void fail_at(parser *ps, const char *at, const char *fmt, ...)
{
    if (ps->failed) return;
    ps->failed = true;
    uint32_t line = 1, col = 1;
    for (const char *q = ps->s; q < at && q < ps->end; q++) line += *q == '\n', col = *q == '\n' ? 1 : col + 1;
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    ps->status = ember_fail(ps->err, EMBER_ERR_INVALID_ARG, "grammar: line %u, column %u: %s", line, col, why);
}

static void push(parser *ps, uint32_t rule, uint32_t kind, uint32_t value)
{
    elemvec *b = &ps->rules[rule].body;
    if (grow(ps, (void **)&b->v, &b->cap, b->n + 1, sizeof *b->v)) b->v[b->n++] = (ember_gelem){kind, value};
}

/* The rule named name[0..n) (created, undefined, on first sight), or UINT32_MAX. */
static uint32_t rule_named(parser *ps, const char *name, size_t n)
{
    for (uint32_t r = 0; r < ps->n_rules; r++)
        if (strlen(ps->rules[r].name) == n && memcmp(ps->rules[r].name, name, n) == 0) return r;
    if (ps->n_rules >= MAX_RULES) {
        fail_at(ps, ps->p, "more than %d rules", MAX_RULES);
        return UINT32_MAX;
    }
    if (!grow(ps, (void **)&ps->rules, &ps->cap_rules, ps->n_rules + 1, sizeof *ps->rules)) return UINT32_MAX;
    rule_b *r = &ps->rules[ps->n_rules];
    *r = (rule_b){.name = ember_malloc(n + 1)};
    if (!r->name) {
        fail_at(ps, ps->p, "out of memory");
        return UINT32_MAX;
    }
    memcpy(r->name, name, n);
    r->name[n] = '\0';
    return ps->n_rules++;
}

/* A new rule named after parent ("parent_N"), defined by the caller. */
static uint32_t rule_generated(parser *ps, uint32_t parent)
{
    char name[300];
    int n = snprintf(name, sizeof name, "%.200s_%u", ps->rules[parent].name, ps->n_rules);
    uint32_t r = rule_named(ps, name, (size_t)n);
    if (r != UINT32_MAX) ps->rules[r].defined = true;
    return r;
}

/* ---- characters and classes ------------------------------------------------------------ */

static uint32_t add_class(parser *ps, const uint32_t *pairs, uint32_t n_pairs, bool negated)
{
    if (!grow(ps, (void **)&ps->classes, &ps->cap_classes, ps->n_classes + 1, sizeof *ps->classes) ||
        !grow(ps, (void **)&ps->ranges, &ps->cap_ranges, ps->n_ranges + 2 * n_pairs, sizeof *ps->ranges))
        return 0;
    if (n_pairs) memcpy(ps->ranges + ps->n_ranges, pairs, sizeof(uint32_t) * 2 * n_pairs);
    ps->classes[ps->n_classes] = (ember_gclass){ps->n_ranges / 2, n_pairs, negated};
    ps->n_ranges += 2 * n_pairs;
    return ps->n_classes++;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One character of a literal or class at ps->p (an escape or a UTF-8 character). */
static uint32_t read_char(parser *ps)
{
    const char *at = ps->p;
    if (ps->p >= ps->end) {
        fail_at(ps, at, "unexpected end of the grammar");
        return 0;
    }
    if (*ps->p != '\\') {
        size_t len;
        uint32_t cp;
        if (ember_utf8_decode((const unsigned char *)ps->p, (size_t)(ps->end - ps->p), &len, &cp) != EMBER_UTF8_OK) {
            fail_at(ps, at, "not UTF-8");
            return 0;
        }
        ps->p += len;
        return cp;
    }
    ps->p++;
    char e = ps->p < ps->end ? *ps->p++ : '\0';
    static const char plain[] = "nrt\\\"[]-^/", value[] = "\n\r\t\\\"[]-^/";
    const char *k = e ? strchr(plain, e) : NULL;
    if (k) return (unsigned char)value[k - plain];
    int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (!digits) {
        fail_at(ps, at, "unknown escape '\\%c'", e ? e : ' ');
        return 0;
    }
    uint32_t cp = 0;
    for (int i = 0; i < digits; i++, ps->p++) {
        int d = ps->p < ps->end ? hex_digit(*ps->p) : -1;
        if (d < 0) {
            fail_at(ps, at, "'\\%c' needs %d hex digits", e, digits);
            return 0;
        }
        cp = cp << 4 | (uint32_t)d;
    }
    if (cp > 0x10FFFF) fail_at(ps, at, "U+%X is past Unicode's last code point", cp);
    return cp;
}

/* "..." at ps->p: a class of one character per character. */
static void parse_literal(parser *ps, uint32_t rule)
{
    const char *at = ps->p++;
    while (!ps->failed && ps->p < ps->end && *ps->p != '"' && *ps->p != '\n') {
        uint32_t c = read_char(ps), pair[2] = {c, c};
        push(ps, rule, GE_CLASS, add_class(ps, pair, 1, false));
    }
    if (!ps->failed && (ps->p >= ps->end || *ps->p != '"')) return fail_at(ps, at, "a string literal is not closed");
    ps->p++;
}

static int cmp_pair(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* [...] or [^...] at ps->p: its ranges sorted and merged. */
static void parse_class(parser *ps, uint32_t rule)
{
    const char *at = ps->p++;
    bool negated = ps->p < ps->end && *ps->p == '^';
    ps->p += negated;
    uint32_t *pairs = NULL, n = 0, cap = 0;
    while (!ps->failed && ps->p < ps->end && *ps->p != ']') {
        if (*ps->p == '\n') break;
        uint32_t lo = read_char(ps), hi = lo;
        if (ps->p + 1 < ps->end && *ps->p == '-' && ps->p[1] != ']') {
            ps->p++;
            hi = read_char(ps);
            if (hi < lo) fail_at(ps, at, "the range U+%X-U+%X runs backwards", lo, hi);
        }
        if (grow(ps, (void **)&pairs, &cap, 2 * n + 2, sizeof *pairs)) pairs[2 * n] = lo, pairs[2 * n + 1] = hi, n++;
    }
    if (!ps->failed && (ps->p >= ps->end || *ps->p != ']')) fail_at(ps, at, "a character class is not closed");
    if (!ps->failed && n == 0 && !negated) fail_at(ps, at, "an empty character class matches nothing");
    if (!ps->failed) {
        ps->p++;
        qsort(pairs, n, 2 * sizeof *pairs, cmp_pair);
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (m && pairs[2 * i] <= pairs[2 * m - 1] + 1) {
                if (pairs[2 * i + 1] > pairs[2 * m - 1]) pairs[2 * m - 1] = pairs[2 * i + 1];
            } else {
                pairs[2 * m] = pairs[2 * i], pairs[2 * m + 1] = pairs[2 * i + 1], m++;
            }
        }
        push(ps, rule, GE_CLASS, add_class(ps, pairs, m, negated));
    }
    ember_free(pairs);
}

/* ---- rules, sequences and repetitions ---------------------------------------------------- */

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Skips blanks and # comments, and newlines when newlines is set. */
static void skip_space(parser *ps, bool newlines)
{
    while (ps->p < ps->end) {
        char c = *ps->p;
        if (c == '#') {
            while (ps->p < ps->end && *ps->p != '\n') ps->p++;
        } else if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
            ps->p++;
        } else {
            break;
        }
    }
}

static void parse_alternates(parser *ps, uint32_t rule, int depth);

/* Moves body[from ..] of rule into a rule of its own and returns it (a lone reference
 * is returned as it is). */
static uint32_t split_off(parser *ps, uint32_t rule, uint32_t from)
{
    elemvec *b = &ps->rules[rule].body;
    if (b->n == from + 1 && b->v[from].kind == GE_REF) {
        b->n = from;
        return b->v[from].value;
    }
    uint32_t x = rule_generated(ps, rule);
    if (x == UINT32_MAX) return 0;
    b = &ps->rules[rule].body; /* rule_generated may have moved the rules */
    for (uint32_t i = from; i < b->n && !ps->failed; i++) push(ps, x, b->v[i].kind, b->v[i].value);
    push(ps, x, GE_END, 0);
    ps->rules[rule].body.n = from;
    return x;
}

/* A rule R ::= x R | empty (unbounded) or R ::= x next | empty. */
static uint32_t optional_rule(parser *ps, uint32_t parent, uint32_t x, bool loop, uint32_t next)
{
    uint32_t r = rule_generated(ps, parent);
    if (r == UINT32_MAX) return 0;
    push(ps, r, GE_REF, x);
    if (loop) push(ps, r, GE_REF, r);
    else if (next != UINT32_MAX) push(ps, r, GE_REF, next);
    push(ps, r, GE_ALT, 0);
    push(ps, r, GE_END, 0);
    return r;
}

/* Applies x*, x+, x?, x{m}, x{m,}, x{m,n} at ps->p to body[from ..] of rule. */
static void parse_repeat(parser *ps, uint32_t rule, uint32_t from)
{
    const char *at = ps->p;
    char op = *ps->p++;
    unsigned long lo = 0, hi = 0;
    bool unbounded = op == '*' || op == '+';
    if (op == '+') lo = 1;
    if (op == '?') hi = 1;
    if (op == '{') {
        char *q;
        lo = strtoul(ps->p, &q, 10);
        bool ok = q > ps->p;
        ps->p = q;
        hi = lo;
        if (ok && ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            unbounded = ps->p < ps->end && *ps->p == '}';
            if (!unbounded) {
                hi = strtoul(ps->p, &q, 10);
                ok = q > ps->p;
                ps->p = q;
            }
        }
        if (!ok || ps->p >= ps->end || *ps->p != '}') return fail_at(ps, at, "expected {m}, {m,} or {m,n}");
        ps->p++;
        if (lo > MAX_REPEAT || (!unbounded && hi > MAX_REPEAT))
            return fail_at(ps, at, "a repetition count above %d", MAX_REPEAT);
        if (!unbounded && hi < lo) return fail_at(ps, at, "{%lu,%lu}: the maximum is below the minimum", lo, hi);
    }
    if (ps->rules[rule].body.n == from) return fail_at(ps, at, "'%c' follows nothing", op);
    uint32_t x = split_off(ps, rule, from);
    for (unsigned long i = 0; i < lo && !ps->failed; i++) push(ps, rule, GE_REF, x);
    if (unbounded) {
        push(ps, rule, GE_REF, optional_rule(ps, rule, x, true, 0));
    } else if (hi > lo) {
        uint32_t next = UINT32_MAX; /* x (x (x)?)? ...: hi - lo nested optional rules */
        for (unsigned long i = lo; i < hi && !ps->failed; i++) next = optional_rule(ps, rule, x, false, next);
        push(ps, rule, GE_REF, next);
    }
}

/* Elements until '|', ')', the end, or (at depth 0) the end of the line. */
static void parse_sequence(parser *ps, uint32_t rule, int depth)
{
    for (;;) {
        skip_space(ps, depth > 0);
        if (ps->failed || ps->p >= ps->end) return;
        char c = *ps->p;
        uint32_t from = ps->rules[rule].body.n;
        if (c == '|' || c == ')' || c == '\n') return;
        if (c == '"') {
            parse_literal(ps, rule);
        } else if (c == '[') {
            parse_class(ps, rule);
        } else if (c == '.') {
            ps->p++;
            push(ps, rule, GE_CLASS, add_class(ps, NULL, 0, true));
        } else if (c == '(') {
            const char *at = ps->p++;
            uint32_t g = rule_generated(ps, rule);
            if (g == UINT32_MAX) return;
            parse_alternates(ps, g, depth + 1);
            if (!ps->failed && (ps->p >= ps->end || *ps->p != ')')) return fail_at(ps, at, "a group is not closed");
            ps->p++;
            push(ps, rule, GE_REF, g);
        } else if (name_char(c)) {
            const char *name = ps->p;
            while (ps->p < ps->end && name_char(*ps->p)) ps->p++;
            uint32_t r = rule_named(ps, name, (size_t)(ps->p - name));
            if (r == UINT32_MAX) return;
            if (!ps->rules[r].first_use) ps->rules[r].first_use = name;
            push(ps, rule, GE_REF, r);
        } else {
            return fail_at(ps, ps->p, "unexpected '%c'", c);
        }
        while (!ps->failed && ps->p < ps->end && strchr("*+?{", *ps->p)) parse_repeat(ps, rule, from);
    }
}

/* sequence ('|' sequence)*: each alternative ends with GE_ALT, the last with GE_END. At
 * depth 0 a rule ends with its line unless the next line goes on with '|'. */
static void parse_alternates(parser *ps, uint32_t rule, int depth)
{
    for (;;) {
        parse_sequence(ps, rule, depth);
        if (ps->failed) return;
        const char *save = ps->p;
        skip_space(ps, true);
        if (ps->p < ps->end && *ps->p == '|') {
            ps->p++;
            skip_space(ps, true);
            push(ps, rule, GE_ALT, 0);
            continue;
        }
        if (depth == 0) ps->p = save;
        push(ps, rule, GE_END, 0);
        return;
    }
}

static void parse_rule(parser *ps)
{
    const char *name = ps->p;
    while (ps->p < ps->end && name_char(*ps->p)) ps->p++;
    if (ps->p == name) return fail_at(ps, name, "expected a rule name");
    uint32_t r = rule_named(ps, name, (size_t)(ps->p - name));
    if (r == UINT32_MAX) return;
    if (ps->rules[r].defined) return fail_at(ps, name, "rule '%s' is defined twice", ps->rules[r].name);
    ps->rules[r].defined = true;
    skip_space(ps, false);
    if (ps->end - ps->p < 3 || memcmp(ps->p, "::=", 3) != 0) return fail_at(ps, ps->p, "expected '::='");
    ps->p += 3;
    skip_space(ps, true);
    parse_alternates(ps, r, 0);
    skip_space(ps, false);
    if (!ps->failed && ps->p < ps->end && *ps->p != '\n') fail_at(ps, ps->p, "unexpected '%c'", *ps->p);
}

/* ---- checks ------------------------------------------------------------------------------ */

/* Whether each rule can match the empty string (a fixed point over the alternatives). */
static bool *nullable_rules(const parser *ps)
{
    bool *null = ember_calloc(ps->n_rules ? ps->n_rules : 1, sizeof *null);
    for (bool changed = true; null && changed;) {
        changed = false;
        for (uint32_t r = 0; r < ps->n_rules; r++) {
            const elemvec *b = &ps->rules[r].body;
            bool all = true;
            for (uint32_t i = 0; i < b->n && !null[r]; i++) {
                const ember_gelem *e = &b->v[i];
                if (e->kind == GE_ALT || e->kind == GE_END) {
                    if (all) null[r] = changed = true;
                    all = true;
                } else {
                    all = all && e->kind == GE_REF && null[e->value];
                }
            }
        }
    }
    return null;
}

/* Depth-first search for a rule that reaches itself before consuming a character. */
static bool left_cycle(parser *ps, const bool *null, uint8_t *state, uint32_t r)
{
    if (state[r] == 1) {
        fail_at(ps, ps->rules[r].first_use ? ps->rules[r].first_use : ps->end,
                "rule '%s' is left-recursive (it can reach itself before matching a character)", ps->rules[r].name);
        return true;
    }
    if (state[r] == 2) return false;
    state[r] = 1;
    const elemvec *b = &ps->rules[r].body;
    bool lead = true; /* everything before this element of the alternative can be empty */
    for (uint32_t i = 0; i < b->n; i++) {
        const ember_gelem *e = &b->v[i];
        if (e->kind == GE_ALT || e->kind == GE_END) {
            lead = true;
        } else if (lead) {
            if (e->kind == GE_REF && left_cycle(ps, null, state, e->value)) return true;
            lead = e->kind == GE_REF && null[e->value];
        }
    }
    state[r] = 2;
    return false;
}

static void check(parser *ps)
{
    for (uint32_t r = 0; r < ps->n_rules && !ps->failed; r++)
        if (!ps->rules[r].defined) fail_at(ps, ps->rules[r].first_use, "rule '%s' is not defined", ps->rules[r].name);
    bool *null = ps->failed ? NULL : nullable_rules(ps);
    uint8_t *state = null ? ember_calloc(ps->n_rules, 1) : NULL;
    for (uint32_t r = 0; state && r < ps->n_rules && !left_cycle(ps, null, state, r); r++) {}
    if (!ps->failed && !state) {
        ps->status = ember_fail(ps->err, EMBER_ERR_OUT_OF_MEMORY, "grammar: out of memory");
        ps->failed = true;
    }
    ember_free(null);
    ember_free(state);
}

/* ---- the result -------------------------------------------------------------------------- */

static ember_grammar *flatten(parser *ps, uint32_t root)
{
    ember_grammar *g = ember_calloc(1, sizeof *g);
    uint32_t n = 0;
    for (uint32_t r = 0; r < ps->n_rules; r++) n += ps->rules[r].body.n;
    if (!g || !(g->elems = ember_calloc(n, sizeof *g->elems)) ||
        !(g->rule_start = ember_calloc(ps->n_rules, sizeof *g->rule_start)) ||
        !(g->rule_names = ember_calloc(ps->n_rules, sizeof *g->rule_names))) {
        ember_grammar_free(g);
        return NULL;
    }
    for (uint32_t r = 0; r < ps->n_rules; r++) {
        g->rule_start[r] = g->n_elems;
        memcpy(g->elems + g->n_elems, ps->rules[r].body.v, sizeof(ember_gelem) * ps->rules[r].body.n);
        g->n_elems += ps->rules[r].body.n;
        g->rule_names[r] = ps->rules[r].name;
        ps->rules[r].name = NULL;
    }
    g->n_rules = ps->n_rules;
    g->ranges = ps->ranges, ps->ranges = NULL;
    g->classes = ps->classes, ps->classes = NULL;
    g->n_classes = ps->n_classes;
    g->root = root;
    for (uint32_t c = 0; c < g->n_classes; c++) {
        ember_gclass *k = &g->classes[c];
        k->ascii[0] = k->ascii[1] = 0;
        for (uint32_t cp = 0; cp < 128; cp++)
            if (ember_grammar_class_meets(g, c, cp, cp)) k->ascii[cp / 64] |= 1ull << (cp % 64);
    }
    return g;
}

ember_status ember_grammar_parse(const char *text, size_t len, const char *root, ember_grammar **out,
                                 ember_err *err)
{
    *out = NULL;
    parser ps = {.s = text, .p = text, .end = text + len, .err = err};
    skip_space(&ps, true);
    while (!ps.failed && ps.p < ps.end) {
        parse_rule(&ps);
        skip_space(&ps, true);
    }
    const char *root_name = root ? root : "root";
    uint32_t r = UINT32_MAX;
    for (uint32_t i = 0; i < ps.n_rules && !ps.failed; i++)
        if (strcmp(ps.rules[i].name, root_name) == 0 && ps.rules[i].defined) r = i;
    if (!ps.failed && r == UINT32_MAX) {
        ps.status = ember_fail(err, EMBER_ERR_INVALID_ARG, "grammar: no rule named '%s' to start from", root_name);
        ps.failed = true;
    }
    if (!ps.failed) check(&ps);
    if (!ps.failed && !(*out = flatten(&ps, r))) {
        ps.status = ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "grammar: out of memory");
        ps.failed = true;
    }
    for (uint32_t i = 0; i < ps.n_rules; i++) {
        ember_free(ps.rules[i].name);
        ember_free(ps.rules[i].body.v);
    }
    ember_free(ps.rules);
    ember_free(ps.ranges);
    ember_free(ps.classes);
    return ps.failed ? ps.status : EMBER_OK;
}

void ember_grammar_free(ember_grammar *g)
{
    if (!g) return;
    for (uint32_t r = 0; g->rule_names && r < g->n_rules; r++) ember_free(g->rule_names[r]);
    ember_free(g->rule_names);
    ember_free(g->elems);
    ember_free(g->rule_start);
    ember_free(g->ranges);
    ember_free(g->classes);
    ember_free(g);
}

/* ---- classes ----------------------------------------------------------------------------- */

/* Whether n sorted ranges p meet lo..hi, and whether they cover all of it. */
static void ranges_on(const uint32_t *p, uint32_t n, uint32_t lo, uint32_t hi, bool *meet, bool *cover)
{
    uint32_t next = lo;
    *meet = *cover = false;
    for (uint32_t i = 0; i < n; i++) {
        if (p[2 * i + 1] < lo || p[2 * i] > hi) continue;
        *meet = true;
        if (p[2 * i] > next) return;
        next = p[2 * i + 1] + 1;
        if (next > hi || next == 0) {
            *cover = true;
            return;
        }
    }
}

bool ember_grammar_class_meets(const ember_grammar *g, uint32_t c, uint32_t lo, uint32_t hi)
{
    const ember_gclass *k = &g->classes[c];
    bool meet, cover;
    ranges_on(g->ranges + 2 * k->first, k->n, lo, hi, &meet, &cover);
    return k->negated ? !cover : meet;
}

bool ember_grammar_class_covers(const ember_grammar *g, uint32_t c, uint32_t lo, uint32_t hi)
{
    const ember_gclass *k = &g->classes[c];
    bool meet, cover;
    ranges_on(g->ranges + 2 * k->first, k->n, lo, hi, &meet, &cover);
    return k->negated ? !meet : cover;
}

bool ember_grammar_class_has(const ember_grammar *g, uint32_t c, uint32_t cp)
{
    if (cp < 128) return g->classes[c].ascii[cp / 64] >> (cp % 64) & 1;
    return ember_grammar_class_meets(g, c, cp, cp);
}
