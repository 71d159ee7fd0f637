/* tokenizer.h — text <-> token ids from the vocabulary in GGUF metadata.
 *
 * Two kinds of vocabulary (tokenizer.ggml.model), both as llama.cpp reads them:
 *  - "llama": SentencePiece-style. tokenizer.ggml.tokens / scores / token_type,
 *    bos/eos/unknown ids, add_bos_token. Spaces become U+2581, a dummy-prefix space is
 *    added, pieces are merged by highest score and bytes without a piece fall back to
 *    <0xXX>.
 *  - "gpt2": GPT-2 byte-level BPE. tokenizer.ggml.tokens (pieces in GPT-2's
 *    byte-to-unicode form), tokenizer.ggml.merges ("a b", best first), token_type,
 *    bos/eos ids, add_bos_token, and the pre-tokenizer tokenizer.ggml.pre ("gpt-2" when
 *    absent; also "llama-bpe", "qwen2", "gpt-4o", "smollm" and aliases, see docs/tokenizers.md).
 * Anything else, or an unknown pre-tokenizer, is EMBER_ERR_UNSUPPORTED.
 *
 * Special tokens: user-defined pieces (type 4) are always matched whole in text;
 * control (3) and unknown (2) pieces only with EMBER_TOKENIZE_PARSE_SPECIAL. */
#ifndef EMBER_TOKENIZER_H
#define EMBER_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ember.h"
#include "engine/model/gguf.h"
#include "token.h"


ember_status ember_tokenizer_load(const ember_gguf *g, ember_tokenizer **out, ember_err *err);
void ember_tokenizer_free(ember_tokenizer *t);

uint32_t ember_tokenizer_n_vocab(const ember_tokenizer *t);
uint32_t ember_tokenizer_bos(const ember_tokenizer *t);
uint32_t ember_tokenizer_eos(const ember_tokenizer *t);
uint32_t ember_tokenizer_unk(const ember_tokenizer *t);
/* tokenizer.ggml.add_bos_token; when absent: true for "llama" vocabularies and the
 * Llama 3 pre-tokenizer, false for other "gpt2" ones. */
bool ember_tokenizer_add_bos(const ember_tokenizer *t);
/* Whether id is a control token (<s>, </s>, <|im_end|>, ...), which decodes to "". */
bool ember_tokenizer_is_control(const ember_tokenizer *t, uint32_t id);
/* Whether id ends generation: EOS, tokenizer.ggml.eot_token_id / eom_token_id, and any
 * control token whose text is <|endoftext|>, <|im_end|>, <|eot_id|>, <|eom_id|>,
 * <|end|>, <|return|>, <|call|>, <end_of_turn>, <|end_of_text|>, <EOT>; but not <|end|>
 * where <|return|> and <|call|> are there too (gpt-oss's harmony: it ends a message). */
bool ember_tokenizer_is_eog(const ember_tokenizer *t, uint32_t id);
/* "llama" or "gpt2"; the pre-tokenizer's name ("" for "llama"). */
const char *ember_tokenizer_model(const ember_tokenizer *t);
const char *ember_tokenizer_pre(const ember_tokenizer *t);
/* The id whose piece is exactly piece[0..len) (any type; linear search, for setup code
 * such as picking a chat template), or EMBER_TOKEN_NONE. */
uint32_t ember_tokenizer_find_piece(const ember_tokenizer *t, const char *piece, size_t len);

/* Writes at most cap ids; *n_out gets the full count. Plain text: control tokens are
 * never produced (same as encode_ex with flags = add_bos ? EMBER_TOKENIZE_ADD_BOS : 0). */
ember_status ember_tokenizer_encode(const ember_tokenizer *t, const char *text, size_t len,
                                    bool add_bos, uint32_t *out, size_t cap, size_t *n_out,
                                    ember_err *err);

/* flags: ember.h's EMBER_TOKENIZE_*; ADD_BOS here prepends BOS whenever the vocabulary
 * has one (ember_tokenize asks ember_tokenizer_add_bos first). */
ember_status ember_tokenizer_encode_ex(const ember_tokenizer *t, const char *text, size_t len,
                                       unsigned flags, uint32_t *out, size_t cap, size_t *n_out,
                                       ember_err *err);

/* The bytes token id stands for (SPM: U+2581 -> ' ', <0xXX> -> that byte; BPE: GPT-2
 * characters -> bytes; control and unused tokens give ""). A piece may be part of a
 * UTF-8 character: use ember_detok (detok.h) to stream text. Writes at most cap bytes; returns
 * the full length. */
size_t ember_tokenizer_decode(const ember_tokenizer *t, uint32_t id, char *buf, size_t cap);
/* The same, except that a control token gives its piece ("<|im_end|>", "[TOOL_CALLS]"):
 * the text as a chat template writes it, for finding a lazy grammar's trigger. */
size_t ember_tokenizer_text(const ember_tokenizer *t, uint32_t id, char *buf, size_t cap);

#endif
