/* regex.c — recursive descent over the pattern, writing GBNF as it goes: regular
 * expressions and GBNF share alternation, grouping and quantifiers, so only characters
 * need translating (into sets of code points, written as JSON writes them:
 * json_text.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/utf8.h"
#include "json_text.h"
#include "regex.h"

#define MAX_RANGES 64
#define MAX_COUNT 1000

/* A set of code points: sorted, disjoint ranges after norm(). */
typedef struct cset {
    uint32_t r[2 * MAX_RANGES];
    uint32_t n;
} cset;

typedef struct rx {
    const char *s;
    size_t n, at;
    ember_sbuf *out;
    ember_err *err;
    bool failed;
} rx;

static bool fail(rx *x, const char *why)
{
    if (!x->failed)
        ember_fail(x->err, EMBER_ERR_INVALID_ARG, "pattern \"%.*s\", at %zu: %s", (int)x->n, x->s, x->at + 1, why);
    x->failed = true;
    return false;
}

static bool add(rx *x, cset *c, uint32_t lo, uint32_t hi)
{
    if (c->n == MAX_RANGES) return fail(x, "a character class with too many ranges");
    c->r[2 * c->n] = lo, c->r[2 * c->n + 1] = hi, c->n++;
    return true;
}

static int by_lo(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorts and merges the ranges, and takes the surrogates out (no text holds them). */
static void norm(cset *c)
{
    qsort(c->r, c->n, 2 * sizeof *c->r, by_lo);
    cset o = {.n = 0};
    for (uint32_t i = 0; i < c->n; i++) {
        uint32_t lo = c->r[2 * i], hi = c->r[2 * i + 1];
        if (o.n && lo <= o.r[2 * o.n - 1] + 1) {
            if (hi > o.r[2 * o.n - 1]) o.r[2 * o.n - 1] = hi;
        } else {
            o.r[2 * o.n] = lo, o.r[2 * o.n + 1] = hi, o.n++;
        }
    }
    *c = (cset){.n = 0};
    for (uint32_t i = 0; i < o.n; i++) { /* cut D800..DFFF out */
        uint32_t lo = o.r[2 * i], hi = o.r[2 * i + 1];
        if (hi < 0xD800 || lo > 0xDFFF) c->r[2 * c->n] = lo, c->r[2 * c->n + 1] = hi, c->n++;
        else {
            if (lo < 0xD800) c->r[2 * c->n] = lo, c->r[2 * c->n + 1] = 0xD7FF, c->n++;
            if (hi > 0xDFFF) c->r[2 * c->n] = 0xE000, c->r[2 * c->n + 1] = hi, c->n++;
        }
    }
}

static void negate(cset *c)
{
    norm(c);
    cset o = {.n = 0};
    uint32_t next = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        if (c->r[2 * i] > next) o.r[2 * o.n] = next, o.r[2 * o.n + 1] = c->r[2 * i] - 1, o.n++;
        next = c->r[2 * i + 1] + 1;
    }
    if (next <= 0x10FFFF) o.r[2 * o.n] = next, o.r[2 * o.n + 1] = 0x10FFFF, o.n++;
    *c = o;
    norm(c);
}

/* \d \w \s (and \D \W \S: negated) into c; false when k is none of them. */
static bool class_escape(rx *x, char k, cset *c)
{
    static const uint32_t space[] = {0x09, 0x0D, 0x20, 0x20, 0xA0, 0xA0, 0x1680, 0x1680, 0x2000, 0x200A,
                                     0x2028, 0x2029, 0x202F, 0x202F, 0x205F, 0x205F, 0x3000, 0x3000, 0xFEFF, 0xFEFF};
    cset t = {.n = 0};
    switch (k | 0x20) {
    case 'd': add(x, &t, '0', '9'); break;
    case 'w': add(x, &t, '0', '9'), add(x, &t, 'A', 'Z'), add(x, &t, '_', '_'), add(x, &t, 'a', 'z'); break;
    case 's':
        for (size_t i = 0; i < sizeof space / sizeof *space; i += 2) add(x, &t, space[i], space[i + 1]);
        break;
    default: return false;
    }
    if (k >= 'A' && k <= 'Z') negate(&t);
    for (uint32_t i = 0; i < t.n; i++) add(x, c, t.r[2 * i], t.r[2 * i + 1]);
    return true;
}

