/* test_pretokenize.c — the hand-written pre-tokenizers (engine/tokenizer/pretok_match.c)
 * against PCRE2, which the library used before and which their regexes were written for.
 *
 * 1. Every code point has the classes unicode_class.c gives it in PCRE2 too (\p{L},
 *    \p{N}, \p{P}, [\s\x{85}] under PCRE2_UTF | PCRE2_UCP).
 * 2. Every pre-tokenizer name cuts texts exactly where the PCRE2 split of the library
 *    before would (kept here as the reference, compiled from pretokenize_defs.h's regexes):
 *    llama.cpp's test inputs from ../shared, hand-picked hard cases, and random strings of
 *    a small alphabet of characters that sit on the patterns' edges.
 * 3. GPT-4o's splits written out by hand (llama.cpp's, which PCRE2 alone cannot vouch for:
 *    the regex of pretokenize_defs.h is our reading of llama.cpp's rewrite).
 * PCRE2 is a dependency of this test only (tests/CMakeLists.txt). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/pretokenize.h"
#include "engine/tokenizer/pretokenize_defs.h"
#include "engine/tokenizer/unicode_class.h"
#include "engine/tokenizer/utf8.h"
#include "testutil.h"

#define N_DEFS (sizeof EMBER_PRETOK_DEFS / sizeof *EMBER_PRETOK_DEFS)

static pcre2_code *compile(const char *regex)
{
    int code = 0;
    PCRE2_SIZE at = 0;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)regex, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    CHECKF(re != NULL, "PCRE2 cannot compile %s (error %d at %zu)", regex, code, (size_t)at);
    if (re)
        (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    return re;
}

/* ---- 1. character classes -------------------------------------------------------- */

static void test_classes(void)
{
    static const char *const regex[4] = { "\\p{L}", "\\p{N}", "\\p{P}", "[\\s\\x{85}]" };
    static const unsigned bit[4] = { EMBER_UC_LETTER, EMBER_UC_NUMBER, EMBER_UC_PUNCT,
                                     EMBER_UC_SPACE };
    pcre2_code *re[4];
    for (int k = 0; k < 4; k++)
        re[k] = compile(regex[k]);
    pcre2_code *plain_s = compile("\\s");
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    size_t checked = 0, wrong = 0, members[4] = { 0 };
    for (uint32_t cp = 0; cp < 0x110000 && re[0] && re[1] && re[2] && re[3]; cp++) {
        if (cp >= 0xd800 && cp <= 0xdfff)
            continue;
        char u[4];
        size_t n = ember_utf8_encode(cp, u);
        unsigned ours = ember_unicode_class(cp);
        for (int k = 0; k < 4; k++) {
            bool theirs = pcre2_match(re[k], (PCRE2_SPTR)u, n, 0, PCRE2_ANCHORED, md, NULL) > 0;
            members[k] += theirs;
            if (theirs != !!(ours & bit[k]) && wrong++ < 10)
                fprintf(stderr, "U+%04X: %s is %d in PCRE2, %d here\n", (unsigned)cp, regex[k],
                        theirs, !theirs);
        }
        checked++;
    }
    CHECKF(checked == 0x110000 - 0x800 && wrong == 0, "%zu of %zu code points differ", wrong, checked);
    /* PCRE2's own \s under UCP: Z and its \h, \v lists, which hold NEL (so the \x{85}
     * of the patterns changes nothing) and U+180E (MONGOLIAN VOWEL SEPARATOR, a Cf) */
    CHECK(plain_s && pcre2_match(plain_s, (PCRE2_SPTR)"\xc2\x85", 2, 0, 0, md, NULL) > 0);
    CHECK(plain_s && pcre2_match(plain_s, (PCRE2_SPTR)"\xe1\xa0\x8e", 3, 0, 0, md, NULL) > 0);
    CHECK(ember_unicode_class(0x180e) == EMBER_UC_SPACE);
    printf("classes: %zu code points, %zu letters, %zu numbers, %zu punctuation, %zu spaces, "
           "%zu differ\n", checked, members[0], members[1], members[2], members[3], wrong);
    pcre2_match_data_free(md);
    pcre2_code_free(plain_s);
    for (int k = 0; k < 4; k++)
        pcre2_code_free(re[k]);
}

