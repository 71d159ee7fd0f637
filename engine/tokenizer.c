/* tokenizer.c — SentencePiece-style ("llama") vocabularies from GGUF metadata.
 *
 * Encoding follows llama.cpp's llm_tokenizer_spm, which reproduces SentencePiece's BPE
 * mode: spaces become U+2581 and one is prepended, the text is split into UTF-8
 * characters, then the adjacent pair whose concatenation is a piece with the highest
 * score is merged (leftmost on ties) until no pair is a piece. Symbols left without a
 * piece fall back to byte tokens <0xXX>, or to <unk> when there are none.
 *
 * Only normal and user-defined pieces take part in merges: control (<s>), unknown,
 * unused and byte pieces are never produced from plain text. */
#include "tokenizer.h"

#include <stdlib.h>
#include <string.h>

enum { TYPE_NORMAL = 1, TYPE_UNKNOWN = 2, TYPE_CONTROL = 3, TYPE_USER = 4, TYPE_UNUSED = 5,
       TYPE_BYTE = 6 };

#define NO_TOKEN UINT32_MAX
#define SPACE_MARK "\xe2\x96\x81" /* U+2581, SentencePiece's visible space */

struct ember_tokenizer {
    uint32_t n_vocab;
    char *text;           /* all pieces, back to back */
    uint64_t *off;        /* n_vocab + 1 offsets into text */
    float *scores;
    uint8_t *types;
    uint32_t *table;      /* open addressing: token id + 1, 0 = empty; mergeable pieces */
    uint64_t table_mask;
    uint32_t byte_token[256]; /* <0xXX> ids, NO_TOKEN where absent */
    uint32_t bos, eos, unk;
    bool add_bos, add_space_prefix;
};

/* ---- piece lookup -------------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

static size_t piece_len(const ember_tokenizer *t, uint32_t id) { return t->off[id + 1] - t->off[id]; }
static const char *piece(const ember_tokenizer *t, uint32_t id) { return t->text + t->off[id]; }

static uint32_t lookup(const ember_tokenizer *t, const char *s, size_t n)
{
    for (uint64_t i = hash_bytes(s, n) & t->table_mask;; i = (i + 1) & t->table_mask) {
        uint32_t e = t->table[i];
        if (e == 0)
            return NO_TOKEN;
        if (piece_len(t, e - 1) == n && memcmp(piece(t, e - 1), s, n) == 0)
            return e - 1;
    }
}

static bool mergeable(uint8_t type)
{
    return type != TYPE_UNKNOWN && type != TYPE_CONTROL && type != TYPE_UNUSED &&
           type != TYPE_BYTE;
}

static void table_insert(ember_tokenizer *t, uint32_t id)
{
    size_t n = piece_len(t, id);
    for (uint64_t i = hash_bytes(piece(t, id), n) & t->table_mask;; i = (i + 1) & t->table_mask) {
        uint32_t e = t->table[i];
        if (e == 0 || (piece_len(t, e - 1) == n && memcmp(piece(t, e - 1), piece(t, id), n) == 0)) {
            t->table[i] = id + 1; /* a duplicate piece: the later id wins, as in llama.cpp */
            return;
        }
    }
}

/* "<0xAB>" -> 0xAB, or -1. */
static int parse_byte_piece(const char *s, size_t n)
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

/* ---- loading ------------------------------------------------------------------- */

static ember_status load_pieces(ember_tokenizer *t, const ember_gguf *g, ember_err *err)
{
    const ember_gguf_kv *kv = ember_gguf_find(g, "tokenizer.ggml.tokens");
    if (!kv || kv->type != EMBER_GGUF_ARRAY || kv->arr_type != EMBER_GGUF_STRING)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: missing string array tokenizer.ggml.tokens",
                          g->path);
    if (kv->arr_n == 0 || kv->arr_n >= UINT32_MAX / 4)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: bad vocabulary size %llu", g->path,
                          (unsigned long long)kv->arr_n);
    t->n_vocab = (uint32_t)kv->arr_n;
    uint64_t total = 0;
    for (uint32_t i = 0; i < t->n_vocab; i++)
        total += kv->arr_str[i].len;
    t->text = malloc(total ? total : 1);
    t->off = malloc((t->n_vocab + 1) * sizeof *t->off);
    if (!t->text || !t->off)
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory loading the vocabulary");
    uint64_t o = 0;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        t->off[i] = o;
        memcpy(t->text + o, kv->arr_str[i].ptr, kv->arr_str[i].len);
        o += kv->arr_str[i].len;
    }
    t->off[t->n_vocab] = o;
    return EMBER_OK;
}

