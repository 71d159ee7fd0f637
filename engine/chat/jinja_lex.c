/* jinja_lex.c — preprocessing and tokens, a transcription of @huggingface/jinja's
 * lexer.ts so that whitespace comes out byte for byte as Hugging Face's does (see
 * jinja_lex.h). The preprocessing passes delete characters only, so each keeps a map
 * from its output back to the original source, for line and column numbers. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "engine/tokenizer/utf8.h"
#include "jinja_lex.h"
#include "jinja_value.h"

/* ---- text with a map back to the source ---------------------------------------------- */

typedef struct text {
    char *s;
    uint32_t *at;  /* at[i]: where s[i] was in the original source */
    size_t n, cap;
    bool oom;
} text;

static void put(text *t, char ch, uint32_t at)
{
    if (t->oom) return;
    if (t->n + 1 >= t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        char *s = ember_realloc(t->s, cap);
        if (s) t->s = s;
        uint32_t *a = s ? ember_realloc(t->at, cap * sizeof *a) : NULL;
        if (!s || !a) {
            t->oom = true;
            return;
        }
        t->at = a, t->cap = cap;
    }
    t->s[t->n] = ch;
    t->at[t->n++] = at;
    t->s[t->n] = 0;
}

static void text_free(text *t)
{
    ember_free(t->s);
    ember_free(t->at);
    *t = (text){0};
}

/* ---- the preprocessing ------------------------------------------------------------------ */

/* c is one of set's characters (never the NUL that ends set). */
static bool in_set(char c, const char *set) { return c && strchr(set, c); }

static bool line_break_before(const text *in, size_t i)
{
    if (i == 0) return true;
    char c = in->s[i - 1];
    if (c == '\n' || c == '\r') return true;
    /* U+2028 and U+2029 end a line for JavaScript's ^ too */
    return i >= 3 && (unsigned char)in->s[i - 3] == 0xE2 && (unsigned char)in->s[i - 2] == 0x80 &&
           ((unsigned char)c == 0xA8 || (unsigned char)c == 0xA9);
}

/* template.replace(/^[ \t]*({[#%-])/gm, "$1"): blanks before a tag that opens a line. */
static void lstrip_blocks(const text *in, text *out)
{
    for (size_t i = 0; i < in->n;) {
        if (line_break_before(in, i)) {
            size_t j = i;
            while (j < in->n && (in->s[j] == ' ' || in->s[j] == '\t')) j++;
            if (j + 1 < in->n && in->s[j] == '{' && in_set(in->s[j + 1], "#%-")) i = j;
        }
        if (i < in->n) put(out, in->s[i], in->at[i]), i++;
    }
}

/* template.replace(/([#%-]})\n/g, "$1"): the newline after a tag. */
static void trim_blocks(const text *in, text *out)
{
    for (size_t i = 0; i < in->n;) {
        if (i + 2 < in->n && in_set(in->s[i], "#%-") && in->s[i + 1] == '}' && in->s[i + 2] == '\n') {
            put(out, in->s[i], in->at[i]);
            put(out, '}', in->at[i + 1]);
            i += 3;
        } else {
            put(out, in->s[i], in->at[i]), i++;
        }
    }
}

/* The JavaScript whitespace character at s[i..n), its length in bytes, or 0. */
static size_t space_at(const char *s, size_t n, size_t i)
{
    size_t j = i;
    return i < n && ember_jis_space(ember_jutf8_next(s, n, &j)) ? j - i : 0;
}

static size_t skip_spaces(const char *s, size_t n, size_t i)
{
    for (size_t k; (k = space_at(s, n, i)) > 0;) i += k;
    return i;
}

