/* test_vocab.h — the SentencePiece-style vocabulary `ember make-test-model` writes
 * (test_vocab.c): specials, the 256 byte pieces, characters, common English words and
 * lowercase strings, so that real text tokenizes into word-sized pieces. */
#ifndef EMBER_TEST_VOCAB_H
#define EMBER_TEST_VOCAB_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/model/gguf_write.h"

#define TEST_VOCAB_PIECE_MAX 32
#define TEST_VOCAB_MIN (3 + 256 + 5)
#define TEST_VOCAB_MAX 1000000

typedef struct test_vocab {
    char (*piece)[TEST_VOCAB_PIECE_MAX];
    float *score;
    int32_t *type;
    uint32_t n, cap;
    uint32_t *set;   /* open addressing over pieces: id + 1, 0 = empty */
    uint64_t mask;
} test_vocab;

/* Builds a vocabulary of exactly size pieces (TEST_VOCAB_MIN..TEST_VOCAB_MAX); false when
 * out of memory. Free with test_vocab_free either way. */
bool test_vocab_build(test_vocab *v, uint32_t size);
void test_vocab_free(test_vocab *v);
/* Its tokenizer.ggml.* keys (model "llama", BOS 1, EOS 2, UNK 0, add_bos). */
ember_status test_vocab_write(ember_gguf_writer *w, const test_vocab *v);

/* FNV-1a of a C string (pieces' hash table; tensor names seed the weights' streams). */
uint64_t test_hash_str(const char *s);

#endif
