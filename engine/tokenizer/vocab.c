/* vocab.c — looking pieces up in the vocabulary, and the output helpers the encoders
 * and decoders share (vocab.h). */
#include "common/alloc.h"
#include "vocab.h"

#include <stdlib.h>
#include <string.h>

static uint64_t piece_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

const char *ember_tok_piece(const ember_tokenizer *t, uint32_t id, size_t *len)
{
    *len = t->off[id + 1] - t->off[id];
    return t->text + t->off[id];
}

bool ember_tok_piece_is(const ember_tokenizer *t, uint32_t id, const char *s, size_t n)
{
    size_t len;
    const char *p = ember_tok_piece(t, id, &len);
    return len == n && memcmp(p, s, n) == 0;
}

uint32_t ember_tok_lookup(const ember_tokenizer *t, const char *s, size_t n)
{
    for (uint64_t i = piece_hash(s, n) & t->table_mask;; i = (i + 1) & t->table_mask) {
        uint32_t e = t->table[i];
        if (e == 0)
            return EMBER_TOKEN_NONE;
        if (ember_tok_piece_is(t, e - 1, s, n))
            return e - 1;
    }
}

/* Pieces that plain text may turn into. Control (<s>, <|im_start|>), unknown, unused
 * and byte pieces never come out of a merge. */
bool ember_tok_mergeable(uint8_t type)
{
    return type != TOK_UNKNOWN && type != TOK_CONTROL && type != TOK_UNUSED && type != TOK_BYTE;
}

static void table_insert(ember_tokenizer *t, uint32_t id)
{
    size_t n;
    const char *s = ember_tok_piece(t, id, &n);
    for (uint64_t i = piece_hash(s, n) & t->table_mask;; i = (i + 1) & t->table_mask) {
        uint32_t e = t->table[i];
        if (e == 0 || ember_tok_piece_is(t, e - 1, s, n)) {
            t->table[i] = id + 1; /* a duplicate piece: the later id wins, as in llama.cpp */
            return;
        }
    }
}

int ember_tok_byte_piece(const char *s, size_t n)
{
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
        return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
              : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

void ember_tok_emit(ember_tok_out *o, uint32_t id)
{
    if (o->n < o->cap)
        o->ids[o->n] = id;
    o->n++;
}

size_t ember_tok_put(char *buf, size_t cap, size_t at, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (at + i < cap)
            buf[at + i] = s[i];
    return at + n;
}


ember_status ember_tok_index(ember_tokenizer *t, ember_err *err)
{
    uint64_t cap = 16;
    while (cap < 2ull * t->n_vocab)
        cap *= 2;
    t->table = ember_calloc(cap, sizeof *t->table);
    if (!t->table)
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory indexing the vocabulary");
    t->table_mask = cap - 1;
    for (int b = 0; b < 256; b++)
        t->byte_token[b] = EMBER_TOKEN_NONE;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        if (ember_tok_mergeable(t->types[i]))
            table_insert(t, i);
        size_t n;
        const char *p = ember_tok_piece(t, i, &n);
        t->max_piece = n > t->max_piece ? n : t->max_piece;
        int b = ember_tok_byte_piece(p, n);
        if (t->types[i] == TOK_BYTE && b >= 0 && t->byte_token[b] == EMBER_TOKEN_NONE)
            t->byte_token[b] = i;
    }
    return EMBER_OK;
}
