/* pretokenize.c — the pre-tokenizers that cut text into words before byte-level BPE,
 * named by tokenizer.ggml.pre.
 *
 * Each pre-tokenizer is one pattern or a chain of them (pretokenize_defs.h), the regexes
 * llama.cpp uses (llm_tokenizer_bpe in llama-vocab.cpp), matched by hand-written code
 * (pretok_match.c) that tests/test_pretokenize.c checks against PCRE2 itself. A pattern
 * splits a piece of text into its matches and the runs between matches (both become
 * pieces, so no byte is ever dropped); with a chain, every piece from one pattern is split
 * again by the next.
 *
 * Invalid UTF-8: llama.cpp replaces each bad byte with U+FFFD before splitting, which
 * loses the byte. We keep it: the text is first cut into well-formed runs and runs of
 * ill-formed bytes; the patterns see only the former, each of the latter is one word,
 * and byte-level BPE then encodes those bytes exactly. */
#include "common/alloc.h"
#include "pretokenize.h"

#include <string.h>

#include "pretokenize_defs.h"
#include "utf8.h"

struct ember_pretok {
    const ember_pretok_def *def;
    const char *name;           /* the alias that selected def */
};

static const ember_pretok_def *find_def(const char *name, size_t len, const char **alias)
{
    for (size_t i = 0; i < sizeof EMBER_PRETOK_DEFS / sizeof *EMBER_PRETOK_DEFS; i++)
        for (const char *const *n = EMBER_PRETOK_DEFS[i].names; *n; n++)
            if (strlen(*n) == len && memcmp(*n, name, len) == 0) {
                *alias = *n;
                return &EMBER_PRETOK_DEFS[i];
            }
    return NULL;
}

ember_status ember_pretok_create(const char *name, size_t name_len, ember_pretok **out,
                                 ember_err *err)
{
    *out = NULL;
    const char *alias = NULL;
    const ember_pretok_def *def = find_def(name, name_len, &alias);
    if (!def)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "pre-tokenizer '%.*s' (tokenizer.ggml.pre) "
                          "is not supported", (int)(name_len > 64 ? 64 : name_len), name);
    ember_pretok *p = ember_calloc(1, sizeof *p);
    if (!p)
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory creating the pre-tokenizer");
    p->def = def;
    p->name = alias;
    *out = p;
    return EMBER_OK;
}

void ember_pretok_free(ember_pretok *p)
{
    ember_free(p);
}

const char *ember_pretok_name(const ember_pretok *p) { return p->name; }
bool ember_pretok_ignore_merges(const ember_pretok *p) { return p->def->ignore_merges; }
bool ember_pretok_add_bos(const ember_pretok *p) { return p->def->add_bos; }

/* ---- splitting ----------------------------------------------------------------- */

typedef struct split_ctx {
    const ember_pretok *p;
    const char *text;
    ember_word_fn fn;
    void *ctx;
} split_ctx;

/* Splits text[start..start+len) by pattern level of the chain into matches and the runs
 * between them, and each of those by the next level; past the last level, a piece is a
 * word. A match is the leftmost one: where none starts at pos, the next character is
 * tried. */
static ember_status split_level(split_ctx *c, int level, size_t start, size_t len)
{
    ember_pretok_pattern pat = level < EMBER_PRETOK_MAX_CHAIN ? c->p->def->chain[level]
                                                              : EMBER_PRETOK_NONE;
    if (pat == EMBER_PRETOK_NONE)
        return c->fn(c->ctx, c->text + start, len);
    const char *s = c->text + start;
    size_t gap = 0, pos = 0; /* gap: where the unmatched run began */
    ember_status st = EMBER_OK;
    while (pos < len && !st) {
        size_t me = ember_pretok_match(pat, s, len, pos);
        if (me == pos) {
            pos += ember_utf8_len((const unsigned char *)s + pos, len - pos);
            continue;
        }
        if (pos > gap)
            st = split_level(c, level + 1, start + gap, pos - gap);
        if (!st)
            st = split_level(c, level + 1, start + pos, me - pos);
        gap = pos = me;
    }
    if (!st && gap < len)
        st = split_level(c, level + 1, start + gap, len - gap);
    return st;
}

/* Length of the run of well-formed (valid) or of ill-formed bytes at s[0..n). */
static size_t utf8_run(const unsigned char *s, size_t n, bool *valid)
{
    size_t i = 0, cl = 0;
    uint32_t cp;
    *valid = ember_utf8_decode(s, n, &cl, &cp) == EMBER_UTF8_OK;
    while (i < n) {
        bool ok = ember_utf8_decode(s + i, n - i, &cl, &cp) == EMBER_UTF8_OK;
        if (ok != *valid)
            break;
        i += cl;
    }
    return i;
}

ember_status ember_pretok_split(const ember_pretok *p, const char *text, size_t len,
                                ember_word_fn fn, void *ctx, ember_err *err)
{
    (void)err; /* matching cannot fail: only fn's status stops a split */
    split_ctx c = { p, text, fn, ctx };
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < len && !st;) {
        bool valid;
        size_t n = utf8_run((const unsigned char *)text + i, len - i, &valid);
        st = valid ? split_level(&c, 0, i, n) : fn(ctx, text + i, n);
        i += n;
    }
    return st;
}
