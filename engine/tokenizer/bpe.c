/* bpe.c — GPT-2 byte-level BPE ("gpt2" vocabularies: GPT-2, Llama 3, Qwen2,
 * SmolLM, ...), as llama.cpp's llm_tokenizer_bpe does it.
 *
 * Encoding: the pre-tokenizer cuts the text into words (pretokenize.c); each byte of a
 * word becomes one character of GPT-2's byte-to-unicode alphabet (printable Latin-1
 * bytes stand for themselves, the other 68 map to U+0100..U+0143, so that every piece
 * is printable text); then the adjacent pair with the lowest merge rank (its line in
 * tokenizer.ggml.merges), leftmost on ties, is joined until no pair is a merge. Each
 * final symbol is a token. Decoding maps the characters of a piece back to bytes.
 *
 * Merges are matched by text, not by token id, as llama.cpp does: a merge may build an
 * intermediate symbol that is not itself in the vocabulary. */
#include "common/alloc.h"
#include "bpe.h"

#include <stdlib.h>
#include <string.h>

#include "merge.h"
#include "utf8.h"

/* ---- the merge table ----------------------------------------------------------- */

static uint64_t fnv_step(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

/* The hash of "left right": what a merge line is stored as, so insertion hashes the
 * line and lookup hashes the pair without joining it. */
static uint64_t pair_hash(const char *l, size_t ln, const char *r, size_t rn)
{
    return fnv_step(fnv_step(fnv_step(0xcbf29ce484222325ull, l, ln), " ", 1), r, rn);
}

static bool merge_is(const bpe_merges *m, uint32_t i, const char *l, size_t ln,
                     const char *r, size_t rn)
{
    const bpe_merge *e = &m->m[i];
    const char *s = m->text + e->off;
    return e->left_len == ln && e->right_len == rn && memcmp(s, l, ln) == 0 &&
           memcmp(s + ln + 1, r, rn) == 0;
}

/* The rank of merge (l, r), or -1. */
static int64_t merge_rank(const bpe_merges *m, const char *l, size_t ln, const char *r, size_t rn)
{
    for (uint64_t i = pair_hash(l, ln, r, rn) & m->mask;; i = (i + 1) & m->mask) {
        uint32_t e = m->table[i];
        if (e == 0)
            return -1;
        if (merge_is(m, e - 1, l, ln, r, rn))
            return e - 1;
    }
}

/* A repeated pair keeps its first (best) rank, as llama.cpp's map emplace does. */
static void merge_insert(bpe_merges *m, uint32_t idx)
{
    const bpe_merge *e = &m->m[idx];
    const char *l = m->text + e->off, *r = l + e->left_len + 1;
    for (uint64_t i = pair_hash(l, e->left_len, r, e->right_len) & m->mask;;
         i = (i + 1) & m->mask) {
        uint32_t cur = m->table[i];
        if (cur == 0) {
            m->table[i] = idx + 1;
            return;
        }
        if (merge_is(m, cur - 1, l, e->left_len, r, e->right_len))
            return;
    }
}

static ember_status copy_merges(bpe_merges *m, const ember_gguf *g, const ember_gguf_kv *kv,
                                ember_err *err)
{
    uint64_t total = 0;
    for (uint64_t i = 0; i < kv->arr_n; i++)
        total += kv->arr_str[i].len;
    if (kv->arr_n >= UINT32_MAX / 4 || total >= UINT32_MAX)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: tokenizer.ggml.merges is too large", g->path);
    m->n = (uint32_t)kv->arr_n;
    m->text = ember_malloc(total ? total : 1);
    m->m = ember_calloc(m->n ? m->n : 1, sizeof *m->m);
    if (!m->text || !m->m)
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory loading BPE merges");
    uint32_t o = 0;
    for (uint32_t i = 0; i < m->n; i++) {
        ember_gguf_str s = kv->arr_str[i];
        memcpy(m->text + o, s.ptr, s.len);
        /* split at the first space after the first byte, as llama.cpp does */
        const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', s.len - 1) : NULL;
        m->m[i].off = o;
        m->m[i].left_len = sp ? (uint32_t)(sp - s.ptr) : 0;
        m->m[i].right_len = sp ? (uint32_t)(s.len - (uint64_t)(sp - s.ptr) - 1) : 0;
        o += (uint32_t)s.len;
    }
    return EMBER_OK;
}

static ember_status load_merges(ember_tokenizer *t, const ember_gguf *g, ember_err *err)
{
    const ember_gguf_kv *kv = NULL;
    ember_status st = ember_gguf_get_arr(g, "tokenizer.ggml.merges", EMBER_GGUF_STRING, &kv, err);
    if (st)
        return st;
    bpe_merges *m = &t->merges;
    if ((st = copy_merges(m, g, kv, err)))
        return st;
    uint64_t cap = 16;
    while (cap < 2ull * m->n)
        cap *= 2;
    m->table = ember_calloc(cap, sizeof *m->table);
    if (!m->table)
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory indexing BPE merges");
    m->mask = cap - 1;
    for (uint32_t i = 0; i < m->n; i++)
        if (m->m[i].left_len) /* a line without a space is no merge */
            merge_insert(m, i);
    return EMBER_OK;
}

/* GPT-2's bytes_to_unicode(): printable bytes keep their code point, the rest take
 * U+0100 onwards in byte order. */
static void build_byte_map(ember_tokenizer *t)
{
    int extra = 0;
    for (int i = 0; i < 324; i++)
        t->cp_byte[i] = -1;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) ||
                         (b >= 0xae && b <= 0xff);
        t->byte_cp[b] = (uint16_t)(printable ? b : 256 + extra++);
        t->cp_byte[t->byte_cp[b]] = (int16_t)b;
    }
}