/* Matches /{%(-?)\s*(?:end)?generation\s*(-?)%}/ at s[i]: returns its end, or 0. */
static size_t generation_tag(const char *s, size_t n, size_t i, bool *lstrip, bool *rstrip)
{
    if (i + 2 > n || s[i] != '{' || s[i + 1] != '%') return 0;
    i += 2;
    *lstrip = i < n && s[i] == '-';
    i = skip_spaces(s, n, i + *lstrip);
    if (n - i >= 3 && memcmp(s + i, "end", 3) == 0) i += 3;
    if (n - i < 10 || memcmp(s + i, "generation", 10) != 0) return 0;
    i = skip_spaces(s, n, i + 10);
    *rstrip = i < n && s[i] == '-';
    i += *rstrip;
    if (n - i < 2 || s[i] != '%' || s[i + 1] != '}') return 0;
    return i + 2;
}

/* {% generation %} and {% endgeneration %} removed (they only mark assistant text for
 * training masks), with their own whitespace control. */
static void drop_generation(const text *in, text *out)
{
    size_t kept = 0; /* out->n at the end of the last tag: a later `{%-` strips no further back */
    for (size_t i = 0; i < in->n;) {
        bool l = false, r = false;
        size_t end = in->s[i] == '{' ? generation_tag(in->s, in->n, i, &l, &r) : 0;
        if (!end) {
            put(out, in->s[i], in->at[i]), i++;
            continue;
        }
        while (l && out->n > kept) {
            size_t start = out->n - 1;
            while (start > kept && ((unsigned char)out->s[start] & 0xC0) == 0x80) start--;
            if (space_at(out->s, out->n, start) != out->n - start) break;
            out->n = start;
            out->s[start] = 0;
        }
        size_t ws_end = skip_spaces(in->s, in->n, end);
        for (size_t k = end; !r && k < ws_end; k++) put(out, in->s[k], in->at[k]);
        i = ws_end;
        kept = out->n;
    }
}

static bool preprocess(const char *src, size_t len, text *out)
{
    text a = {0}, b = {0};
    if (len && src[len - 1] == '\n') len--; /* Jinja's keep_trailing_newline=False */
    for (size_t i = 0; i < len; i++) put(&a, src[i], (uint32_t)i);
    lstrip_blocks(&a, &b);
    bool oom = a.oom || b.oom;
    text_free(&a);
    trim_blocks(&b, &a);
    oom |= a.oom;
    text_free(&b);
    drop_generation(&a, out);
    oom |= a.oom;
    text_free(&a);
    if (!out->s) put(out, 0, 0), out->n = 0; /* an empty template is still a buffer */
    return !oom && !out->oom;
}

/* ---- tokens ------------------------------------------------------------------------------- */

typedef struct lexer {
    text src;
    const char *orig;
    size_t orig_len;
    size_t pos;
    int curly;           /* open { of a dict literal inside {{ }}: their }} is not the end */
    ember_jtok *v;
    uint32_t *off;       /* each token's place in the preprocessed text */
    size_t n, cap;
    ember_err *err;
    ember_status status;
    bool failed;
} lexer;

static void line_col(const char *s, size_t upto, uint32_t *line, uint32_t *col)
{
    *line = 1, *col = 1;
    for (size_t i = 0; i < upto; i++) {
        if (s[i] == '\n') *line += 1, *col = 1;
        else if (((unsigned char)s[i] & 0xC0) != 0x80) *col += 1;
    }
}

static bool fail(lexer *x, size_t at, const char *fmt, ...) EMBER_PRINTF(3, 4);
static bool fail(lexer *x, size_t at, const char *fmt, ...)
{
    if (x->failed) return false;
    x->failed = true;
    char why[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    uint32_t line, col;
    line_col(x->orig, at < x->src.n ? x->src.at[at] : x->orig_len, &line, &col);
    x->status = ember_fail(x->err, EMBER_ERR_INVALID_ARG, "jinja: line %u, column %u: %s", line, col, why);
    return false;
}

static ember_jtok *push(lexer *x, ember_jtok_kind kind, const char *s, size_t len, size_t at)
{
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 256;
        ember_jtok *v = ember_realloc(x->v, cap * sizeof *v);
        if (v) x->v = v;
        uint32_t *o = v ? ember_realloc(x->off, cap * sizeof *o) : NULL;
        if (!v || !o) {
            fail(x, at, "out of memory");
            x->status = EMBER_ERR_OUT_OF_MEMORY;
            return NULL;
        }
        x->off = o, x->cap = cap;
    }
    x->v[x->n] = (ember_jtok){kind, s, len, 0, 0};
    x->off[x->n] = (uint32_t)at;
    return &x->v[x->n++];
}

