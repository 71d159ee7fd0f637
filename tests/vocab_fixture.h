/* vocab_fixture.h — what the tokenizer test programs (test_tokenizer, test_tokenizer_bpe)
 * share: vocabularies built in memory and written as vocab-only GGUF files, opening a
 * tokenizer, encoding and decoding with checks, and llama.cpp's reference vectors. */
#ifndef EMBER_VOCAB_FIXTURE_H
#define EMBER_VOCAB_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/model/gguf_write.h"
#include "engine/tokenizer/detok.h"
#include "engine/tokenizer/tokenizer.h"
#include "testutil.h"

/* A vocabulary under construction; every string is owned. Zero-initialize, then add. */
typedef struct vf_vocab {
    char **tok;        /* pieces, by id */
    int32_t *type;     /* 1 normal, 2 unknown, 3 control, 4 user-defined, 6 byte */
    float *score;      /* SentencePiece scores (0 unless given) */
    uint32_t n;
    char **merges;     /* BPE merge lines, "left right" */
    uint32_t n_merges;
} vf_vocab;

void vf_add(vf_vocab *v, const char *piece, int32_t type);
void vf_add_scored(vf_vocab *v, const char *piece, int32_t type, float score);
void vf_merge(vf_vocab *v, const char *line);
void vf_vocab_free(vf_vocab *v);

/* Starts a vocab-only GGUF holding v's pieces and types under the given
 * tokenizer.ggml.model; the caller adds the keys its case needs, then calls vf_write. */
ember_gguf_writer *vf_writer(const vf_vocab *v, const char *model);
/* Writes w to path (a failure is a check failure) and frees it. */
void vf_write(ember_gguf_writer *w, const char *path);

/* Opens the GGUF at path and loads its tokenizer; NULL (with a message) on failure. */
ember_tokenizer *vf_open(const char *path, ember_gguf **g);
/* The same for a file under ../shared, path relative to it. */
ember_tokenizer *vf_open_shared(const char *shared, const char *rel, ember_gguf **g);
void vf_close(ember_tokenizer *t, ember_gguf *g);

/* The Llama 2 (SentencePiece) vocabulary both test programs use, under ../shared. */
#define VF_LLAMA_SPM_VOCAB "testdata/tokenizer/llama-spm/llama2-spm-vocab.v3.gguf"

/* Encodes (a failed call or an overflow of cap is a check failure); returns the count
 * stored in ids, at most cap. vf_encode: NUL-terminated text, no flags. */
size_t vf_encode_flags(const ember_tokenizer *t, const char *text, size_t len, unsigned flags,
                       uint32_t *ids, size_t cap);
size_t vf_encode(const ember_tokenizer *t, const char *text, uint32_t *ids, size_t cap);
bool vf_ids_equal(const uint32_t *a, size_t na, const uint32_t *b, size_t nb);
/* Checks that text (no flags) encodes to exactly want[n_want]. */
void vf_check_ids(const ember_tokenizer *t, const char *text, const uint32_t *want, size_t n_want);
/* Decodes ids one by one (no streaming) into a malloc'd NUL-terminated string; *len (when
 * len is not NULL) gets its length, which counts any NUL bytes decoded from <0x00>. */
char *vf_decode(const ember_tokenizer *t, const uint32_t *ids, size_t n, size_t *len);

/* A whole file, NUL-terminated and malloc'd; NULL when it cannot be read. */
char *vf_read_file(const char *path);
/* Parses up to cap decimal ids separated by white space; returns the count. */
size_t vf_parse_ids(const char *s, uint32_t *out, size_t cap);

/* llama.cpp's vectors for a vocabulary: shared/testdata/tokenizer/NAME/ggml-vocab-NAME.gguf
 * .inp (texts between "\n__ggml_vocab_test__\n" lines) and .out (a line of ids per text).
 * Every case must encode (no flags) to its line, there must be at least min_cases, and
 * every line must be used. Returns false (a check failure) when the files are missing. */
bool vf_check_vectors(const ember_tokenizer *t, const char *shared, const char *name,
                      int min_cases);

#endif
