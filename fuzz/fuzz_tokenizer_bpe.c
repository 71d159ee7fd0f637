/* fuzz_tokenizer_bpe.c — GPT-2 byte-level BPE in both directions, under each
 * pre-tokenizer (their pattern matchers see the text), on the small vocabulary of util.c.
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
    const ember_tokenizer *t = fuzz_bpe_tokenizer(PRE[(data[0] >> 3) % (sizeof PRE / sizeof *PRE)]);
    size_t len = 0;
    char *back = fuzz_tokenizer_round_trip(t, data, size, &len);
    if (back) FUZZ_CHECK(len == size - 1 && memcmp(back, data + 1, len) == 0, "round trip: %zu bytes in, %zu out", size - 1, len);
    free(back);
    return 0;
}
