/* tokenizer.c — loading a vocabulary from GGUF metadata, and the encode/decode entry
 * points that dispatch to the SentencePiece (spm.c) or byte-level BPE (bpe.c)
 * algorithm. See docs/tokenizers.md for the rules. */
#include "common/alloc.h"
#include "tokenizer.h"

#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "special.h"
#include "spm.h"
#include "vocab.h"

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
    t->text = ember_malloc(total ? total : 1);
    t->off = ember_malloc((t->n_vocab + 1) * sizeof *t->off);
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

/* The type a vocabulary without tokenizer.ggml.token_type gives piece i: pieces that
 * look like <0xXX> are bytes (SPM only) and bos/eos are control. */
static uint8_t default_type(const ember_tokenizer *t, uint32_t i)
{
    size_t n;
    const char *p = ember_tok_piece(t, i, &n);
    if (t->kind == VOCAB_SPM && ember_tok_byte_piece(p, n) >= 0)
        return TOK_BYTE;
    if (i == t->bos || i == t->eos)
        return TOK_CONTROL;
    return i == t->unk ? TOK_UNKNOWN : TOK_NORMAL;
}

/* Scores and types are optional: without scores every SPM merge ties (leftmost first).
 * BPE ignores scores; merges carry the order. */
static ember_status load_scores_types(ember_tokenizer *t, const ember_gguf *g, ember_err *err)
{
    t->scores = ember_calloc(t->n_vocab, sizeof *t->scores);
    t->types = ember_malloc(t->n_vocab);
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
        double v = ty ? array_elem(ty, i) : 0;
        t->types[i] = !ty ? default_type(t, i) : v >= 0 && v <= 255 ? (uint8_t)v : 0;
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

/* The id of the piece s by linear search over every piece (control ones included). */
static uint32_t find_any(const ember_tokenizer *t, const char *s)
{
    size_t n = strlen(s);
    for (uint32_t i = 0; i < t->n_vocab; i++)
        if (ember_tok_piece_is(t, i, s, n))
            return i;
    return EMBER_TOKEN_NONE;
}

static bool id_ok(const ember_tokenizer *t, uint32_t id)
{
    return id == EMBER_TOKEN_NONE || id < t->n_vocab;
}

/* Defaults as llama.cpp's for SentencePiece vocabularies (bos 1, eos 2, unk 0, BOS
 * added, dummy prefix). For BPE: no unk, bos = eos = <|endoftext|> when there is one
 * (llama.cpp's default, id 11, is a comma in GPT-2), BOS as the pre-tokenizer says
 * (Llama 3: yes; GPT-2, Qwen2: no). */
static ember_status load_special_ids(ember_tokenizer *t, const ember_gguf *g, ember_err *err)
{
    if (t->kind == VOCAB_SPM) {
        t->bos = 1, t->eos = 2, t->unk = 0;
        t->add_bos = true, t->add_space_prefix = true;
    } else {
        t->bos = t->eos = find_any(t, "<|endoftext|>");
        t->unk = EMBER_TOKEN_NONE;
        t->add_bos = ember_pretok_add_bos(t->pre), t->add_space_prefix = false;
    }
    ember_status st;
    if ((st = ember_gguf_opt_u32(g, "tokenizer.ggml.bos_token_id", &t->bos, err)) ||
        (st = ember_gguf_opt_u32(g, "tokenizer.ggml.eos_token_id", &t->eos, err)) ||
        (st = ember_gguf_opt_u32(g, "tokenizer.ggml.unknown_token_id", &t->unk, err)) ||
        (st = opt_flag(g, "tokenizer.ggml.add_bos_token", &t->add_bos, err)) ||
        (st = opt_flag(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix, err)))
        return st;
    if (!id_ok(t, t->bos) || !id_ok(t, t->eos) || !id_ok(t, t->unk))
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: special token id out of range (vocab %u)",
                          g->path, t->n_vocab);
    return EMBER_OK;
}

static ember_status pick_kind(ember_tokenizer *t, const ember_gguf *g, ember_err *err)
{
    ember_gguf_str model;
    ember_status st = ember_gguf_get_str(g, "tokenizer.ggml.model", &model, err);
    if (st)
        return st;
    if (ember_gguf_str_eq(model, "llama"))
        t->kind = VOCAB_SPM;
    else if (ember_gguf_str_eq(model, "gpt2"))
        t->kind = VOCAB_BPE;
    else
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "%s: tokenizer.ggml.model '%.*s' is not "
                          "supported (only 'llama' and 'gpt2')", g->path,
                          (int)(model.len > 64 ? 64 : model.len), model.ptr);
    return EMBER_OK;
}

