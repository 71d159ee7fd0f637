/* vocab_trie.c — the vocabulary's pieces sorted by their bytes, then laid out as a trie in
 * depth-first order: each token adds the nodes past its longest common prefix with the
 * token before it, and a node's subtree ends where a later token's prefix leaves it. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "engine/tokenizer/utf8.h"
#include "vocab_trie.h"

/* qsort has no context argument: the pieces travel in the keys. */
typedef struct key {
    const ember_vtrie_piece *p;
    uint32_t id;
} key;

static int by_bytes(const void *a, const void *b)
{
    const key *x = a, *y = b;
    uint32_t n = x->p->len < y->p->len ? x->p->len : y->p->len;
    int c = n ? memcmp(x->p->bytes, y->p->bytes, n) : 0;
    if (c) return c;
    if (x->p->len != y->p->len) return x->p->len < y->p->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static uint32_t common_prefix(const ember_vtrie_piece *a, const ember_vtrie_piece *b)
{
    uint32_t n = a->len < b->len ? a->len : b->len, i = 0;
    while (i < n && a->bytes[i] == b->bytes[i]) i++;
    return i;
}

static bool alloc_nodes(ember_vtrie *v, size_t cap)
{
    v->byte = ember_malloc(cap);
    v->depth = ember_malloc(cap * sizeof *v->depth);
    v->end = ember_malloc(cap * sizeof *v->end);
    v->tok_first = ember_malloc(cap * sizeof *v->tok_first);
    v->tok_n = ember_calloc(cap, sizeof *v->tok_n);
    return v->byte && v->depth && v->end && v->tok_first && v->tok_n;
}

/* Lays the sorted keys out as nodes; open[d] is the node at depth d + 1 on the current
 * path, whose end is set when the path leaves it. */
static void lay_out(ember_vtrie *v, const key *keys, uint32_t n, uint32_t *open)
{
    uint32_t path = 0; /* depth of the current path */
    const ember_vtrie_piece *prev = NULL;
    for (uint32_t k = 0; k < n; k++) {
        const ember_vtrie_piece *p = keys[k].p;
        uint32_t l = prev ? common_prefix(prev, p) : 0;
        for (; path > l; path--) v->end[open[path - 1]] = v->n_nodes;
        for (; path < p->len; path++) {
            uint32_t i = v->n_nodes++;
            v->byte[i] = p->bytes[path];
            v->depth[i] = (uint16_t)(path + 1);
            v->tok_first[i] = 0;
            open[path] = i;
        }
        uint32_t at = open[p->len - 1];
        if (!v->tok_n[at]) v->tok_first[at] = v->n_ids;
        v->tok_n[at]++;
        v->ids[v->n_ids++] = keys[k].id;
        prev = p;
    }
    for (; path > 0; path--) v->end[open[path - 1]] = v->n_nodes;
}

/* Whether bytes[0..n) are well-formed UTF-8 from a character's start, the last character
 * perhaps unfinished. */
static bool well_formed(const uint8_t *bytes, uint32_t n)
{
    for (size_t i = 0, len; i < n; i += len) {
        uint32_t cp;
        ember_utf8_result r = ember_utf8_decode(bytes + i, n - i, &len, &cp);
        if (r == EMBER_UTF8_INVALID) return false;
        if (r == EMBER_UTF8_TRUNCATED) return true;
    }
    return true;
}

/* Token t's ASCII bytes, whether it has others, and its characters. */
static void summarise(ember_vtrie *v, uint32_t t, const uint8_t *bytes, uint32_t len)
{
    uint32_t chars = 0;
    v->ascii[2 * t] = v->ascii[2 * t + 1] = 0;
    v->high[t] = 0;
    for (uint32_t i = 0; i < len; i++) {
        if (bytes[i] < 0x80) v->ascii[2 * t + bytes[i] / 64] |= 1ull << (bytes[i] % 64);
        else v->high[t] = 1;
        chars += (bytes[i] & 0xC0) != 0x80; /* a character starts: ASCII or a lead byte */
    }
    v->chars[t] = (uint8_t)(chars < 255 ? chars : 255);
}

/* Each token's bytes by id, whether they are well-formed, and their summary. */
static bool keep_pieces(ember_vtrie *v, const ember_vtrie_piece *pieces, size_t bytes)
{
    size_t n = (size_t)v->n_vocab + 1;
    v->pool = ember_malloc(bytes + 1);
    v->at = ember_malloc(sizeof *v->at * n);
    v->utf8_ok = ember_malloc(n);
    v->ascii = ember_malloc(sizeof *v->ascii * 2 * n);
    v->high = ember_malloc(n);
    v->chars = ember_malloc(n);
    if (!v->pool || !v->at || !v->utf8_ok || !v->ascii || !v->high || !v->chars) return false;
    uint32_t at = 0;
    for (uint32_t i = 0; i < v->n_vocab; i++) {
        uint32_t len = pieces[i].bytes ? pieces[i].len : 0;
        v->at[i] = at;
        if (len) memcpy(v->pool + at, pieces[i].bytes, len);
        v->utf8_ok[i] = well_formed(v->pool + at, len);
        summarise(v, i, v->pool + at, len);
        at += len;
    }
    v->at[v->n_vocab] = at;
    return true;
}

ember_status ember_vtrie_build(const ember_vtrie_piece *pieces, uint32_t n_vocab, ember_vtrie **out,
                               ember_err *err)
{
    ember_vtrie *v = *out = ember_calloc(1, sizeof *v);
    key *keys = ember_malloc(sizeof *keys * (n_vocab ? n_vocab : 1));
    uint32_t n = 0, n_eog = 0;
    size_t bytes = 0;
    if (!v || !keys) goto oom;
    v->n_vocab = n_vocab;
    for (uint32_t i = 0; i < n_vocab; i++) {
        n_eog += pieces[i].eog != 0;
        if (!pieces[i].bytes || !pieces[i].len) continue;
        if (pieces[i].len > UINT16_MAX) {
            ember_free(keys);
            ember_vtrie_free(v);
            *out = NULL;
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "grammar: token %u is %u bytes long (at most 65535)", i,
                              pieces[i].len);
        }
        keys[n++] = (key){&pieces[i], i};
        bytes += pieces[i].len;
        if (pieces[i].len > v->max_depth) v->max_depth = pieces[i].len;
    }
    qsort(keys, n, sizeof *keys, by_bytes);
    uint32_t *open = ember_malloc(sizeof *open * (v->max_depth + 1));
    v->ids = ember_malloc(sizeof *v->ids * (n + 1));
    v->eog = ember_malloc(sizeof *v->eog * (n_eog + 1));
    if (!open || !v->ids || !v->eog || !alloc_nodes(v, bytes + 1) || !keep_pieces(v, pieces, bytes)) {
        ember_free(open);
        goto oom;
    }
    for (uint32_t i = 0; i < n_vocab; i++)
        if (pieces[i].eog) v->eog[v->n_eog++] = i;
    lay_out(v, keys, n, open);
    ember_free(open);
    ember_free(keys);
    return EMBER_OK;
oom:
    ember_free(keys);
    ember_vtrie_free(v);
    *out = NULL;
    return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "grammar: out of memory for the vocabulary trie");
}

void ember_vtrie_free(ember_vtrie *v)
{
    if (!v) return;
    ember_free(v->byte);
    ember_free(v->depth);
    ember_free(v->end);
    ember_free(v->tok_first);
    ember_free(v->tok_n);
    ember_free(v->ids);
    ember_free(v->eog);
    ember_free(v->pool);
    ember_free(v->at);
    ember_free(v->utf8_ok);
    ember_free(v->ascii);
    ember_free(v->high);
    ember_free(v->chars);
    ember_free(v);
}