/* ---- 2. splits ------------------------------------------------------------------- */

/* A split, as the end offset of each word (words are contiguous and cover the text). */
typedef struct cuts {
    size_t *end;
    size_t n, cap;
} cuts;

static void push(cuts *c, size_t end)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        c->end = realloc(c->end, c->cap * sizeof *c->end);
    }
    c->end[c->n++] = end;
}

/* The reference: the library's split before the matchers, regexes run by PCRE2. */
typedef struct reference {
    pcre2_code *re[EMBER_PRETOK_N_PATTERNS];
    pcre2_match_data *md;
} reference;

static bool ref_init(reference *r)
{
    static const char *const regex[EMBER_PRETOK_N_PATTERNS] = EMBER_PRETOK_REGEX_INIT;
    bool ok = true;
    for (int p = EMBER_PRETOK_NONE + 1; p < EMBER_PRETOK_N_PATTERNS; p++)
        ok &= (r->re[p] = compile(regex[p])) != NULL;
    r->md = pcre2_match_data_create(8, NULL);
    return ok && r->md;
}

static void ref_free(reference *r)
{
    for (int p = 0; p < EMBER_PRETOK_N_PATTERNS; p++)
        pcre2_code_free(r->re[p]);
    pcre2_match_data_free(r->md);
}

static void ref_level(reference *r, const ember_pretok_def *d, int level, const char *text,
                      size_t start, size_t len, cuts *out)
{
    if (level == EMBER_PRETOK_MAX_CHAIN || d->chain[level] == EMBER_PRETOK_NONE) {
        push(out, start + len);
        return;
    }
    const pcre2_code *re = r->re[d->chain[level]];
    const char *s = text + start;
    size_t gap = 0, pos = 0;
    while (pos < len) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, len, pos, PCRE2_NO_UTF_CHECK, r->md, NULL);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
            rc = pcre2_match(re, (PCRE2_SPTR)s, len, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                             r->md, NULL);
        CHECKF(rc >= 0 || rc == PCRE2_ERROR_NOMATCH, "pcre2_match: %d", rc);
        if (rc < 0)
            break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(r->md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) { /* none of the patterns matches empty */
            CHECKF(me != ms, "an empty match of pattern %d", d->chain[level]);
            pos = ms + ember_utf8_len((const unsigned char *)s + ms, len - ms);
            continue;
        }
        if (ms > gap)
            ref_level(r, d, level + 1, text, start + gap, ms - gap, out);
        ref_level(r, d, level + 1, text, start + ms, me - ms, out);
        gap = pos = me;
    }
    if (gap < len)
        ref_level(r, d, level + 1, text, start + gap, len - gap, out);
}

/* Well-formed runs go to the regexes, each run of ill-formed bytes is one word. */
static void ref_split(reference *r, const ember_pretok_def *d, const char *text, size_t len,
                      cuts *out)
{
    out->n = 0;
    for (size_t i = 0; i < len;) {
        size_t cl = 0, n = 0;
        uint32_t cp;
        bool valid = ember_utf8_decode((const unsigned char *)text + i, len - i, &cl, &cp) == EMBER_UTF8_OK;
        while (i + n < len && (ember_utf8_decode((const unsigned char *)text + i + n, len - i - n,
                                                 &cl, &cp) == EMBER_UTF8_OK) == valid)
            n += cl;
        if (valid)
            ref_level(r, d, 0, text, i, n, out);
        else
            push(out, i + n);
        i += n;
    }
}

typedef struct collector {
    const char *text;
    cuts c;
} collector;