static ember_jtok_kind last_kind(const lexer *x, bool *none)
{
    *none = x->n == 0;
    return x->n ? x->v[x->n - 1].kind : JT_TEXT;
}

/* The whitespace before {%- {{- {#-: trimmed off the text token before it. */
static void strip_trailing(lexer *x)
{
    if (!x->n || x->v[x->n - 1].kind != JT_TEXT) return;
    ember_jtok *t = &x->v[x->n - 1];
    t->len -= ember_jspace_suffix(t->s, t->len);
    if (t->len == 0) x->n--;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_word(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

/* Text up to the next {{, {% or {#. */
static bool lex_text(lexer *x)
{
    const char *s = x->src.s;
    size_t end = x->pos;
    while (end < x->src.n && !(s[end] == '{' && end + 1 < x->src.n && in_set(s[end + 1], "%{#"))) end++;
    if (end == x->pos) return true;
    if (!push(x, JT_TEXT, s + x->pos, end - x->pos, x->pos)) return false;
    x->pos = end;
    return true;
}

static bool lex_comment(lexer *x)
{
    size_t start = x->pos;
    x->pos += 2;
    bool before = x->pos < x->src.n && x->src.s[x->pos] == '-';
    x->pos += before;
    const char *end = NULL;
    for (size_t i = x->pos; i + 1 < x->src.n && !end; i++)
        if (x->src.s[i] == '#' && x->src.s[i + 1] == '}') end = x->src.s + i;
    if (!end) return fail(x, start, "the comment is not closed (#})");
    size_t len = (size_t)(end - (x->src.s + x->pos));
    bool after = len > 0 && x->src.s[x->pos + len - 1] == '-';
    if (before) strip_trailing(x);
    if (!push(x, JT_COMMENT, x->src.s + x->pos, len - after, start)) return false;
    x->pos += len + 2;
    if (after) x->pos = skip_spaces(x->src.s, x->src.n, x->pos);
    return true;
}

/* A string literal's body, decoded in place (never longer than the source). */
static bool lex_string(lexer *x)
{
    static const char from[] = "ntrbfv'\"\\", to[] = "\n\t\r\b\f\v'\"\\";
    char *s = x->src.s, quote = s[x->pos];
    size_t start = x->pos++, w = x->pos, body = w;
    for (;;) {
        if (x->pos >= x->src.n) return fail(x, start, "the string is not closed");
        char ch = s[x->pos];
        if (ch == quote) break;
        x->pos++;
        if (ch != '\\') {
            s[w++] = ch;
            continue;
        }
        if (x->pos >= x->src.n) return fail(x, start, "the string is not closed");
        char e = s[x->pos++];
        const char *k = strchr(from, e);
        if (e && k) {
            s[w++] = to[k - from];
        } else if (e == 'x' || e == 'u') {
            size_t digits = e == 'x' ? 2 : 4;
            uint32_t cp = 0;
            for (size_t i = 0; i < digits; i++) {
                char h = x->pos + i < x->src.n ? s[x->pos + i] : 0;
                int d = is_digit(h) ? h - '0' : (h | 32) >= 'a' && (h | 32) <= 'f' ? (h | 32) - 'a' + 10 : -1;
                if (d < 0) return fail(x, x->pos - 2, "a bad \\%c escape", e);
                cp = cp * 16 + (uint32_t)d;
            }
            x->pos += digits;
            if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD; /* a UTF-16 half alone has no UTF-8 form */
            w += ember_utf8_encode(cp, s + w);
        } else {
            return fail(x, x->pos - 2, "unknown escape \\%c in a string", e ? e : '0');
        }
    }
    x->pos++;
    return push(x, JT_STR, s + body, w - body, start) != NULL;
}

static bool lex_number(lexer *x, size_t start, bool after_dot)
{
    const char *s = x->src.s;
    while (x->pos < x->src.n && is_digit(s[x->pos])) x->pos++;
    if (!after_dot && x->pos + 1 < x->src.n && s[x->pos] == '.' && is_digit(s[x->pos + 1])) {
        x->pos++;
        while (x->pos < x->src.n && is_digit(s[x->pos])) x->pos++;
    }
    if (x->pos >= x->src.n) return fail(x, start, "the template ends inside a tag");
    return push(x, JT_NUM, s + start, x->pos - start, start) != NULL;
}

/* The operator and punctuation table, longest first where one is a prefix of another. */
static const struct {
    const char *text;
    ember_jtok_kind kind;
} PUNCT[] = {
    {"{%", JT_OPEN_STMT}, {"%}", JT_CLOSE_STMT}, {"{{", JT_OPEN_EXPR}, {"}}", JT_CLOSE_EXPR},
    {"(", JT_LPAREN},     {")", JT_RPAREN},      {"{", JT_LBRACE},     {"}", JT_RBRACE},
    {"[", JT_LBRACKET},   {"]", JT_RBRACKET},    {",", JT_COMMA},      {".", JT_DOT},
    {":", JT_COLON},      {"|", JT_PIPE},        {"<=", JT_CMP},       {">=", JT_CMP},
    {"==", JT_CMP},       {"!=", JT_CMP},        {"<", JT_CMP},        {">", JT_CMP},
    {"+", JT_ADD},        {"-", JT_ADD},         {"~", JT_ADD},        {"**", JT_POW},
    {"*", JT_MUL},        {"//", JT_MUL},        {"/", JT_MUL},        {"%", JT_MUL},
    {"=", JT_ASSIGN},
};

static bool lex_punct(lexer *x, bool *matched)
{
    *matched = false;
    for (size_t i = 0; i < sizeof PUNCT / sizeof PUNCT[0]; i++) {
        size_t k = strlen(PUNCT[i].text);
        if (PUNCT[i].kind == JT_CLOSE_EXPR && x->curly > 0) continue;
        if (x->src.n - x->pos < k || memcmp(x->src.s + x->pos, PUNCT[i].text, k) != 0) continue;
        if (!push(x, PUNCT[i].kind, x->src.s + x->pos, k, x->pos)) return false;
        if (PUNCT[i].kind == JT_OPEN_EXPR) x->curly = 0;
        else if (PUNCT[i].kind == JT_LBRACE) x->curly++;
        else if (PUNCT[i].kind == JT_RBRACE) x->curly--;
        x->pos += k;
        *matched = true;
        return true;
    }
    return true;
}

/* A + or - where no operand precedes it: a sign (joined to a number after it) or a unary
 * operator. Returns false on failure; *done when it took the character. */
static bool lex_sign(lexer *x, bool *done)
{
    bool none;
    ember_jtok_kind k = last_kind(x, &none);
    *done = false;
    if (none || k == JT_TEXT) return fail(x, x->pos, "unexpected character '%c'", x->src.s[x->pos]);
    if (k == JT_NAME || k == JT_NUM || k == JT_STR || k == JT_RPAREN || k == JT_RBRACKET) return true;
    size_t start = x->pos++;
    *done = true;
    if (x->pos < x->src.n && is_digit(x->src.s[x->pos])) return lex_number(x, start, false);
    return push(x, JT_UNARY, x->src.s + start, 1, start) != NULL;
}

/* {%- and {{- (the whitespace before them goes), -%} and -}} (the whitespace after). */
static bool lex_strip_marks(lexer *x, bool *done)
{
    const char *s = x->src.s;
    size_t p = x->pos, n = x->src.n;
    *done = false;
    if (p + 2 < n && s[p] == '{' && s[p + 2] == '-' && (s[p + 1] == '%' || s[p + 1] == '{')) {
        strip_trailing(x);
        if (!push(x, s[p + 1] == '%' ? JT_OPEN_STMT : JT_OPEN_EXPR, s + p, 2, p)) return false;
        if (s[p + 1] == '{') x->curly = 0;
        x->pos += 3;
        *done = true;
    }
    return true;
}

static bool lex_close_strip(lexer *x, bool *done)
{
    const char *s = x->src.s;
    size_t p = x->pos, n = x->src.n;
    *done = false;
    if (p + 2 < n && s[p] == '-' && s[p + 2] == '}' && (s[p + 1] == '%' || s[p + 1] == '}')) {
        if (!push(x, s[p + 1] == '%' ? JT_CLOSE_STMT : JT_CLOSE_EXPR, s + p + 1, 2, p)) return false;
        x->pos = skip_spaces(s, n, p + 3);
        *done = true;
    }
    return true;
}

/* One step of the main loop: text, a tag mark, or one token inside a tag. */
static bool lex_one(lexer *x)
{
    bool none, done;
    ember_jtok_kind k = last_kind(x, &none);
    if (none || k == JT_CLOSE_STMT || k == JT_CLOSE_EXPR || k == JT_COMMENT) {
        size_t before = x->n;
        if (!lex_text(x)) return false;
        if (x->n != before) return true;
    }
    const char *s = x->src.s;
    if (s[x->pos] == '{' && x->pos + 1 < x->src.n && s[x->pos + 1] == '#') return lex_comment(x);
    if (!lex_strip_marks(x, &done) || done) return !x->failed;
    size_t ws = skip_spaces(s, x->src.n, x->pos);
    if (ws >= x->src.n) return fail(x, x->pos, "the template ends inside a tag");
    x->pos = ws;
    if (!lex_close_strip(x, &done) || done) return !x->failed;
    char ch = s[x->pos];
    if ((ch == '-' || ch == '+') && (!lex_sign(x, &done) || done)) return !x->failed;
    bool matched;
    if (!lex_punct(x, &matched) || matched) return !x->failed;
    if (ch == '\'' || ch == '"') return lex_string(x);
    if (is_digit(ch)) return lex_number(x, x->pos, x->n && x->v[x->n - 1].kind == JT_DOT);
    if (is_word(ch)) {
        size_t start = x->pos;
        while (x->pos < x->src.n && is_word(s[x->pos])) x->pos++;
        if (x->pos >= x->src.n) return fail(x, start, "the template ends inside a tag");
        return push(x, JT_NAME, s + start, x->pos - start, start) != NULL;
    }
    return fail(x, x->pos, "unexpected character '%c'", ch);
}

ember_status ember_jinja_lex(const char *src, size_t len, ember_jtoks *out, ember_err *err)
{
    *out = (ember_jtoks){0};
    if (len > UINT32_MAX - 1) return ember_fail(err, EMBER_ERR_INVALID_ARG, "jinja: the template is too long");
    lexer x = {.orig = src, .orig_len = len, .err = err};
    if (!preprocess(src, len, &x.src)) {
        text_free(&x.src);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "jinja: out of memory");
    }
    while (x.pos < x.src.n && !x.failed) lex_one(&x);
    /* Line and column of every token, in one walk over the original source. */
    uint32_t line = 1, col = 1;
    size_t at = 0;
    for (size_t i = 0; i < x.n && !x.failed; i++) {
        size_t to = x.off[i] < x.src.n ? x.src.at[x.off[i]] : len;
        for (; at < to; at++) {
            if (src[at] == '\n') line++, col = 1;
            else if (((unsigned char)src[at] & 0xC0) != 0x80) col++;
        }
        x.v[i].line = line, x.v[i].col = col;
    }
    ember_free(x.off);
    ember_free(x.src.at);
    out->v = x.v, out->n = x.n, out->buf = x.src.s;
    return x.failed ? x.status : EMBER_OK;
}

void ember_jinja_toks_free(ember_jtoks *t)
{
    ember_free(t->v);
    ember_free(t->buf);
    *t = (ember_jtoks){0};
}
