/* pretokenize.c — the regex pre-tokenizers that cut text into words before byte-level
 * BPE, named by tokenizer.ggml.pre.
 *
 * Each pre-tokenizer is one regular expression or a chain of them, the same ones
 * llama.cpp uses (llm_tokenizer_bpe in llama-vocab.cpp). A regex splits a piece of text
 * into its matches and the runs between matches (both become pieces, so no byte is ever
 * dropped); with a chain, every piece from one regex is split again by the next. The
 * regexes run in PCRE2 with UTF and UCP (so \s, \p{L}, \p{N} are Unicode classes), JIT
 * compiled where the platform allows, compiled once per tokenizer.
 *
 * Invalid UTF-8: llama.cpp replaces each bad byte with U+FFFD before splitting, which
 * loses the byte. We keep it: the text is first cut into well-formed runs and runs of
 * ill-formed bytes; the regexes see only the former, each of the latter is one word,
 * and byte-level BPE then encodes those bytes exactly. */
#include "common/alloc.h"
#include "pretokenize.h"

#include <stdlib.h>
#include <string.h>

#include "utf8.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#define MAX_REGEX 4

/* \s inside a character class, widened to Unicode's White_Space: PCRE2's \s lacks
 * U+0085 (NEL), which llama.cpp's and Hugging Face's \s include. */
#define WS "\\s\\x{85}"

/* GPT-2's own pattern. llama.cpp drops its last alternative, "|\s+"; with unmatched runs
 * kept as pieces that makes no difference, so the original is used. */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+" \
                "|[" WS "]+(?![^" WS "])|[" WS "]+"

/* Llama 3's pattern with the case-insensitive group (?i:...) spelled out, as llama.cpp
 * does; DIGITS is \p{N}{1,3} for Llama 3 and \p{N} for Qwen2. */
#define RE_LLAMA3_LIKE(DIGITS) \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])" \
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" DIGITS "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*" \
    "|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+"

typedef struct pre_def {
    const char *names[8];       /* tokenizer.ggml.pre values, NULL-terminated */
    const char *regex[MAX_REGEX]; /* applied in order, NULL-terminated */
    bool ignore_merges;         /* a word that is a token is emitted whole */
    bool add_bos;               /* default for tokenizer.ggml.add_bos_token */
} pre_def;

static const pre_def PRE_DEFS[] = {
    { { "gpt-2", "phi-2", "mpt", "olmo", "jais", NULL }, { RE_GPT2 }, false, false },
    { { "llama-bpe", "llama3", "llama-v3", NULL },
      { RE_LLAMA3_LIKE("\\p{N}{1,3}") }, true, true },
    { { "dbrx", "smaug-bpe", NULL }, { RE_LLAMA3_LIKE("\\p{N}{1,3}") }, false, false },
    { { "qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", NULL },
      { RE_LLAMA3_LIKE("\\p{N}") }, false, false },
    /* SmolLM, StarCoder: HF's Sequence[Digits(individual), ByteLevel]: every digit is a
     * piece of its own before the GPT-2 pattern runs, so a digit never takes a space */
    { { "smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b", NULL },
      { "\\p{N}", RE_GPT2 }, false, false },
    /* llama.cpp's fallback for BPE vocabularies that name "default" */
    { { "default", NULL },
      { "[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]" }, false, false },
};

struct ember_pretok {
    const pre_def *def;
    const char *name;           /* the alias that selected def */
    int n_re;
    pcre2_code *re[MAX_REGEX];
};

static const pre_def *find_def(const char *name, size_t len, const char **alias)
{
    for (size_t i = 0; i < sizeof PRE_DEFS / sizeof *PRE_DEFS; i++)
        for (const char *const *n = PRE_DEFS[i].names; *n; n++)
            if (strlen(*n) == len && memcmp(*n, name, len) == 0) {
                *alias = *n;
                return &PRE_DEFS[i];
            }
    return NULL;
}

static ember_status compile_one(ember_pretok *p, int i, ember_err *err)
{
    int code = 0;
    PCRE2_SIZE at = 0;
    const char *src = p->def->regex[i];
    p->re[i] = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                             &code, &at, NULL);
    if (!p->re[i]) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "pre-tokenizer '%s': PCRE2 cannot compile "
                          "regex %d at offset %zu: %s", p->name, i, (size_t)at, (const char *)msg);
    }
    /* JIT is an optimisation only: without it (unsupported CPU, no executable memory)
     * pcre2_match interprets the same pattern */
    (void)pcre2_jit_compile(p->re[i], PCRE2_JIT_COMPLETE);
    return EMBER_OK;
}

