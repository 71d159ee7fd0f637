/* spm.h — SentencePiece-style ("llama") encoding and decoding (spm.c). Library-internal. */
#ifndef EMBER_SPM_H
#define EMBER_SPM_H

#include "vocab.h"

/* Encodes one fragment of plain text; space_prefix adds SentencePiece's dummy prefix. */
ember_status ember_spm_encode(const ember_tokenizer *t, const char *text, size_t len,
                              bool space_prefix, ember_tok_out *o, ember_err *err);
/* The bytes of token id (U+2581 -> ' ', <0xXX> -> that byte); returns the full length. */
size_t ember_spm_decode(const ember_tokenizer *t, uint32_t id, char *buf, size_t cap);

#endif