ember_status ember_bpe_load(ember_tokenizer *t, const ember_gguf *g, ember_err *err)
{
    build_byte_map(t);
    ember_status st = load_merges(t, g, err);
    if (st)
        return st;
    const ember_gguf_kv *pre = ember_gguf_find(g, "tokenizer.ggml.pre");
    if (pre && pre->type != EMBER_GGUF_STRING)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: tokenizer.ggml.pre is not a string", g->path);
    const char *name = pre ? pre->v.str.ptr : "gpt-2";
    size_t len = pre ? pre->v.str.len : strlen(name);
    if ((st = ember_pretok_create(name, len, &t->pre, err)))
        return ember_fail_ctx(err, st, "%s", g->path);
    t->ignore_merges = ember_pretok_ignore_merges(t->pre);
    return EMBER_OK;
}

void ember_bpe_free(ember_tokenizer *t)
{
    ember_free(t->merges.text);
    ember_free(t->merges.m);
    ember_free(t->merges.table);
    ember_pretok_free(t->pre);
}

/* ---- encoding ------------------------------------------------------------------ */

typedef struct bpe_session {
    const ember_tokenizer *t;
    char *enc;              /* the current word in GPT-2's alphabet */
    ember_symbol *sym;
    ember_bigram *queue;
    size_t cap;             /* the longest word the buffers hold */
    ember_tok_out *o;
    ember_err *err;
} bpe_session;

/* Buffers grow to the longest word seen, not to the text: words are short. */
static ember_status reserve(bpe_session *s, size_t len)
{
    if (len <= s->cap)
        return EMBER_OK;
    size_t cap = s->cap ? s->cap : 64;
    while (cap < len)
        cap *= 2;
    char *enc = ember_realloc(s->enc, 2 * cap);
    if (enc)
        s->enc = enc;
    ember_symbol *sym = enc ? ember_realloc(s->sym, cap * sizeof *sym) : NULL;
    if (sym)
        s->sym = sym;
    /* n-1 initial pairs + at most 2 per merge */
    ember_bigram *q = sym ? ember_realloc(s->queue, 3 * cap * sizeof *q) : NULL;
    if (!q)
        return ember_fail(s->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory tokenizing a word of "
                          "%zu bytes", len);
    s->queue = q;
    s->cap = cap;
    return EMBER_OK;
}

/* A pair joins when tokenizer.ggml.merges lists it; the lowest rank joins first. */
static bool pair_key(void *ctx, const ember_symbol *l, const ember_symbol *r, double *key)
{
    const bpe_session *s = ctx;
    int64_t rank = merge_rank(&s->t->merges, s->enc + l->start, l->n, s->enc + r->start, r->n);
    *key = (double)rank;
    return rank >= 0;
}

