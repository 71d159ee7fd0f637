/* pretokenize_defs.h — the pre-tokenizers by name (tokenizer.ggml.pre): the patterns each
 * chains, their flags, and the regex each pattern stands for. Included by pretokenize.c,
 * which splits with the matchers of pretok_match.c, and by tests/test_pretokenize.c, which
 * compiles these regexes with PCRE2 and checks that the matchers cut every text the same.
 * Library-internal. */
#ifndef EMBER_PRETOKENIZE_DEFS_H
#define EMBER_PRETOKENIZE_DEFS_H

#include <stdbool.h>

#include "pretok_match.h"

/* The regexes, for PCRE2 with PCRE2_UTF | PCRE2_UCP (\s, \p{L}, \p{N} are Unicode classes),
 * the same ones llama.cpp uses (llm_tokenizer_bpe in llama-vocab.cpp). */

/* \s inside a character class, with U+0085 (NEL) named: llama.cpp's and Hugging Face's
 * \s include it. PCRE2's \s under UCP has it already (and U+180E, which they lack:
 * unicode_class.c), so the \x{85} changes nothing there. */
#define EMBER_RE_WS "\\s\\x{85}"

/* GPT-2's own pattern. llama.cpp drops its last alternative, "|\s+"; with unmatched runs
 * kept as pieces that makes no difference, so the original is used. */
#define EMBER_RE_GPT2 \
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" EMBER_RE_WS "\\p{L}\\p{N}]+" \
    "|[" EMBER_RE_WS "]+(?![^" EMBER_RE_WS "])|[" EMBER_RE_WS "]+"

/* Llama 3's pattern with the case-insensitive group (?i:...) spelled out, as llama.cpp
 * does; DIGITS is \p{N}{1,3} for Llama 3 and \p{N} for Qwen2. */
#define EMBER_RE_LLAMA3_LIKE(DIGITS) \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])" \
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" DIGITS "| ?[^" EMBER_RE_WS "\\p{L}\\p{N}]+[\\r\\n]*" \
    "|[" EMBER_RE_WS "]*[\\r\\n]+|[" EMBER_RE_WS "]+(?![^" EMBER_RE_WS "])|[" EMBER_RE_WS "]+"

/* GPT-4o's pattern (o200k_base, o200k_harmony) as llama.cpp runs it. The original,
 *   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|...)?
 *   |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|...)?
 *   |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * is rewritten there (its std::regex knows only \p{L}, and only as "some letter"): an upper-
 * case letter is a letter but a-z, a lower-case one a letter but A-Z, and (?i:...) is spelled
 * out. So ASCII letters alone have a case, any other letter is both, and combining marks
 * (\p{M}) are not part of a word: e + U+0301 is "e", U+0301. We cut as llama.cpp does. */
#define EMBER_RE_CONTRACTION "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define EMBER_RE_UPPER "(?:(?=\\p{L})[^a-z])"
#define EMBER_RE_LOWER "(?:(?=\\p{L})[^A-Z])"
#define EMBER_RE_GPT4O \
    "[^\\r\\n\\p{L}\\p{N}]?" EMBER_RE_UPPER "*" EMBER_RE_LOWER "+" EMBER_RE_CONTRACTION "?" \
    "|[^\\r\\n\\p{L}\\p{N}]?" EMBER_RE_UPPER "+" EMBER_RE_LOWER "*" EMBER_RE_CONTRACTION "?" \
    "|\\p{N}{1,3}| ?[^" EMBER_RE_WS "\\p{L}\\p{N}]+[\\r\\n/]*" \
    "|[" EMBER_RE_WS "]*[\\r\\n]+|[" EMBER_RE_WS "]+(?![^" EMBER_RE_WS "])|[" EMBER_RE_WS "]+"

/* The regex each pattern matches as: an initializer of a const char *[] indexed by
 * pattern (the library never compiles them; the test does). */
#define EMBER_PRETOK_REGEX_INIT { \
    [EMBER_PRETOK_GPT2] = EMBER_RE_GPT2, \
    [EMBER_PRETOK_LLAMA3] = EMBER_RE_LLAMA3_LIKE("\\p{N}{1,3}"), \
    [EMBER_PRETOK_QWEN2] = EMBER_RE_LLAMA3_LIKE("\\p{N}"), \
    [EMBER_PRETOK_GPT4O] = EMBER_RE_GPT4O, \
    [EMBER_PRETOK_NUMBER] = "\\p{N}", \
    [EMBER_PRETOK_NUMBERS] = "\\p{N}+", \
    [EMBER_PRETOK_PUNCT] = "[\\p{P}\\$\\+<=>\\^~\\|]+", \
    [EMBER_PRETOK_DIGITS3] = "[0-9][0-9][0-9]", \
}

#define EMBER_PRETOK_MAX_CHAIN 4

typedef struct ember_pretok_def {
    const char *names[8];       /* tokenizer.ggml.pre values, NULL-terminated */
    ember_pretok_pattern chain[EMBER_PRETOK_MAX_CHAIN]; /* applied in order, NONE-terminated */
    bool ignore_merges;         /* a word that is a token is emitted whole */
    bool add_bos;               /* default for tokenizer.ggml.add_bos_token */
} ember_pretok_def;

static const ember_pretok_def EMBER_PRETOK_DEFS[] = {
    { { "gpt-2", "phi-2", "mpt", "olmo", "jais", NULL }, { EMBER_PRETOK_GPT2 }, false, false },
    { { "llama-bpe", "llama3", "llama-v3", NULL }, { EMBER_PRETOK_LLAMA3 }, true, true },
    { { "dbrx", "smaug-bpe", NULL }, { EMBER_PRETOK_LLAMA3 }, false, false },
    { { "qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", NULL }, { EMBER_PRETOK_QWEN2 },
      false, false },
    /* GPT-4o's o200k vocabularies (gpt-oss: o200k_harmony), Llama 4 */
    { { "gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2", NULL }, { EMBER_PRETOK_GPT4O },
      false, false },
    /* SmolLM, StarCoder: HF's Sequence[Digits(individual), ByteLevel]: every digit is a
     * piece of its own before the GPT-2 pattern runs, so a digit never takes a space */
    { { "smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b", NULL },
      { EMBER_PRETOK_NUMBER, EMBER_PRETOK_GPT2 }, false, false },
    /* llama.cpp's fallback for BPE vocabularies that name "default" */
    { { "default", NULL },
      { EMBER_PRETOK_PUNCT, EMBER_PRETOK_GPT2, EMBER_PRETOK_NUMBERS, EMBER_PRETOK_DIGITS3 },
      false, false },
};

#endif
