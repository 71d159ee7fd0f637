/* fuzz_tokenizer_spm.c — the SentencePiece-style tokenizer in both directions, on the
 * small vocabulary of util.c (every byte has a byte token).
 *
 * Input (fuzz_tokenizer_round_trip, util.h): byte 0 picks the direction and flags; the
 * rest is the text, or the ids.
 *  - text to ids (bit 0 clear): util.c's checks, then a round trip. Decoding gives the
 *    text back with U+2581 as a space and dummy-prefix spaces added, so the two agree
 *    once spaces are removed from both (without special-token parsing, where <s> would
 *    vanish into a control token);
 *  - ids to text (bit 0 set): fuzz_check_ids_to_text. */
#include <string.h>

#include "util.h"

/* s without spaces, with U+2581 read as a space. */
static size_t squeeze(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 3 <= n && memcmp(s + i, "\xe2\x96\x81", 3) == 0) i += 2;
        else if (s[i] != ' ') out[o++] = s[i];
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    size_t len = 0;
    char *back = fuzz_tokenizer_round_trip(fuzz_spm_tokenizer(), data, size, &len);
    if (back) {
        data++, size--;
        char *a = malloc(size + 1), *b = malloc(len + 1);
        FUZZ_CHECK(a && b, "out of memory");
        size_t na = squeeze((const char *)data, size, a), nb = squeeze(back, len, b);
        FUZZ_CHECK(na == nb && memcmp(a, b, na) == 0, "round trip: %zu bytes in, %zu out (spaces aside)", na, nb);
        free(a);
        free(b);
    }
    free(back);
    return 0;
}