static ember_status collect(void *ctx, const char *word, size_t len)
{
    collector *k = ctx;
    push(&k->c, (size_t)(word - k->text) + len);
    return EMBER_OK;
}

/* The whole comparison */
typedef struct run_state {
    reference ref;
    cuts want;
    collector got;
    size_t splits, differ;
} run_state;

static void print_text(const char *text, size_t len)
{
    fputc('"', stderr);
    for (size_t i = 0; i < len; i++) {
        unsigned char b = (unsigned char)text[i];
        if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\')
            fputc(b, stderr);
        else
            fprintf(stderr, "\\x%02x", b);
    }
    fputc('"', stderr);
}

/* The words of a split around word `at` (the first that differs). */
static void print_cuts(const char *label, const cuts *c, const char *text, size_t at)
{
    fprintf(stderr, "  %s:%s", label, at > 4 ? " ..." : "");
    for (size_t i = at > 4 ? at - 4 : 0; i < c->n && i < at + 4; i++) {
        size_t start = i ? c->end[i - 1] : 0;
        fputc(' ', stderr);
        print_text(text + start, c->end[i] - start);
    }
    fputc('\n', stderr);
}

static void compare(run_state *s, const char *name, const char *text, size_t len)
{
    size_t def = 0;
    for (size_t i = 0; i < N_DEFS; i++)
        for (const char *const *n = EMBER_PRETOK_DEFS[i].names; *n; n++)
            if (strcmp(*n, name) == 0)
                def = i;
    ref_split(&s->ref, &EMBER_PRETOK_DEFS[def], text, len, &s->want);
    ember_pretok *p = NULL;
    ember_err err = {{0}};
    s->got.text = text, s->got.c.n = 0;
    bool ok = ember_pretok_create(name, strlen(name), &p, &err) == EMBER_OK
           && ember_pretok_split(p, text, len, collect, &s->got, &err) == EMBER_OK;
    CHECKF(ok, "%s: %s", name, err.msg);
    ember_pretok_free(p);
    s->splits++;
    size_t at = 0; /* the first word that differs */
    while (at < s->want.n && at < s->got.c.n && s->want.end[at] == s->got.c.end[at])
        at++;
    if ((at < s->want.n || at < s->got.c.n) && s->differ++ < 10) {
        size_t from = at ? s->want.end[at - 1] : 0;
        fprintf(stderr, "%s splits %zu bytes differently from byte %zu: ", name, len, from);
        print_text(text + from, len - from < 48 ? len - from : 48);
        fputc('\n', stderr);
        print_cuts("PCRE2", &s->want, text, at);
        print_cuts("here ", &s->got.c, text, at);
    }
}

/* Every name of every pre-tokenizer. */
static void compare_all_names(run_state *s, const char *text, size_t len)
{
    for (size_t i = 0; i < N_DEFS; i++)
        for (const char *const *n = EMBER_PRETOK_DEFS[i].names; *n; n++)
            compare(s, *n, text, len);
}

/* llama.cpp's vectors: each case (separated by "\n__ggml_vocab_test__\n") and the whole
 * file. Returns the number of texts, -1 without ../shared. */
static int test_shared_inputs(run_state *s)
{
    const char *shared = tu_shared_dir();
    if (!shared)
        return -1;
    char pattern[1024];
    snprintf(pattern, sizeof pattern, "%s/testdata/tokenizer/*/*.inp", shared);
    glob_t g;
    int texts = 0;
    if (glob(pattern, 0, NULL, &g) != 0)
        return 0;
    for (size_t f = 0; f < g.gl_pathc; f++) {
        FILE *fp = fopen(g.gl_pathv[f], "rb");
        char *buf = malloc(1 << 20);
        CHECKF(fp && buf, "cannot read %s", g.gl_pathv[f]);
        size_t n = fp && buf ? fread(buf, 1, (1 << 20) - 1, fp) : 0;
        if (fp)
            fclose(fp);
        if (!buf)
            continue;
        buf[n] = 0;
        compare_all_names(s, buf, n), texts++;
        static const char sep[] = "\n__ggml_vocab_test__\n";
        for (size_t start = 0; start <= n;) {
            char *at = strstr(buf + start, sep);
            size_t end = at ? (size_t)(at - buf) : n;
            compare_all_names(s, buf + start, end - start), texts++;
            start = end + sizeof sep - 1;
        }
        free(buf);
    }
    globfree(&g);
    return texts;
}

