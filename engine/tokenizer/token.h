/* token.h — the two names every part of the tokenizer, and its users, share: the
 * vocabulary handle and "no such token". Library-internal. */
#ifndef EMBER_TOKEN_H
#define EMBER_TOKEN_H

#include <stdint.h>

typedef struct ember_tokenizer ember_tokenizer;

/* "No such token": what bos/eos/unk return when the vocabulary has none. */
#define EMBER_TOKEN_NONE UINT32_MAX

#endif