/* Element i of a numeric GGUF array as a double (arrays are packed little-endian). */
static double array_elem(const ember_gguf_kv *kv, uint64_t i)
{
    static const uint8_t size[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    int sz = kv->arr_type <= EMBER_GGUF_FLOAT64 ? size[kv->arr_type] : 0;
    const uint8_t *p = kv->arr_data + i * sz;
    uint64_t u = 0;
    for (int b = sz - 1; b >= 0; b--)
        u = (u << 8) | p[b];
    switch (kv->arr_type) {
    case EMBER_GGUF_INT8: return (int8_t)u;
    case EMBER_GGUF_INT16: return (int16_t)u;
    case EMBER_GGUF_INT32: return (int32_t)u;
    case EMBER_GGUF_INT64: return (double)(int64_t)u;
    case EMBER_GGUF_FLOAT32: { uint32_t w = (uint32_t)u; float f; memcpy(&f, &w, 4); return f; }
    case EMBER_GGUF_FLOAT64: { double d; memcpy(&d, &u, 8); return d; }
    default: return (double)u;
    }
}

static bool numeric_array(const ember_gguf_kv *kv)
{
    return kv->type == EMBER_GGUF_ARRAY && kv->arr_type != EMBER_GGUF_STRING &&
           kv->arr_type != EMBER_GGUF_ARRAY && kv->arr_type <= EMBER_GGUF_FLOAT64;
}

/* Scores and types are optional: without scores every merge ties (leftmost first);
 * without types, pieces that look like <0xXX> are bytes and bos/eos are control. */
static ember_status load_scores_types(ember_tokenizer *t, const ember_gguf *g, ember_err *err)
{
    t->scores = calloc(t->n_vocab, sizeof *t->scores);
    t->types = malloc(t->n_vocab);
    if (!t->scores || !t->types)
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory loading the vocabulary");
    const ember_gguf_kv *sc = ember_gguf_find(g, "tokenizer.ggml.scores");
    if (sc) {
        if (!numeric_array(sc) || sc->arr_n != t->n_vocab)
            return ember_fail(err, EMBER_ERR_FORMAT, "%s: tokenizer.ggml.scores is not %u numbers",
                              g->path, t->n_vocab);
        for (uint32_t i = 0; i < t->n_vocab; i++)
            t->scores[i] = (float)array_elem(sc, i);
    }
    const ember_gguf_kv *ty = ember_gguf_find(g, "tokenizer.ggml.token_type");
    if (ty && (!numeric_array(ty) || ty->arr_n != t->n_vocab))
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: tokenizer.ggml.token_type is not %u numbers",
                          g->path, t->n_vocab);
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        if (ty) {
            double v = array_elem(ty, i);
            t->types[i] = v >= 0 && v <= 255 ? (uint8_t)v : 0;
        } else {
            t->types[i] = parse_byte_piece(piece(t, i), piece_len(t, i)) >= 0 ? TYPE_BYTE
                        : i == t->bos || i == t->eos ? TYPE_CONTROL
                        : i == t->unk ? TYPE_UNKNOWN : TYPE_NORMAL;
        }
    }
    return EMBER_OK;
}

/* A boolean flag (GGUF bool, or any integer) with a default for when it is absent. */
static ember_status opt_flag(const ember_gguf *g, const char *key, bool *out, ember_err *err)
{
    const ember_gguf_kv *kv = ember_gguf_find(g, key);
    if (!kv)
        return EMBER_OK;
    if (kv->type == EMBER_GGUF_BOOL) {
        *out = kv->v.u64 != 0;
        return EMBER_OK;
    }
    uint32_t v = 0;
    ember_status st = ember_gguf_get_u32(g, key, &v, err);
    *out = v != 0;
    return st;
}

static ember_status load_special(ember_tokenizer *t, const ember_gguf *g, ember_err *err)
{
    /* llama.cpp's defaults for SentencePiece vocabularies */
    t->bos = 1, t->eos = 2, t->unk = 0;
    t->add_bos = true, t->add_space_prefix = true;
    ember_status st;
    if ((st = ember_gguf_opt_u32(g, "tokenizer.ggml.bos_token_id", &t->bos, err)) ||
        (st = ember_gguf_opt_u32(g, "tokenizer.ggml.eos_token_id", &t->eos, err)) ||
        (st = ember_gguf_opt_u32(g, "tokenizer.ggml.unknown_token_id", &t->unk, err)) ||
        (st = opt_flag(g, "tokenizer.ggml.add_bos_token", &t->add_bos, err)) ||
        (st = opt_flag(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix, err)))
        return st;
    if (t->bos >= t->n_vocab || t->eos >= t->n_vocab || t->unk >= t->n_vocab)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: special token id out of range (vocab %u)",
                          g->path, t->n_vocab);
    return EMBER_OK;
}

