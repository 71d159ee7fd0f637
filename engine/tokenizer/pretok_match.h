/* pretok_match.h — the patterns the pre-tokenizers cut text with, matched by hand-written
 * code (pretok_match.c) exactly as PCRE2 matches the regexes they stand for
 * (pretokenize_defs.h has those). Library-internal. */
#ifndef EMBER_PRETOK_MATCH_H
#define EMBER_PRETOK_MATCH_H

#include <stddef.h>

typedef enum ember_pretok_pattern {
    EMBER_PRETOK_NONE,    /* ends a chain of patterns */
    EMBER_PRETOK_GPT2,    /* GPT-2's pattern */
    EMBER_PRETOK_LLAMA3,  /* Llama 3's, numbers in up to three digits */
    EMBER_PRETOK_QWEN2,   /* Llama 3's with numbers digit by digit */
    EMBER_PRETOK_GPT4O,   /* GPT-4o's (o200k): words split at ASCII case changes */
    EMBER_PRETOK_NUMBER,  /* one \p{N} */
    EMBER_PRETOK_NUMBERS, /* a run of \p{N} */
    EMBER_PRETOK_PUNCT,   /* a run of \p{P} and $+<=>^~| */
    EMBER_PRETOK_DIGITS3, /* three ASCII digits */
    EMBER_PRETOK_N_PATTERNS
} ember_pretok_pattern;

/* Where the match of pattern p that starts at s[at] ends: an offset > at, or at itself
 * when none starts there. s[0..len) must be well-formed UTF-8 and is the whole subject
 * (a lookahead sees nothing past len); at is a character boundary below len. */
size_t ember_pretok_match(ember_pretok_pattern p, const char *s, size_t len, size_t at);

#endif
