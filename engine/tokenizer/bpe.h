/* bpe.h — GPT-2 byte-level BPE ("gpt2") loading, encoding and decoding (bpe.c).
 * Library-internal. */
#ifndef EMBER_BPE_H
#define EMBER_BPE_H

#include "engine/model/gguf.h"
#include "vocab.h"

/* Reads tokenizer.ggml.merges and tokenizer.ggml.pre into t. */
ember_status ember_bpe_load(ember_tokenizer *t, const ember_gguf *g, ember_err *err);
void ember_bpe_free(ember_tokenizer *t);
/* Encodes one fragment of plain text: pre-tokenized into words, each merged by rank. */
ember_status ember_bpe_encode(const ember_tokenizer *t, const char *text, size_t len,
                              ember_tok_out *o, ember_err *err);
/* The bytes of token id (GPT-2 characters mapped back); returns the full length. */
size_t ember_bpe_decode(const ember_tokenizer *t, uint32_t id, char *buf, size_t cap);

#endif
