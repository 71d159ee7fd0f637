/* tokenizer.h — text <-> token ids from the vocabulary in GGUF metadata.
 *
 * This version: SentencePiece-style vocabularies (tokenizer.ggml.model = "llama"):
 * tokenizer.ggml.tokens / scores / token_type, bos/eos/unknown ids, add_bos_token.
 * Spaces become U+2581, a dummy-prefix space is added, pieces are merged by highest
 * score (SPM BPE as llama.cpp does it) and bytes without a piece fall back to <0xXX>. */
#ifndef EMBER_TOKENIZER_H
#define EMBER_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

typedef struct ember_tokenizer ember_tokenizer;

ember_status ember_tokenizer_load(const ember_gguf *g, ember_tokenizer **out, ember_err *err);
void ember_tokenizer_free(ember_tokenizer *t);

uint32_t ember_tokenizer_n_vocab(const ember_tokenizer *t);
uint32_t ember_tokenizer_bos(const ember_tokenizer *t);
uint32_t ember_tokenizer_eos(const ember_tokenizer *t);
uint32_t ember_tokenizer_unk(const ember_tokenizer *t);
/* tokenizer.ggml.add_bos_token (default true): whether a text prompt gets BOS. */
bool ember_tokenizer_add_bos(const ember_tokenizer *t);
/* Whether id is a control token (<s>, </s>, ...), which decodes to "". */
bool ember_tokenizer_is_control(const ember_tokenizer *t, uint32_t id);

/* Writes at most cap ids; *n_out gets the full count. */
ember_status ember_tokenizer_encode(const ember_tokenizer *t, const char *text, size_t len,
                                    bool add_bos, uint32_t *out, size_t cap, size_t *n_out,
                                    ember_err *err);
/* The bytes token id stands for (U+2581 -> ' ', <0xXX> -> that byte; control tokens
 * give ""). Writes at most cap bytes; returns the full length. */
size_t ember_tokenizer_decode(const ember_tokenizer *t, uint32_t id, char *buf, size_t cap);

#endif
