/* spm.c — SentencePiece-style ("llama") encoding and decoding.
 *
 * Encoding follows llama.cpp's llm_tokenizer_spm, which reproduces SentencePiece's BPE
 * mode: spaces become U+2581 and one is prepended, the text is split into UTF-8
 * characters, then the adjacent pair whose concatenation is a piece with the highest
 * score is merged (leftmost on ties) until no pair is a piece. Symbols left without a
 * piece fall back to byte tokens <0xXX>, or to <unk> when there are none.
 *
 * Only normal and user-defined pieces take part in merges: control (<s>), unknown,
 * unused and byte pieces are never produced from plain text. */
#include "common/alloc.h"
#include "spm.h"

#include <stdlib.h>
#include <string.h>

#include "merge.h"
#include "utf8.h"

#define SPACE_MARK "\xe2\x96\x81" /* U+2581, SentencePiece's visible space */

/* Spaces to U+2581, with the dummy prefix when asked. Returns a malloc'd buffer. */
static char *escape_text(const char *text, size_t len, bool space_prefix, size_t *n)
{
    char *s = ember_malloc(3 * len + 3 + 1);
    if (!s)
        return NULL;
    size_t o = 0;
    if (space_prefix) {
        memcpy(s, SPACE_MARK, 3);
        o = 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(s + o, SPACE_MARK, 3);
            o += 3;
        } else {
            s[o++] = text[i];
        }
    }
    *n = o;
    return s;
}

typedef struct spm_session {
    const ember_tokenizer *t;
    const char *text;
} spm_session;

/* A pair joins when the joined text is a piece; the highest score joins first. */
static bool pair_key(void *ctx, const ember_symbol *l, const ember_symbol *r, double *key)
{
    const spm_session *s = ctx;
    uint32_t id = ember_tok_lookup(s->t, s->text + l->start, l->n + r->n);
    *key = id == EMBER_TOKEN_NONE ? 0 : -(double)s->t->scores[id];
    return id != EMBER_TOKEN_NONE;
}

/* A symbol's token, or its bytes as byte tokens (a single-byte piece, or <unk>, when
 * the vocabulary has no <0xXX> for a byte). */
static void emit_symbol(const ember_tokenizer *t, const char *s, size_t n, ember_tok_out *o)
{
    uint32_t id = ember_tok_lookup(t, s, n);
    if (id != EMBER_TOKEN_NONE) {
        ember_tok_emit(o, id);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        id = t->byte_token[(uint8_t)s[i]];
        if (id == EMBER_TOKEN_NONE)
            id = ember_tok_lookup(t, s + i, 1);
        ember_tok_emit(o, id != EMBER_TOKEN_NONE ? id : t->unk);
    }
}

ember_status ember_spm_encode(const ember_tokenizer *t, const char *text, size_t len,
                              bool space_prefix, ember_tok_out *o, ember_err *err)
{
    if (len == 0)
        return EMBER_OK;
    size_t n = 0;
    char *s = escape_text(text, len, space_prefix, &n);
    ember_symbol *sym = ember_malloc(n * sizeof *sym);
    ember_bigram *q = ember_malloc(3 * n * sizeof *q); /* n-1 initial pairs + at most 2 per merge */
    if (!s || !sym || !q) {
        ember_free(s), ember_free(sym), ember_free(q);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory tokenizing %zu bytes", len);
    }
    size_t n_sym = 0;
    for (size_t i = 0; i < n; n_sym++) {
        size_t cl = ember_utf8_len((const unsigned char *)s + i, n - i);
        sym[n_sym] = (ember_symbol){ i, cl, (int64_t)n_sym - 1, (int64_t)n_sym + 1 };
        i += cl;
    }
    sym[n_sym - 1].next = -1;

    spm_session ss = { t, s };
    ember_merge_symbols(sym, n_sym, q, pair_key, &ss);
    for (int64_t i = 0; i >= 0; i = sym[i].next)
        emit_symbol(t, s + sym[i].start, sym[i].n, o);
    ember_free(s), ember_free(sym), ember_free(q);
    return EMBER_OK;
}

/* ---- decoding ------------------------------------------------------------------ */

size_t ember_spm_decode(const ember_tokenizer *t, uint32_t id, char *buf, size_t cap)
{
    size_t n;
    const char *p = ember_tok_piece(t, id, &n);
    uint8_t type = t->types[id];
    if (type == TOK_BYTE) {
        int b = ember_tok_byte_piece(p, n);
        if (b >= 0) {
            char c = (char)b;
            return ember_tok_put(buf, cap, 0, &c, 1);
        }
    }
    if (type == TOK_UNKNOWN) /* llama.cpp shows <unk> as U+2585 */
        return ember_tok_put(buf, cap, 0, "\xe2\x96\x85", 3);
    if (type == TOK_USER) /* user-defined pieces are literal text */
        return ember_tok_put(buf, cap, 0, p, n);
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        bool mark = i + 3 <= n && memcmp(p + i, SPACE_MARK, 3) == 0;
        o = ember_tok_put(buf, cap, o, mark ? " " : p + i, 1);
        i += mark ? 3 : 1;
    }
    return o;
}