static const char *const TRICKY[] = {
    /* contractions, either case; their look-alikes */
    "'s 'S 'll 'LL 'Ll 're 'RE 've 'Ve 'm 'M 'd 'D 't 'T 'x", "it's", "IT'S", "don't we'll",
    "''s", "'", "' s", " 's", "'\n", "'sa", "x'll've", "'\xc5\xbf", "\xe2\x80\x99s",
    /* digit runs of 1..7, numbers of other scripts */
    "1", "12", "123", "1234", "12345", "123456", "1234567", " 1234567", "a1234567b",
    "12 345 6789", "\xd9\xa3\xd9\xa4\xd9\xa5\xd9\xa6", "1\xc2\xb2\xe2\x85\xa7", "x 9 y  99",
    /* whitespace: runs, before newlines, CR LF, tabs */
    "a  b", "a   \n  b", "   ", "  \n", "\n\n", " \n\n x", "x \r\n y", "\r\n", "\r\n\r\n",
    "\r", "\t\tx", "\t x", "x\t", "\n x", "  x  ", " ", "", "a \t\n\r\x0b\x0c b", "x\n\n\ny",
    " \n", "\n ", "  \r\n\t  x", "\x0b\x0cx",
    /* NEL, no-break space, ideographic and thin spaces, line and paragraph separators */
    "a\xc2\x85" "b", "\xc2\x85\xc2\x85x", " \xc2\x85\n", "\xc2\xa0x", "\xc2\xa0\xc2\xa0x",
    "a\xe3\x80\x80" "b", "\xe3\x80\x80\xe3\x80\x80", "\xe2\x80\x89\xe2\x80\x89x",
    "x\xe2\x80\xa8y\xe2\x80\xa9", "x\xe2\x80\x8b" "y", "\xc2\x85" "\n" "\xc2\x85",
    /* emoji, combining marks (category M is not a letter) */
    "\xf0\x9f\x98\x80\xf0\x9f\x98\x80 \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",
    "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7",
    "e\xcc\x81", "\xcc\x81" "abc", " \xcc\x81x", "cafe\xcc\x81 bar", "\xe0\xa4\xa8\xe0\xa4\xae\xe0\xa4\xb8\xe0\xa5\x8d\xe0\xa4\xa4\xe0\xa5\x87",
    /* mixed scripts */
    "Hello \xe4\xb8\x96\xe7\x95\x8c \xd0\xbc\xd0\xb8\xd1\x80 \xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7 \xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d",
    "\xc7\x85ungla \xca\xb0x", "abc\xe4\xb8\xad\xe6\x96\x87" "def",
    /* punctuation and symbols */
    "!!!", "?!.", " ...", "... \n\n", "$+<=>^~|", "a+b=c", "(x)", "--help", "\"quoted\"",
    "\xc2\xab\xc2\xbb", "\xc2\xbfQu\xc3\xa9?", "foo.bar,baz", "x!!\r\n\r\ny", "!\n!", "#1 @2",
    " !x", "!x", "\xe2\x82\xac" "5", "\xc2\xa9 2024", "a_b", "\xe2\x80\x94 yes",
    /* leading and trailing spaces, code */
    "  hello  ", " hello\n", "\nhello", "def f(x):\n    return x ** 2\n",
    "int main() { return 0; }\n\n\n", "<|endoftext|>", "\t\n \t\n  x",
    "    if (a) {\r\n        b();\r\n    }\r\n",
    /* ill-formed bytes among well-formed text */
    "\xff\xfe" "ab", "a\xc3", "\xe2\x82", "ok\x80ok", " \xed\xa0\x80 x", "1\xc0\xaf" "2",
};