static ember_status build_index(ember_tokenizer *t, ember_err *err)
{
    uint64_t cap = 16;
    while (cap < 2ull * t->n_vocab)
        cap *= 2;
    t->table = calloc(cap, sizeof *t->table);
    if (!t->table)
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory indexing the vocabulary");
    t->table_mask = cap - 1;
    for (int b = 0; b < 256; b++)
        t->byte_token[b] = NO_TOKEN;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        if (mergeable(t->types[i]))
            table_insert(t, i);
        int b = parse_byte_piece(piece(t, i), piece_len(t, i));
        if (t->types[i] == TYPE_BYTE && b >= 0 && t->byte_token[b] == NO_TOKEN)
            t->byte_token[b] = i;
    }
    return EMBER_OK;
}

ember_status ember_tokenizer_load(const ember_gguf *g, ember_tokenizer **out, ember_err *err)
{
    *out = NULL;
    ember_gguf_str model;
    ember_status st = ember_gguf_get_str(g, "tokenizer.ggml.model", &model, err);
    if (st)
        return st;
    if (!ember_gguf_str_eq(model, "llama"))
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "%s: tokenizer.ggml.model '%.*s' is not "
                          "supported (only 'llama')", g->path,
                          (int)(model.len > 64 ? 64 : model.len), model.ptr);
    ember_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory loading the vocabulary");
    if ((st = load_pieces(t, g, err)) || (st = load_special(t, g, err)) ||
        (st = load_scores_types(t, g, err)) || (st = build_index(t, err))) {
        ember_tokenizer_free(t);
        return st;
    }
    *out = t;
    return EMBER_OK;
}

void ember_tokenizer_free(ember_tokenizer *t)
{
    if (!t)
        return;
    free(t->text);
    free(t->off);
    free(t->scores);
    free(t->types);
    free(t->table);
    free(t);
}

uint32_t ember_tokenizer_n_vocab(const ember_tokenizer *t) { return t->n_vocab; }
uint32_t ember_tokenizer_bos(const ember_tokenizer *t) { return t->bos; }
uint32_t ember_tokenizer_eos(const ember_tokenizer *t) { return t->eos; }
uint32_t ember_tokenizer_unk(const ember_tokenizer *t) { return t->unk; }
bool ember_tokenizer_add_bos(const ember_tokenizer *t) { return t->add_bos; }

bool ember_tokenizer_is_control(const ember_tokenizer *t, uint32_t id)
{
    return id < t->n_vocab && t->types[id] == TYPE_CONTROL;
}

/* ---- encoding ------------------------------------------------------------------ */

/* A run of text that is (for now) one token; linked to its neighbours. Merged-away
 * symbols get n = 0. */
typedef struct symbol {
    size_t start, n;
    int64_t prev, next;
} symbol;

/* A candidate merge of symbol left with its right neighbour; size is the combined
 * length when queued, which tells a stale entry from a live one. */
typedef struct bigram {
    float score;
    size_t left, size;
} bigram;

typedef struct heap {
    bigram *a;
    size_t n;
} heap;

/* a comes out of the queue before b: higher score first, then leftmost. */
static bool before(const bigram *a, const bigram *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(heap *h, bigram v)
{
    size_t i = h->n++;
    while (i > 0 && before(&v, &h->a[(i - 1) / 2])) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = v;
}

static bigram heap_pop(heap *h)
{
    bigram top = h->a[0], last = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(&h->a[c + 1], &h->a[c]))
            c++;
        if (!before(&h->a[c], &last))
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n)
        h->a[i] = last;
    return top;
}