static int hex_digits(rx *x, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++, x->at++) {
        char c = x->at < x->n ? x->s[x->at] : 0;
        int d = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* The code point of an escape after its backslash (not a class escape), or -1 with a
 * failure. in_class: \b is a backspace there, a word boundary outside. */
static long char_escape(rx *x, bool in_class)
{
    char c = x->s[x->at++];
    switch (c) {
    case 't': return '\t';
    case 'n': return '\n';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'v': return '\v';
    case '0': return 0;
    case 'x': {
        int v = hex_digits(x, 2);
        return v < 0 ? (fail(x, "\\x needs 2 hex digits"), -1) : v;
    }
    case 'u': {
        int v = hex_digits(x, 4);
        if (v < 0) return fail(x, "\\u needs 4 hex digits"), -1;
        if (v >= 0xD800 && v <= 0xDBFF && x->n - x->at >= 6 && x->s[x->at] == '\\' && x->s[x->at + 1] == 'u') {
            x->at += 2;
            int lo = hex_digits(x, 4);
            if (lo >= 0xDC00 && lo <= 0xDFFF) return 0x10000 + ((long)(v - 0xD800) << 10) + (lo - 0xDC00);
        }
        return v >= 0xD800 && v <= 0xDFFF ? (fail(x, "a lone surrogate"), -1) : v;
    }
    case 'b':
        if (in_class) return '\b';
        return fail(x, "word boundaries (\\b) are not supported"), -1;
    case 'B': return fail(x, "word boundaries (\\B) are not supported"), -1;
    case 'p':
    case 'P': return fail(x, "Unicode property escapes are not supported"), -1;
    case 'c': return fail(x, "control escapes (\\c) are not supported"), -1;
    case 'k': return fail(x, "named backreferences are not supported"), -1;
    default:
        if (c >= '1' && c <= '9') return fail(x, "backreferences are not supported"), -1;
        if (strchr("^$\\.*+?()[]{}|/-", c)) return (unsigned char)c;
        return fail(x, "an unknown escape"), -1;
    }
}

/* The code point at x->at (a UTF-8 character), advanced past it. */
static long next_char(rx *x)
{
    size_t len;
    uint32_t cp;
    if (ember_utf8_decode((const unsigned char *)x->s + x->at, x->n - x->at, &len, &cp) != EMBER_UTF8_OK)
        return fail(x, "ill-formed UTF-8"), -1;
    x->at += len;
    return cp;
}

/* One member of a class (a character or an escape) at x->at: a set, or *one the
 * character when it may start a range. */
static bool class_atom(rx *x, cset *c, long *one)
{
    *one = -1;
    if (x->s[x->at] == '\\') {
        x->at++;
        if (x->at >= x->n) return fail(x, "a pattern ends with a backslash");
        if (class_escape(x, x->s[x->at], c)) return x->at++, true;
        *one = char_escape(x, true);
        return *one >= 0;
    }
    *one = next_char(x);
    return *one >= 0;
}

static bool class_body(rx *x, cset *c)
{
    bool neg = x->at < x->n && x->s[x->at] == '^';
    x->at += neg;
    while (x->at < x->n && x->s[x->at] != ']') {
        long lo, hi;
        if (!class_atom(x, c, &lo)) return false;
        if (lo < 0) continue; /* a class escape: no range */
        if (x->n - x->at >= 2 && x->s[x->at] == '-' && x->s[x->at + 1] != ']') {
            x->at++;
            if (!class_atom(x, c, &hi)) return false;
            if (hi < 0) return fail(x, "a range ends in a class escape");
            if (hi < lo) return fail(x, "a range runs backwards");
            if (!add(x, c, (uint32_t)lo, (uint32_t)hi)) return false;
        } else if (!add(x, c, (uint32_t)lo, (uint32_t)lo)) {
            return false;
        }
    }
    if (x->at >= x->n) return fail(x, "a character class is not closed");
    x->at++;
    if (neg) negate(c);
    else norm(c);
    return true;
}

static void emit_set(rx *x, cset *c)
{
    norm(c);
    if (c->n) ember_jtext_chars(x->out, c->r, c->n);
    else ember_sbuf_puts(x->out, "[^\\x00-\\U0010FFFF]"); /* matches nothing, as [] does */
}

static bool alternation(rx *x, int depth);

/* A group after its '(': the kind, then an alternation up to ')'. */
static bool group(rx *x, int depth)
{
    if (x->n - x->at >= 2 && x->s[x->at] == '?') {
        char k = x->s[x->at + 1];
        if (k == ':') x->at += 2;
        else if (k == '<' && x->n - x->at >= 3 && x->s[x->at + 2] != '=' && x->s[x->at + 2] != '!') {
            const char *end = memchr(x->s + x->at, '>', x->n - x->at);
            if (!end) return fail(x, "a group name is not closed");
            x->at = (size_t)(end - x->s) + 1;
        } else {
            return fail(x, "lookaround ((?=, (?!, (?<=, (?<!) is not supported");
        }
    }
    ember_sbuf_puts(x->out, "(");
    if (!alternation(x, depth + 1)) return false;
    if (x->at >= x->n || x->s[x->at] != ')') return fail(x, "a group is not closed");
    x->at++;
    ember_sbuf_puts(x->out, ")");
    return true;
}

static bool count(rx *x, long *v)
{
    if (x->at >= x->n || x->s[x->at] < '0' || x->s[x->at] > '9') return false;
    *v = 0;
    while (x->at < x->n && x->s[x->at] >= '0' && x->s[x->at] <= '9') {
        *v = *v * 10 + (x->s[x->at++] - '0');
        if (*v > MAX_COUNT) return fail(x, "a repetition count above 1000");
    }
    return true;
}

/* A quantifier after an atom, if any; lazy ones match the same strings. */
static bool quantifier(rx *x)
{
    if (x->at >= x->n) return true;
    char c = x->s[x->at];
    if (c == '*' || c == '+' || c == '?') {
        x->at++;
        ember_sbuf_printf(x->out, "%c", c);
    } else if (c == '{') {
        size_t start = x->at++;
        long lo, hi = -1;
        if (!count(x, &lo)) return x->failed ? false : (x->at = start, true); /* a literal '{' follows */
        if (x->at < x->n && x->s[x->at] == ',') {
            x->at++;
            if (!count(x, &hi)) {
                if (x->failed) return false;
                hi = -2; /* {m,} */
            }
        }
        if (x->at >= x->n || x->s[x->at] != '}') return fail(x, "a repetition is not closed");
        x->at++;
        if (hi >= 0 && hi < lo) return fail(x, "{m,n} with n below m");
        if (hi == -1) ember_sbuf_printf(x->out, "{%ld}", lo);
        else if (hi == -2) ember_sbuf_printf(x->out, "{%ld,}", lo);
        else ember_sbuf_printf(x->out, "{%ld,%ld}", lo, hi);
    } else {
        return true;
    }
    if (x->at < x->n && x->s[x->at] == '?') x->at++; /* lazy */
    if (x->at < x->n && strchr("*+?{", x->s[x->at]) && x->s[x->at] != '{')
        return fail(x, "a quantifier after a quantifier");
    return true;
}

/* One atom and its quantifier. */
static bool item(rx *x, int depth)
{
    char c = x->s[x->at];
    cset set = {.n = 0};
    ember_sbuf_puts(x->out, " ");
    if (c == '(') {
        x->at++;
        if (!group(x, depth)) return false;
    } else if (c == '[') {
        x->at++;
        if (!class_body(x, &set)) return false;
        emit_set(x, &set);
    } else if (c == '.') {
        x->at++;
        /* everything but the line terminators \n \r U+2028 U+2029 */
        add(x, &set, 0, 0x09), add(x, &set, 0x0B, 0x0C), add(x, &set, 0x0E, 0x2027), add(x, &set, 0x202A, 0x10FFFF);
        emit_set(x, &set);
    } else if (c == '\\') {
        x->at++;
        if (x->at >= x->n) return fail(x, "a pattern ends with a backslash");
        long cp = class_escape(x, x->s[x->at], &set) ? (x->at++, -2) : char_escape(x, false);
        if (cp == -1) return false;
        if (cp >= 0) add(x, &set, (uint32_t)cp, (uint32_t)cp);
        emit_set(x, &set);
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (c != '{') return fail(x, "a quantifier with nothing before it");
        x->at++;
        add(x, &set, '{', '{');
        emit_set(x, &set);
    } else if (c == '^' || c == '$') {
        return fail(x, "an anchor (^ or $) inside a pattern: only at the ends of a branch");
    } else {
        long cp = next_char(x);
        if (cp < 0) return false;
        add(x, &set, (uint32_t)cp, (uint32_t)cp);
        emit_set(x, &set);
    }
    return quantifier(x);
}

/* A branch up to '|', ')' or the end; at the top level with its anchors, and with any
 * text before and after where it has none. */
static bool branch(rx *x, int depth)
{
    bool start = depth == 0 && x->at < x->n && x->s[x->at] == '^', end = false;
    x->at += start;
    cset any = {.r = {0, 0xD7FF, 0xE000, 0x10FFFF}, .n = 2};
    ember_sbuf_puts(x->out, "(");
    if (depth == 0 && !start) ember_sbuf_puts(x->out, " "), ember_jtext_chars(x->out, any.r, any.n), ember_sbuf_puts(x->out, "*");
    while (x->at < x->n && x->s[x->at] != '|' && x->s[x->at] != ')') {
        if (depth == 0 && x->s[x->at] == '$' && (x->at + 1 == x->n || x->s[x->at + 1] == '|')) {
            x->at++, end = true;
            break;
        }
        if (!item(x, depth)) return false;
    }
    if (depth == 0 && !end) ember_sbuf_puts(x->out, " "), ember_jtext_chars(x->out, any.r, any.n), ember_sbuf_puts(x->out, "*");
    ember_sbuf_puts(x->out, " )");
    return true;
}

static bool alternation(rx *x, int depth)
{
    if (depth > 64) return fail(x, "groups nested more than 64 deep");
    for (bool first = true;; first = false) {
        if (!first) ember_sbuf_puts(x->out, " |");
        if (!branch(x, depth)) return false;
        if (x->at >= x->n || x->s[x->at] != '|') return true;
        x->at++;
    }
}

ember_status ember_regex_to_gbnf(const char *pattern, size_t len, ember_sbuf *out, ember_err *err)
{
    rx x = {.s = pattern, .n = len, .out = out, .err = err};
    ember_sbuf_puts(out, "(");
    if (alternation(&x, 0) && x.at < x.n) fail(&x, "an unmatched ')'");
    ember_sbuf_puts(out, ")");
    return x.failed ? EMBER_ERR_INVALID_ARG : EMBER_OK;
}
