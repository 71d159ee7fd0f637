/* tokenizer_internal.h — what the tokenizer's files share, and nothing else includes.
 *
 *   tokenizer.c          loading the vocabulary, encode/decode entry points
 *   tokenizer_special.c  special tokens: the partition of text around them, EOG set
 *   tokenizer_spm.c      SentencePiece-style merges by score ("llama")
 *   tokenizer_bpe.c      GPT-2 byte-level BPE merges by rank ("gpt2")
 *   tokenizer_merge.c    the symbol list and bigram queue both merge loops use
 *   pretokenize.c        the regex pre-tokenizers (PCRE2) that cut text into words
 *   utf8.c               UTF-8 helpers
 *   detok.c              the streaming detokenizer */
#ifndef EMBER_TOKENIZER_INTERNAL_H
#define EMBER_TOKENIZER_INTERNAL_H

#include "tokenizer.h"

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

typedef struct ember_pretok ember_pretok;

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

/* ---- tokenizer.c --------------------------------------------------------------- */

uint64_t ember_tok_hash(const char *s, size_t n);
uint32_t ember_tok_lookup(const ember_tokenizer *t, const char *s, size_t n);
const char *ember_tok_piece(const ember_tokenizer *t, uint32_t id, size_t *len);
bool ember_tok_mergeable(uint8_t type);
/* "<0xAB>" -> 0xAB, or -1. */
int ember_tok_byte_piece(const char *s, size_t n);

/* Output ids: written while they fit, always counted. */
typedef struct ember_tok_out {
    uint32_t *ids;
    size_t cap, n;
} ember_tok_out;

void ember_tok_emit(ember_tok_out *o, uint32_t id);

/* Writes s[0..n) at buf[at..] as far as cap allows; returns at + n. */
size_t ember_tok_put(char *buf, size_t cap, size_t at, const char *s, size_t n);

/* ---- tokenizer_special.c ------------------------------------------------------- */

/* A piece of the text to encode: raw text (id == EMBER_TOKEN_NONE) or one special token. */
typedef struct ember_fragment {
    size_t start, len;
    uint32_t id;
} ember_fragment;

ember_status ember_special_load(ember_tokenizer *t, const ember_gguf *g, ember_err *err);
/* Cuts text around special tokens (user-defined always; control and unknown only when
 * parse_special). *out is malloc'd; the caller frees it. */
ember_status ember_special_partition(const ember_tokenizer *t, const char *text, size_t len,
                                     bool parse_special, ember_fragment **out, size_t *n_out,
                                     ember_err *err);

/* ---- tokenizer_spm.c / tokenizer_bpe.c ----------------------------------------- */

ember_status ember_spm_encode(const ember_tokenizer *t, const char *text, size_t len,
                              bool space_prefix, ember_tok_out *o, ember_err *err);
size_t ember_spm_decode(const ember_tokenizer *t, uint32_t id, char *buf, size_t cap);

ember_status ember_bpe_load(ember_tokenizer *t, const ember_gguf *g, ember_err *err);
void ember_bpe_free(ember_tokenizer *t);
ember_status ember_bpe_encode(const ember_tokenizer *t, const char *text, size_t len,
                              ember_tok_out *o, ember_err *err);
size_t ember_bpe_decode(const ember_tokenizer *t, uint32_t id, char *buf, size_t cap);

/* ---- tokenizer_merge.c --------------------------------------------------------- */

/* A run of text that is (for now) one token, linked to its neighbours. Merged-away
 * symbols get n = 0. */
typedef struct ember_symbol {
    size_t start, n;
    int64_t prev, next;
} ember_symbol;

/* A candidate merge of symbol left with symbol right. key orders the queue (lower
 * first, then leftmost); size is the combined length when queued, which tells a stale
 * entry from a live one because symbols only ever grow. */
typedef struct ember_bigram {
    double key;
    size_t left, right, size;
} ember_bigram;

typedef struct ember_bigram_queue {
    ember_bigram *a;
    size_t n;
} ember_bigram_queue;

void ember_bigram_push(ember_bigram_queue *q, ember_bigram b);
ember_bigram ember_bigram_pop(ember_bigram_queue *q);
/* Whether b still joins two live neighbours of the sizes it was queued with. */
bool ember_bigram_live(const ember_symbol *sym, const ember_bigram *b);
/* Merges b.right into b.left. */
void ember_symbol_merge(ember_symbol *sym, const ember_bigram *b);

/* ---- pretokenize.c ------------------------------------------------------------- */

/* Called for each word, in order; a non-OK status stops the split. */
typedef ember_status (*ember_word_fn)(void *ctx, const char *word, size_t len);

/* name: tokenizer.ggml.pre (not NUL-terminated). An unknown name gives
 * EMBER_ERR_UNSUPPORTED naming it. */
ember_status ember_pretok_create(const char *name, size_t name_len, ember_pretok **out,
                                 ember_err *err);
void ember_pretok_free(ember_pretok *p);
const char *ember_pretok_name(const ember_pretok *p);
bool ember_pretok_ignore_merges(const ember_pretok *p);
bool ember_pretok_add_bos(const ember_pretok *p);
/* Cuts text into words: every byte of text is in exactly one word, in order. */
ember_status ember_pretok_split(const ember_pretok *p, const char *text, size_t len,
                                ember_word_fn fn, void *ctx, ember_err *err);

/* ---- utf8.c -------------------------------------------------------------------- */

/* The length of the UTF-8 character at s[0..n), or 1 for a byte that does not start a
 * well-formed lead + continuation bytes (lenient: overlong forms pass). */
size_t ember_utf8_len(const unsigned char *s, size_t n);

typedef enum { EMBER_UTF8_OK, EMBER_UTF8_INVALID, EMBER_UTF8_TRUNCATED } ember_utf8_result;

/* Strict decoding of the character at s[0..n) (n >= 1). OK: *len bytes hold code point
 * *cp. INVALID: *len bytes are the maximal ill-formed subpart (Unicode's "maximal
 * subpart" rule), to be replaced by one U+FFFD. TRUNCATED: all n bytes are a valid but
 * unfinished prefix of a character. */
ember_utf8_result ember_utf8_decode(const unsigned char *s, size_t n, size_t *len, uint32_t *cp);
/* Writes the UTF-8 form of cp (< 0x110000) to out; returns its length (1..4). */
size_t ember_utf8_encode(uint32_t cp, char out[4]);

#endif