/* Characters the random strings are made of, ASCII ones repeated to be likelier. */
static const char *const ALPHABET[] = {
    "a", "b", "s", "S", "t", "e", "r", "l", "L", "d", "m", "v", "E", "x", "a", "e",
    "0", "1", "2", "7", "9", "0", " ", " ", " ", " ", "\n", "\n", "\r", "\t", "\x0b", "'",
    "'", "/", ".", ",", "!", "?", "$", "+", "<", "=", ">", "^", "~", "|", "_", "-", "\"", "(", "#",
    "\xc3\xa9", "\xc3\x9f", "\xd0\x96", "\xe4\xb8\xad", "\xe3\x81\x82", "\xd7\x90",
    "\xd8\xa8", "\xf0\x9d\x90\x80", "\xca\xb0", "\xc7\x85", "\xc3\x80",   /* letters */
    "\xd9\xa3", "\xe0\xa5\xa7", "\xc2\xb2", "\xe2\x85\xa7", "\xef\xbc\x91",
    "\xf0\x9d\x9f\x8e",                                                     /* numbers */
    "\xcc\x81", "\xcc\x88", "\xe0\xa4\xbf",                                 /* marks */
    "\xc2\xa0", "\xe2\x80\x89", "\xc2\x85", "\xe3\x80\x80", "\xe2\x80\xa8", "\xe1\x9a\x80",
    "\xe2\x80\x8b", "\xef\xbb\xbf",                                         /* spaces, not */
    "\xc2\xbf", "\xe2\x80\x94", "\xe2\x80\x9c", "\xe3\x80\x81", "\xef\xbc\x81", /* punct */
    "\xc2\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf0\x9f\x91\x8d", "\xe2\x80\x8d",
    "\xcd\xb8", "\xee\x80\x80",                                /* symbols, unassigned */
    "\xff", "\x80", "\xc3",                                    /* ill-formed */
};

/* A few characters, so that long runs of each and every pair of them come up. */
static const char *const NARROW[] = {
    " ", " ", "\n", "\r", "\t", "a", "S", "'", "1", "!", "/", "\xc2\xa0", "\xc2\x85", "\xcc\x81",
    "\xc3\x80",
};

/* Up to 24 characters of alphabet[0..n_alphabet). */
static size_t random_text(tu_rng *rng, const char *const *alphabet, size_t n_alphabet, char *out)
{
    size_t n = 0, k = 1 + tu_next(rng) % 24;
    for (size_t i = 0; i < k; i++) {
        const char *c = alphabet[tu_next(rng) % n_alphabet];
        size_t l = strlen(c);
        memcpy(out + n, c, l);
        n += l;
    }
    return n;
}

static void test_splits(void)
{
    run_state s = { 0 };
    if (!ref_init(&s.ref)) {
        ref_free(&s.ref);
        return;
    }
    int shared = test_shared_inputs(&s);
    if (shared < 0)
        printf("SKIP part: ../shared is absent, llama.cpp's test inputs not compared\n");
    size_t tricky = sizeof TRICKY / sizeof *TRICKY;
    for (size_t i = 0; i < tricky; i++)
        compare_all_names(&s, TRICKY[i], strlen(TRICKY[i]));
    size_t n_random = 300000;
    tu_rng rng = { 20240611 };
    char text[24 * 4];
    for (size_t i = 0; i < n_random; i++) {
        size_t n = i % 3 == 2 ? random_text(&rng, NARROW, sizeof NARROW / sizeof *NARROW, text)
                 : random_text(&rng, ALPHABET, sizeof ALPHABET / sizeof *ALPHABET, text);
        for (size_t d = 0; d < N_DEFS; d++) /* every chain, by its first name */
            compare(&s, EMBER_PRETOK_DEFS[d].names[0], text, n);
    }
    CHECKF(s.differ == 0, "%zu of %zu splits differ from PCRE2's", s.differ, s.splits);
    printf("splits: %d shared texts and %zu hand-picked under every name, %zu random (a third "
           "of a narrow alphabet) under "
           "every chain: %zu splits, %zu differ\n", shared < 0 ? 0 : shared, tricky, n_random,
           s.splits, s.differ);
    free(s.want.end), free(s.got.c.end);
    ref_free(&s.ref);
}

