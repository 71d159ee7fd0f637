/* util.h — what the fuzz targets share: an invariant check that stops the run, a strict
 * UTF-8 check, and small tokenizers built in memory (util.c).
 *
 * Every target defines LLVMFuzzerTestOneInput. Built with EMBER_FUZZ=ON (clang,
 * libFuzzer, ASan, UBSan) each is a fuzzer; built normally, replay.c's main feeds it
 * files (the regression test, tests/test_fuzz_regressions.sh). A broken invariant is a
 * finding like a crash: FUZZ_CHECK prints it and aborts, so both builds see it. */
#ifndef EMBER_FUZZ_UTIL_H
#define EMBER_FUZZ_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine/model/gguf.h"
#include "engine/tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                        \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
            abort();                                                                 \
        }                                                                            \
    } while (0)

/* Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF). Written
 * apart from engine/tokenizer/utf8.c, so that it can catch that file's mistakes. */
bool fuzz_valid_utf8(const char *s, size_t n);

/* A tokenizer over a small vocabulary made at the first call and kept for the process
 * (a fuzzer calls its target millions of times). Exits the process if the vocabulary
 * cannot be built: that is a broken harness, not a finding.
 *  SPM ("llama"): <unk> <s> </s>, the 256 byte tokens, a few scored pieces (U+2581
 *  included), a user-defined <tool>, control <|im_end|> and an unused piece.
 *  BPE ("gpt2"): GPT-2's 256 byte characters, a few pieces and merges, control
 *  <|endoftext|> <|im_start|> <|im_end|>, user-defined <tool>; pre is the
 *  pre-tokenizer's name (one tokenizer per name). */
const ember_tokenizer *fuzz_spm_tokenizer(void);
const ember_tokenizer *fuzz_bpe_tokenizer(const char *pre);

/* Text to ids: encodes text[0..len) with flags, checks what holds for every vocabulary
 * (every id inside it; no control token from plain text; the count and the ids the same
 * whatever the output's capacity) and returns the ids (malloc'd, *n of them). */
uint32_t *fuzz_encode(const ember_tokenizer *t, const uint8_t *text, size_t len, unsigned flags, size_t *n);
/* Decodes ids[0..n) one by one into a malloc'd buffer (*len bytes), checking that a short
 * buffer gets a prefix of the piece and never a byte past its end. */
char *fuzz_decode(const ember_tokenizer *t, const uint32_t *ids, size_t n, size_t *len);
/* Ids to text: data as little-endian 16-bit ids (some past the vocabulary), streamed
 * through ember_detok: every chunk valid UTF-8 and within ember_detok_max, a push into a
 * buffer too small changes nothing, and for valid text the chunks join into exactly
 * what fuzz_decode gives. */
void fuzz_check_ids_to_text(const ember_tokenizer *t, const uint8_t *data, size_t size);

/* What both tokenizer targets do with an input (size > 0): byte 0 bit 0 set, the rest
 * is ids for fuzz_check_ids_to_text; clear, the rest is text, encoded (flags: bit 1 adds
 * BOS, bit 2 parses special tokens) and decoded again. Returns the decoded text
 * (malloc'd, *len bytes) for the target's own round-trip check, or NULL when there is
 * none to make: ids to text, or special tokens parsed (where <s> vanishes into a control
 * token). */
char *fuzz_tokenizer_round_trip(const ember_tokenizer *t, const uint8_t *data, size_t size, size_t *len);

#endif