ember_status ember_pretok_create(const char *name, size_t name_len, ember_pretok **out,
                                 ember_err *err)
{
    *out = NULL;
    const char *alias = NULL;
    const pre_def *def = find_def(name, name_len, &alias);
    if (!def)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "pre-tokenizer '%.*s' (tokenizer.ggml.pre) "
                          "is not supported", (int)(name_len > 64 ? 64 : name_len), name);
    ember_pretok *p = ember_calloc(1, sizeof *p);
    if (!p)
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory creating the pre-tokenizer");
    p->def = def;
    p->name = alias;
    for (int i = 0; i < MAX_REGEX && def->regex[i]; i++) {
        ember_status st = compile_one(p, i, err);
        if (st) {
            ember_pretok_free(p);
            return st;
        }
        p->n_re = i + 1;
    }
    *out = p;
    return EMBER_OK;
}

void ember_pretok_free(ember_pretok *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n_re; i++)
        pcre2_code_free(p->re[i]);
    ember_free(p);
}

const char *ember_pretok_name(const ember_pretok *p) { return p->name; }
bool ember_pretok_ignore_merges(const ember_pretok *p) { return p->def->ignore_merges; }
bool ember_pretok_add_bos(const ember_pretok *p) { return p->def->add_bos; }

/* ---- splitting ----------------------------------------------------------------- */

typedef struct split_ctx {
    const ember_pretok *p;
    const char *text;
    pcre2_match_data *md;
    ember_word_fn fn;
    void *ctx;
    ember_err *err;
} split_ctx;

/* The next match of regex level in s[0..len) at or after pos: 1 with [*ms, *me), 0 for
 * none, or a status < 0 from PCRE2. */
static int next_match(split_ctx *c, int level, const char *s, size_t len, size_t pos,
                      size_t *ms, size_t *me)
{
    const pcre2_code *re = c->p->re[level];
    uint32_t opts = PCRE2_NO_UTF_CHECK; /* the caller passes well-formed runs only */
    int rc = pcre2_match(re, (PCRE2_SPTR)s, len, pos, opts, c->md, NULL);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) /* the interpreter keeps its stack on the heap */
        rc = pcre2_match(re, (PCRE2_SPTR)s, len, pos, opts | PCRE2_NO_JIT, c->md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    if (rc < 0)
        return rc;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
    *ms = ov[0], *me = ov[1];
    return 1;
}

static ember_status regex_error(split_ctx *c, int level, int rc)
{
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof msg);
    return ember_fail(c->err, EMBER_ERR_INVALID_ARG, "pre-tokenizer '%s' regex %d failed: %s",
                      c->p->name, level, (const char *)msg);
}

/* Splits text[start..start+len) by regex level into matches and the runs between them,
 * and each of those by the next level; past the last level, a piece is a word. */
static ember_status split_level(split_ctx *c, int level, size_t start, size_t len)
{
    if (level == c->p->n_re)
        return c->fn(c->ctx, c->text + start, len);
    const char *s = c->text + start;
    size_t gap = 0, pos = 0, ms = 0, me = 0; /* gap: where the unmatched run began */
    ember_status st = EMBER_OK;
    while (pos < len && !st) {
        int rc = next_match(c, level, s, len, pos, &ms, &me);
        if (rc < 0)
            return regex_error(c, level, rc);
        if (rc == 0)
            break;
        if (me == ms) { /* none of our patterns matches empty, but never loop on one */
            pos = ms + ember_utf8_len((const unsigned char *)s + ms, len - ms);
            continue;
        }
        if (ms > gap)
            st = split_level(c, level + 1, start + gap, ms - gap);
        if (!st)
            st = split_level(c, level + 1, start + ms, me - ms);
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
    pcre2_match_data *md = pcre2_match_data_create(8, NULL);
    if (!md)
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory splitting text");
    split_ctx c = { p, text, md, fn, ctx, err };
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < len && !st;) {
        bool valid;
        size_t n = utf8_run((const unsigned char *)text + i, len - i, &valid);
        st = valid ? split_level(&c, 0, i, n) : fn(ctx, text + i, n);
        i += n;
    }
    pcre2_match_data_free(md);
    return st;
}
