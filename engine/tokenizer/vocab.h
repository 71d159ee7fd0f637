/* vocab.h — the vocabulary as the tokenizer's files see it (struct ember_tokenizer),
 * and the helpers they all use to look pieces up and write ids and bytes (vocab.c).
 * Library-internal: only engine/tokenizer/ includes it.
 *
 *   tokenizer.c    loading the vocabulary; the encode/decode entry points
 *   vocab.c        piece lookup and output helpers (this header)
 *   special.c      special tokens: the partition of text around them, the EOG set
 *   spm.c          SentencePiece-style merges by score ("llama")
 *   bpe.c          GPT-2 byte-level BPE merges by rank ("gpt2")
 *   merge.c        the merge loop both use: symbol list and bigram queue
 *   pretokenize.c  the regex pre-tokenizers that cut text into words (pretok_match.c
 *                  matches their patterns, with unicode_class.c's character classes)
 *   utf8.c         UTF-8 helpers
 *   detok.c        the streaming detokenizer */
#ifndef EMBER_VOCAB_H
#define EMBER_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "pretokenize.h"
#include "token.h"

/* Token types, numbered as in GGUF (llama.cpp's llama_token_type). */
enum { TOK_NORMAL = 1, TOK_UNKNOWN = 2, TOK_CONTROL = 3, TOK_USER = 4, TOK_UNUSED = 5,
       TOK_BYTE = 6 };

typedef enum { VOCAB_SPM, VOCAB_BPE } vocab_kind;

#define EMBER_MAX_EOG 16

/* One BPE merge "left right": rank = its index in tokenizer.ggml.merges. */
typedef struct bpe_merge {
    uint32_t off;         /* into bpe_merges.text: left, one space, right */
    uint32_t left_len, right_len;
} bpe_merge;

typedef struct bpe_merges {
    char *text;
    bpe_merge *m;
    uint32_t n;
    uint32_t *table;      /* open addressing: merge index + 1, 0 = empty */
    uint64_t mask;
} bpe_merges;

struct ember_tokenizer {
    vocab_kind kind;
    uint32_t n_vocab;
    char *text;           /* all pieces, back to back */
    uint64_t *off;        /* n_vocab + 1 offsets into text */
    float *scores;
    uint8_t *types;
    uint32_t *table;      /* open addressing: token id + 1, 0 = empty; mergeable pieces */
    uint64_t table_mask;
    uint32_t byte_token[256]; /* SPM <0xXX> ids, EMBER_TOKEN_NONE where absent */
    uint32_t bos, eos, unk;
    bool add_bos, add_space_prefix;
    size_t max_piece;     /* longest piece in bytes (decoding never makes one longer) */

    uint32_t *specials;   /* control, user-defined and unknown ids, longest text first */
    uint32_t n_specials;
    uint32_t eog[EMBER_MAX_EOG];
    uint32_t n_eog;

    /* BPE only */
    bpe_merges merges;
    uint16_t byte_cp[256];   /* GPT-2 byte -> code point */
    int16_t cp_byte[324];    /* code point -> byte, -1 when none (all are < 324) */
    ember_pretok *pre;
    bool ignore_merges;      /* a word that is itself a token is not merged (Llama 3) */
};

/* The piece of token id: *len bytes at the returned pointer (not NUL-terminated). */
const char *ember_tok_piece(const ember_tokenizer *t, uint32_t id, size_t *len);
/* Whether token id's piece is exactly s[0..n). */
bool ember_tok_piece_is(const ember_tokenizer *t, uint32_t id, const char *s, size_t n);
/* The mergeable token whose piece is s[0..n), or EMBER_TOKEN_NONE. */
uint32_t ember_tok_lookup(const ember_tokenizer *t, const char *s, size_t n);
/* Whether plain text may turn into a piece of this type (not control, unknown, unused
 * or byte). */
bool ember_tok_mergeable(uint8_t type);
/* "<0xAB>" -> 0xAB, or -1. */
int ember_tok_byte_piece(const char *s, size_t n);
/* Builds the lookup table of mergeable pieces, byte_token and max_piece from the loaded
 * pieces and types. */
ember_status ember_tok_index(ember_tokenizer *t, ember_err *err);

/* Output ids: written while they fit, always counted. */
typedef struct ember_tok_out {
    uint32_t *ids;
    size_t cap, n;
} ember_tok_out;

void ember_tok_emit(ember_tok_out *o, uint32_t id);

/* Writes s[0..n) at buf[at..] as far as cap allows; returns at + n. */
size_t ember_tok_put(char *buf, size_t cap, size_t at, const char *s, size_t n);

#endif
