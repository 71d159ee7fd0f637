/* pretok_match.c — the pre-tokenizers' regexes (pretokenize_defs.h), matched by hand.
 *
 * A regex engine would try the alternatives of a pattern in order at a position, the
 * first that matches wins, and a greedy run gives characters back only where what follows
 * it needs them. The patterns are simple enough that which alternative wins can be told
 * from the first one or two characters, and the only give-backs are two whitespace rules
 * (space_run), so each matcher is a few tests and one pass over the match. llama.cpp does
 * the same (unicode.cpp); tests/test_pretokenize.c checks these against PCRE2.
 *
 * "Other" below is a character that is neither whitespace nor a letter nor a number: the
 * class [^\s\p{L}\p{N}] of the patterns. */
#include "pretok_match.h"

#include <stdbool.h>
#include <stdint.h>

#include "unicode_class.h"

#define END 0x100u /* the class at the end of the subject: none of the others */
#define L EMBER_UC_LETTER
#define N EMBER_UC_NUMBER
#define S EMBER_UC_SPACE

typedef struct subject {
    const unsigned char *s;
    size_t len;
} subject;

/* The length of the (well-formed) character at s[i]. */
static size_t char_len(unsigned char b)
{
    return b < 0x80 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
}

/* The class bits of the character at i (END at the end), and where the next one starts. */
static unsigned class_at(const subject *t, size_t i, size_t *next)
{
    if (i >= t->len) {
        *next = i;
        return END;
    }
    const unsigned char *p = t->s + i;
    size_t n = char_len(p[0]);
    uint32_t cp = n == 1 ? p[0]
                : n == 2 ? (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f)
                : n == 3 ? (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f)
                : (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12
                  | (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
    *next = i + n;
    return ember_unicode_class(cp);
}

static bool is_other(unsigned c) { return !(c & (L | N | S | END)); }

/* The end of the run of characters from i that have a class in mask, at most max of them. */
static size_t run(const subject *t, size_t i, unsigned mask, size_t max)
{
    size_t next;
    for (size_t k = 0; k < max && (class_at(t, i, &next) & mask); k++)
        i = next;
    return i;
}

/* The end of the run of "other" characters from i. */
static size_t run_other(const subject *t, size_t i)
{
    size_t next;
    while (is_other(class_at(t, i, &next)))
        i = next;
    return i;
}

static bool is_crlf(const subject *t, size_t i)
{
    return i < t->len && (t->s[i] == '\r' || t->s[i] == '\n');
}

/* "[\s]+(?![^\s])|[\s]+" at a whitespace character i: the run, less its last character when
 * a non-space follows and the run has more (that one is left to start the next word, as a
 * space before a word); with crlf, "[\s]*[\r\n]+" first: the run up to its last CR or LF. */
static size_t space_run(const subject *t, size_t i, bool crlf)
{
    size_t e = i, last = i, after_crlf = i, next;
    while (class_at(t, e, &next) & S) {
        last = e;
        if (is_crlf(t, e))
            after_crlf = next;
        e = next;
    }
    if (crlf && after_crlf > i)
        return after_crlf;
    return e == t->len || last == i ? e : last;
}

/* 's 't 're 've 'm 'll 'd, ASCII case folded when nocase. */
static size_t contraction(const subject *t, size_t i, bool nocase)
{
    if (i + 1 >= t->len || t->s[i] != '\'')
        return i;
    unsigned char fold = nocase ? 0x20 : 0, a = t->s[i + 1] | fold;
    unsigned char b = i + 2 < t->len ? t->s[i + 2] | fold : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return i + 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return i + 3;
    return i;
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|[\s]+(?![^\s])|[\s]+
 * After a space, the class of the next character picks the alternative; a space before
 * anything else is whitespace. */
static size_t gpt2(const subject *t, size_t i)
{
    size_t e = contraction(t, i, false), next;
    if (e > i)
        return e;
    size_t j = t->s[i] == ' ' ? i + 1 : i;
    unsigned c = class_at(t, j, &next);
    if (c & L)
        return run(t, j, L, SIZE_MAX);
    if (c & N)
        return run(t, j, N, SIZE_MAX);
    if (is_other(c))
        return run_other(t, j);
    return space_run(t, i, false);
}

/* (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+
 * |\p{N}{1,digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|[\s]*[\r\n]+|[\s]+(?![^\s])|[\s]+ */
static size_t llama3(const subject *t, size_t i, size_t digits)
{
    size_t e = contraction(t, i, true), next, after;
    if (e > i)
        return e;
    unsigned c = class_at(t, i, &next);
    if (c & L)
        return run(t, i, L, SIZE_MAX);
    if (c & N)
        return run(t, i, N, digits);
    /* anything but CR and LF may lead a word of letters */
    if (!is_crlf(t, i) && (class_at(t, next, &after) & L))
        return run(t, next, L, SIZE_MAX);
    size_t j = t->s[i] == ' ' ? next : i;
    if (is_other(class_at(t, j, &after))) {
        e = run_other(t, j);
        while (is_crlf(t, e))
            e++;
        return e;
    }
    return space_run(t, i, true);
}

/* The case of the letter at i as GPT-4o's pattern sees it in llama.cpp, which rewrites
 * [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] as "a letter but a-z" and [\p{Ll}\p{Lm}\p{Lo}\p{M}] as
 * "a letter but A-Z" (the regex of pretokenize_defs.h): only ASCII letters have one case,
 * every other letter has both, and a mark is no letter. 0 for a non-letter. */
#define UPPER 1u
#define LOWER 2u
static unsigned letter_case(const subject *t, size_t i, size_t *next)
{
    if (!(class_at(t, i, next) & L))
        return 0;
    unsigned char b = t->s[i];
    return b >= 'a' && b <= 'z' ? LOWER : b >= 'A' && b <= 'Z' ? UPPER : UPPER | LOWER;
}

/* U*W+|U+W* from j (U: a letter with UPPER, W: one with LOWER), greedy as a regex engine
 * runs it: the capitals and the lower-case letters after them; where none follow, U* gives
 * back its last letter that is lower-case too (the first alternative), or, all of them
 * A-Z, the capitals alone are the word (the second). j itself when no letter is there. */
static size_t cased_word(const subject *t, size_t j)
{
    size_t e = j, next, both_end = j;
    unsigned k;
    while ((k = letter_case(t, e, &next)) & UPPER) {
        if (k & LOWER)
            both_end = next;
        e = next;
    }
    if (!(k & LOWER))
        return both_end > j ? both_end : e;
    while (letter_case(t, e, &next) & LOWER)
        e = next;
    return e;
}

/* [^\r\n\p{L}\p{N}]?U*W+C?|[^\r\n\p{L}\p{N}]?U+W*C?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*
 * |[\s]*[\r\n]+|[\s]+(?![^\s])|[\s]+   (C: a contraction, either case) */
static size_t gpt4o(const subject *t, size_t i)
{
    size_t next, after;
    unsigned c = class_at(t, i, &next);
    /* anything but CR, LF, a letter or a number may lead a word of letters */
    size_t j = (c & (L | N)) || is_crlf(t, i) ? i : next;
    size_t e = cased_word(t, j);
    if (e > j)
        return contraction(t, e, true);
    if (c & N)
        return run(t, i, N, 3);
    j = t->s[i] == ' ' ? next : i;
    if (is_other(class_at(t, j, &after))) {
        e = run_other(t, j);
        while (is_crlf(t, e) || (e < t->len && t->s[e] == '/'))
            e++;
        return e;
    }
    return space_run(t, i, true);
}

/* [\p{P}\$\+<=>\^~\|]+ */
static size_t punct(const subject *t, size_t i)
{
    size_t next;
    for (;;) {
        unsigned char b = i < t->len ? t->s[i] : 0;
        bool sym = b == '$' || b == '+' || b == '<' || b == '=' || b == '>' || b == '^'
                || b == '~' || b == '|';
        if (!sym && !(class_at(t, i, &next) & EMBER_UC_PUNCT))
            return i;
        i = sym ? i + 1 : next;
    }
}

/* [0-9][0-9][0-9] */
static size_t digits3(const subject *t, size_t i)
{
    for (size_t k = 0; k < 3; k++)
        if (i + k >= t->len || t->s[i + k] < '0' || t->s[i + k] > '9')
            return i;
    return i + 3;
}

size_t ember_pretok_match(ember_pretok_pattern p, const char *s, size_t len, size_t at)
{
    subject t = { (const unsigned char *)s, len };
    switch (p) {
    case EMBER_PRETOK_GPT2: return gpt2(&t, at);
    case EMBER_PRETOK_LLAMA3: return llama3(&t, at, 3);
    case EMBER_PRETOK_QWEN2: return llama3(&t, at, 1);
    case EMBER_PRETOK_GPT4O: return gpt4o(&t, at);
    case EMBER_PRETOK_NUMBER: return run(&t, at, N, 1);
    case EMBER_PRETOK_NUMBERS: return run(&t, at, N, SIZE_MAX);
    case EMBER_PRETOK_PUNCT: return punct(&t, at);
    case EMBER_PRETOK_DIGITS3: return digits3(&t, at);
    default: return at;
    }
}