/* A final symbol's token. One that is not in the vocabulary (only possible when the
 * vocabulary lacks merge results or byte characters) goes out character by character,
 * each as its token, <unk>, or nothing (llama.cpp's choice) when there is neither. */
static void emit_symbol(bpe_session *s, const char *p, size_t n)
{
    uint32_t id = ember_tok_lookup(s->t, p, n);
    if (id != EMBER_TOKEN_NONE) {
        ember_tok_emit(s->o, id);
        return;
    }
    for (size_t i = 0; i < n;) {
        size_t cl = ember_utf8_len((const unsigned char *)p + i, n - i);
        id = ember_tok_lookup(s->t, p + i, cl);
        if (id == EMBER_TOKEN_NONE)
            id = s->t->unk;
        if (id != EMBER_TOKEN_NONE)
            ember_tok_emit(s->o, id);
        i += cl;
    }
}

/* Writes the word in GPT-2's alphabet to s->enc, one symbol per byte (len symbols);
 * returns the encoded length in bytes. */
static size_t encode_bytes(bpe_session *s, const char *word, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        size_t cl = ember_utf8_encode(s->t->byte_cp[(uint8_t)word[i]], s->enc + o);
        s->sym[i] = (ember_symbol){ o, cl, (int64_t)i - 1, (int64_t)i + 1 };
        o += cl;
    }
    s->sym[len - 1].next = -1;
    return o;
}

static ember_status encode_word(void *ctx, const char *word, size_t len)
{
    bpe_session *s = ctx;
    ember_status st = reserve(s, len);
    if (st || len == 0)
        return st;
    size_t n = encode_bytes(s, word, len);
    if (s->t->ignore_merges) {
        uint32_t id = ember_tok_lookup(s->t, s->enc, n);
        if (id != EMBER_TOKEN_NONE) {
            ember_tok_emit(s->o, id);
            return EMBER_OK;
        }
    }
    ember_merge_symbols(s->sym, len, s->queue, pair_key, s);
    for (int64_t i = 0; i >= 0; i = s->sym[i].next)
        emit_symbol(s, s->enc + s->sym[i].start, s->sym[i].n);
    return EMBER_OK;
}

ember_status ember_bpe_encode(const ember_tokenizer *t, const char *text, size_t len,
                              ember_tok_out *o, ember_err *err)
{
    bpe_session s = { t, NULL, NULL, NULL, 0, o, err };
    ember_status st = ember_pretok_split(t->pre, text, len, encode_word, &s, err);
    ember_free(s.enc), ember_free(s.sym), ember_free(s.queue);
    return st;
}

/* ---- decoding ------------------------------------------------------------------ */

/* Maps each character of a normal piece back to its byte; a character outside GPT-2's
 * alphabet (or a malformed byte) is copied as it is. */
static size_t unmap_piece(const ember_tokenizer *t, const char *p, size_t n, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t cl = 1;
        uint32_t cp = 0;
        ember_utf8_result r = ember_utf8_decode((const unsigned char *)p + i, n - i, &cl, &cp);
        if (r == EMBER_UTF8_OK && cp < 324 && t->cp_byte[cp] >= 0) {
            char c = (char)t->cp_byte[cp];
            o = ember_tok_put(buf, cap, o, &c, 1);
        } else {
            o = ember_tok_put(buf, cap, o, p + i, cl);
        }
        i += cl;
    }
    return o;
}

size_t ember_bpe_decode(const ember_tokenizer *t, uint32_t id, char *buf, size_t cap)
{
    size_t n;
    const char *p = ember_tok_piece(t, id, &n);
    switch (t->types[id]) {
    case TOK_UNKNOWN:
        return 0;
    case TOK_USER: /* added tokens are stored as plain text */
        return ember_tok_put(buf, cap, 0, p, n);
    case TOK_BYTE: {
        int b = ember_tok_byte_piece(p, n);
        char c = (char)b;
        return b >= 0 ? ember_tok_put(buf, cap, 0, &c, 1) : 0;
    }
    default:
        return unmap_piece(t, p, n, buf, cap);
    }
}