/* The length of the UTF-8 character at s[0..n), or 1 for a byte that does not start a
 * valid sequence: bad bytes become one-byte symbols and fall back to byte tokens. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
               : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0 || len > n)
        return 1;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 1;
    return len;
}

/* Spaces to U+2581, with the dummy prefix. Returns a malloc'd buffer of *n bytes. */
static char *escape_text(const ember_tokenizer *t, const char *text, size_t len, size_t *n)
{
    char *s = malloc(3 * len + 3 + 1);
    if (!s)
        return NULL;
    size_t o = 0;
    if (t->add_space_prefix) {
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
    symbol *sym;
    heap queue;
} spm_session;

static void try_add_bigram(spm_session *s, int64_t left, int64_t right)
{
    if (left < 0 || right < 0)
        return;
    const symbol *l = &s->sym[left], *r = &s->sym[right];
    uint32_t id = lookup(s->t, s->text + l->start, l->n + r->n);
    if (id == NO_TOKEN)
        return;
    bigram b = { s->t->scores[id], (size_t)left, l->n + r->n };
    heap_push(&s->queue, b);
}

static void merge_all(spm_session *s)
{
    while (s->queue.n) {
        bigram b = heap_pop(&s->queue);
        symbol *l = &s->sym[b.left];
        if (l->n == 0 || l->next < 0)
            continue;
        symbol *r = &s->sym[l->next];
        if (l->n + r->n != b.size) /* one side changed since this was queued */
            continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            s->sym[r->next].prev = (int64_t)b.left;
        try_add_bigram(s, l->prev, (int64_t)b.left);
        try_add_bigram(s, (int64_t)b.left, l->next);
    }
}

typedef struct out_buf {
    uint32_t *ids;
    size_t cap, n;
} out_buf;

static void emit(out_buf *o, uint32_t id)
{
    if (o->n < o->cap)
        o->ids[o->n] = id;
    o->n++;
}

/* A symbol's token, or its bytes as byte tokens (a single-byte piece, or <unk>, when
 * the vocabulary has no <0xXX> for a byte). */
static void emit_symbol(const ember_tokenizer *t, const char *s, size_t n, out_buf *o)
{
    uint32_t id = lookup(t, s, n);
    if (id != NO_TOKEN) {
        emit(o, id);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t b = (uint8_t)s[i];
        id = t->byte_token[b];
        if (id == NO_TOKEN)
            id = lookup(t, s + i, 1);
        emit(o, id != NO_TOKEN ? id : t->unk);
    }
}

ember_status ember_tokenizer_encode(const ember_tokenizer *t, const char *text, size_t len,
                                    bool add_bos, uint32_t *out, size_t cap, size_t *n_out,
                                    ember_err *err)
{
    if (len > SIZE_MAX / 64)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "text too long to tokenize");
    out_buf o = { out, out ? cap : 0, 0 };
    if (add_bos)
        emit(&o, t->bos);
    if (len == 0) { /* SentencePiece: no dummy prefix for empty text */
        *n_out = o.n;
        return EMBER_OK;
    }
    size_t n = 0;
    char *s = escape_text(t, text, len, &n);
    symbol *sym = malloc(n * sizeof *sym);
    bigram *q = malloc(3 * n * sizeof *q); /* n-1 initial pairs + at most 2 per merge */
    if (!s || !sym || !q) {
        free(s), free(sym), free(q);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory tokenizing %zu bytes", len);
    }
    size_t n_sym = 0;
    for (size_t i = 0; i < n; n_sym++) {
        size_t cl = utf8_len((const unsigned char *)s + i, n - i);
        sym[n_sym] = (symbol){ i, cl, (int64_t)n_sym - 1, (int64_t)n_sym + 1 };
        i += cl;
    }
    sym[n_sym - 1].next = -1;

    spm_session ss = { t, s, sym, { q, 0 } };
    for (size_t i = 1; i < n_sym; i++)
        try_add_bigram(&ss, (int64_t)i - 1, (int64_t)i);
    merge_all(&ss);
    for (int64_t i = 0; i >= 0; i = sym[i].next)
        emit_symbol(t, s + sym[i].start, sym[i].n, &o);

    free(s), free(sym), free(q);
    *n_out = o.n;
    return EMBER_OK;
}

/* ---- decoding ------------------------------------------------------------------ */

static size_t put(char *buf, size_t cap, size_t at, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (at + i < cap)
            buf[at + i] = s[i];
    return at + n;
}

size_t ember_tokenizer_decode(const ember_tokenizer *t, uint32_t id, char *buf, size_t cap)
{
    if (!buf)
        cap = 0;
    if (id >= t->n_vocab || t->types[id] == TYPE_CONTROL || t->types[id] == TYPE_UNUSED)
        return 0;
    const char *p = piece(t, id);
    size_t n = piece_len(t, id);
    if (t->types[id] == TYPE_BYTE) {
        int b = parse_byte_piece(p, n);
        if (b >= 0) {
            char c = (char)b;
            return put(buf, cap, 0, &c, 1);
        }
    }
    if (t->types[id] == TYPE_UNKNOWN) /* llama.cpp shows <unk> as U+2585 */
        return put(buf, cap, 0, "\xe2\x96\x85", 3);
    if (t->types[id] == TYPE_USER) /* user-defined pieces are literal text */
        return put(buf, cap, 0, p, n);
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (i + 3 <= n && memcmp(p + i, SPACE_MARK, 3) == 0) {
            o = put(buf, cap, o, " ", 1);
            i += 3;
        } else {
            o = put(buf, cap, o, p + i, 1);
            i++;
        }
    }
    return o;
}