ember_status ember_tokenizer_load(const ember_gguf *g, ember_tokenizer **out, ember_err *err)
{
    *out = NULL;
    ember_tokenizer *t = ember_calloc(1, sizeof *t);
    if (!t)
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory loading the vocabulary");
    ember_status st;
    if ((st = pick_kind(t, g, err)) || (st = load_pieces(t, g, err)) ||
        (t->kind == VOCAB_BPE && (st = ember_bpe_load(t, g, err))) ||
        (st = load_special_ids(t, g, err)) || (st = load_scores_types(t, g, err)) ||
        (st = ember_special_load(t, g, err)) || (st = ember_tok_index(t, err))) {
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
    if (t->kind == VOCAB_BPE)
        ember_bpe_free(t);
    ember_free(t->text);
    ember_free(t->off);
    ember_free(t->scores);
    ember_free(t->types);
    ember_free(t->table);
    ember_free(t->specials);
    ember_free(t);
}

/* ---- properties ---------------------------------------------------------------- */

uint32_t ember_tokenizer_n_vocab(const ember_tokenizer *t) { return t->n_vocab; }
uint32_t ember_tokenizer_bos(const ember_tokenizer *t) { return t->bos; }
uint32_t ember_tokenizer_eos(const ember_tokenizer *t) { return t->eos; }
uint32_t ember_tokenizer_unk(const ember_tokenizer *t) { return t->unk; }
bool ember_tokenizer_add_bos(const ember_tokenizer *t) { return t->add_bos; }

const char *ember_tokenizer_model(const ember_tokenizer *t)
{
    return t->kind == VOCAB_SPM ? "llama" : "gpt2";
}

const char *ember_tokenizer_pre(const ember_tokenizer *t)
{
    return t->kind == VOCAB_BPE ? ember_pretok_name(t->pre) : "";
}

bool ember_tokenizer_is_control(const ember_tokenizer *t, uint32_t id)
{
    return id < t->n_vocab && t->types[id] == TOK_CONTROL;
}

bool ember_tokenizer_is_eog(const ember_tokenizer *t, uint32_t id)
{
    for (uint32_t i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id)
            return true;
    return false;
}

uint32_t ember_tokenizer_find_piece(const ember_tokenizer *t, const char *piece, size_t len)
{
    for (uint32_t i = 0; i < t->n_vocab; i++)
        if (ember_tok_piece_is(t, i, piece, len))
            return i;
    return EMBER_TOKEN_NONE;
}

/* ---- encoding and decoding ----------------------------------------------------- */

static ember_status encode_fragments(const ember_tokenizer *t, const char *text,
                                     const ember_fragment *f, size_t n, ember_tok_out *o,
                                     ember_err *err)
{
    bool after_special = true; /* SPM: the dummy prefix starts the text and follows specials */
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < n && !st; i++) {
        if (f[i].id != EMBER_TOKEN_NONE) {
            ember_tok_emit(o, f[i].id);
            after_special = true;
            continue;
        }
        if (t->kind == VOCAB_SPM)
            st = ember_spm_encode(t, text + f[i].start, f[i].len,
                                  t->add_space_prefix && after_special, o, err);
        else
            st = ember_bpe_encode(t, text + f[i].start, f[i].len, o, err);
        after_special = false;
    }
    return st;
}

ember_status ember_tokenizer_encode_ex(const ember_tokenizer *t, const char *text, size_t len,
                                       unsigned flags, uint32_t *out, size_t cap, size_t *n_out,
                                       ember_err *err)
{
    *n_out = 0;
    if (len > SIZE_MAX / 128)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "text too long to tokenize");
    if (!text && len)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "no text to tokenize");
    ember_tok_out o = { out, out ? cap : 0, 0 };
    if ((flags & EMBER_TOKENIZE_ADD_BOS) && t->bos != EMBER_TOKEN_NONE)
        ember_tok_emit(&o, t->bos);
    ember_fragment *f = NULL;
    size_t n = 0;
    ember_status st = ember_special_partition(t, text, len,
                                              (flags & EMBER_TOKENIZE_PARSE_SPECIAL) != 0,
                                              &f, &n, err);
    if (!st)
        st = encode_fragments(t, text, f, n, &o, err);
    ember_free(f);
    if (!st)
        *n_out = o.n;
    return st;
}

ember_status ember_tokenizer_encode(const ember_tokenizer *t, const char *text, size_t len,
                                    bool add_bos, uint32_t *out, size_t cap, size_t *n_out,
                                    ember_err *err)
{
    return ember_tokenizer_encode_ex(t, text, len, add_bos ? EMBER_TOKENIZE_ADD_BOS : 0, out,
                                     cap, n_out, err);
}

size_t ember_tokenizer_text(const ember_tokenizer *t, uint32_t id, char *buf, size_t cap)
{
    if (id >= t->n_vocab || t->types[id] != TOK_CONTROL) return ember_tokenizer_decode(t, id, buf, cap);
    size_t n = (size_t)(t->off[id + 1] - t->off[id]);
    if (buf && cap) memcpy(buf, t->text + t->off[id], n < cap ? n : cap);
    return n;
}

size_t ember_tokenizer_decode(const ember_tokenizer *t, uint32_t id, char *buf, size_t cap)
{
    if (!buf)
        cap = 0;
    if (id >= t->n_vocab || t->types[id] == TOK_CONTROL || t->types[id] == TOK_UNUSED)
        return 0;
    return t->kind == VOCAB_SPM ? ember_spm_decode(t, id, buf, cap)
                                : ember_bpe_decode(t, id, buf, cap);
}
