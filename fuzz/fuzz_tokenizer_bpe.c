/* fuzz_tokenizer_bpe.c — GPT-2 byte-level BPE in both directions, under each
 * pre-tokenizer (their PCRE2 regexes see the text), on the small vocabulary of util.c.
 *
 * Input: byte 0 picks the direction, flags and pre-tokenizer; the rest is the text, or
 * the ids.
 *  - text to ids (bit 0 clear): util.c's checks, then decode(encode(x)) == x byte for
 *    byte, for any bytes (docs/tokenizers.md), without special-token parsing;
 *  - ids to text (bit 0 set): fuzz_check_ids_to_text. */
#include <string.h>

#include "util.h"

static const char *const PRE[] = {"gpt-2", "llama-bpe", "qwen2", "smollm", "default", "dbrx"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    uint8_t mode = data[0];
    const ember_tokenizer *t = fuzz_bpe_tokenizer(PRE[(mode >> 3) % (sizeof PRE / sizeof *PRE)]);
    data++, size--;
    if (mode & 1) {
        fuzz_check_ids_to_text(t, data, size);
        return 0;
    }
    unsigned flags = (mode & 2 ? EMBER_TOKENIZE_ADD_BOS : 0) | (mode & 4 ? EMBER_TOKENIZE_PARSE_SPECIAL : 0);
    size_t n = 0, len = 0;
    uint32_t *ids = fuzz_encode(t, data, size, flags, &n);
    char *back = fuzz_decode(t, ids, n, &len);
    if (!(flags & EMBER_TOKENIZE_PARSE_SPECIAL))
        FUZZ_CHECK(len == size && memcmp(back, data, size) == 0, "round trip: %zu bytes in, %zu out", size, len);
    free(back);
    free(ids);
    return 0;
}