/* ---- 3. GPT-4o by hand ---------------------------------------------------------- */

/* Text and its words, "|" between them, as llama.cpp's unicode_regex_split cuts them with
 * its GPT-4o regex: a word ends where ASCII capitals follow lower case; a non-ASCII letter
 * is of either case (so "\xc3\x80" + "B" is two words: the capitals give back the last letter
 * that may be lower-case); a combining mark is no letter; a contraction of either case
 * ends a word; digits go in threes; CR, LF and '/' follow punctuation. */
static const char *const GPT4O_CASES[][2] = {
    { "HelloWorld", "Hello|World" }, { "camelCaseWord", "camel|Case|Word" },
    { "HTTPServer", "HTTPServer" }, { "ABC'Sx", "ABC'S|x" }, { "don't I'LL", "don't| I'LL" },
    { "'s's", "'s's" }, { "\xc3\x80" "B", "\xc3\x80|B" }, { "\xc3\x80" "Bc", "\xc3\x80" "Bc" },
    { "\xe4\xb8\xad\xe6\x96\x87" "ABC", "\xe4\xb8\xad\xe6\x96\x87|ABC" },
    { "\xc7\x85ungla", "\xc7\x85ungla" }, { "\xc3\xa9t\xc3\x89", "\xc3\xa9t\xc3\x89" },
    { "e\xcc\x81", "e|\xcc\x81" }, { "cafe\xcc\x81s", "cafe|\xcc\x81s" },
    { "12345", "123|45" }, { "$100", "$|100" }, { "a/b//\n/c", "a|/b|//\n/|c" },
    { "  hello\n\n world", " | hello|\n\n| world" }, { "x\r\n\r\ny", "x|\r\n\r\n|y" },
    { "\xc2\xa0word", "\xc2\xa0word" }, { "\xc2\x85word", "\xc2\x85word" },
};

typedef struct joined {
    char s[256];
    size_t n;
} joined;

static ember_status join_word(void *ctx, const char *word, size_t len)
{
    joined *j = ctx;
    if (j->n && j->n < sizeof j->s)
        j->s[j->n++] = '|';
    for (size_t i = 0; i < len && j->n < sizeof j->s; i++)
        j->s[j->n++] = word[i];
    return EMBER_OK;
}

static void test_gpt4o_by_hand(void)
{
    ember_pretok *p = NULL;
    ember_err err = {{0}};
    CHECKF(ember_pretok_create("gpt-4o", 6, &p, &err) == EMBER_OK, "%s", err.msg);
    size_t n = sizeof GPT4O_CASES / sizeof *GPT4O_CASES, wrong = 0;
    for (size_t i = 0; p && i < n; i++) {
        joined j = { .n = 0 };
        const char *text = GPT4O_CASES[i][0], *want = GPT4O_CASES[i][1];
        CHECK(ember_pretok_split(p, text, strlen(text), join_word, &j, &err) == EMBER_OK);
        bool same = j.n == strlen(want) && memcmp(j.s, want, j.n) == 0;
        CHECKF(same, "gpt-4o cuts %s as %.*s, not %s", text, (int)j.n, j.s, want);
        wrong += !same;
    }
    ember_pretok_free(p);
    printf("gpt-4o by hand: %zu texts, %zu differ\n", n, wrong);
}

int main(void)
{
    test_classes();
    test_splits();
    test_gpt4o_by_hand();
    return tu_finish("test_pretokenize");
}
