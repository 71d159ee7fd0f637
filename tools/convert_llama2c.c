/* convert_llama2c.c — `ember convert llama2c CKPT.bin TOKENIZER.bin OUT.gguf`.
 *
 * llama2.c (github.com/karpathy/llama2.c) stores a model as a small header followed by
 * every weight as a flat float32 array in PyTorch's [out][in] row-major layout: the
 * same bytes as a ggml tensor with ne0 = in. Conversion is therefore a copy with names
 * and shapes. RoPE needs no permutation: llama2.c rotates adjacent pairs
 * (x[2i], x[2i+1]), as Ember and ggml's "normal" mode do.
 *
 * Checkpoint layouts (L = n_layers, [X] = only when the classifier is not shared):
 *  v0 (legacy, run.c): 7 int32 {dim, hidden_dim, n_layers, n_heads, n_kv_heads,
 *     vocab_size (negative: separate classifier), seq_len}; then token embedding,
 *     rms_att[L], wq[L], wk[L], wv[L], wo[L], rms_ffn[L], w1[L], w2[L], w3[L],
 *     rms_final, freq_cis_real and freq_cis_imag (seq_len * head_size / 2 each; not
 *     needed), [wcls].
 *  v1 (export.py --version 1): uint32 magic 0x616b3432 ("ak42"), int32 version, the 7
 *     ints, uint8 shared_classifier, zeros up to byte 256; then rms_att[L], rms_ffn[L],
 *     rms_final, token embedding, wq[L], wk[L], wv[L], wo[L], w1[L], w2[L], w3[L], [wcls].
 *  v2 (export.py --version 2, runq.c): as v1 with int32 group_size after the flag;
 *     norms float32, each matrix as int8 q[n] then float32 scale[n / group_size]
 *     (w = q * scale), one layer after the other. Dequantized to F32 here.
 * The file length must be exactly what the header implies.
 *
 * tokenizer.bin: int32 max_token_length, then per token {float32 score, int32 len,
 * len bytes}, as many tokens as the checkpoint's vocabulary. The GGUF vocabulary is
 * what llama.cpp's convert-llama2c-to-ggml writes: ids 0/1/2 become <unk>/<s>/</s>
 * (llama2.c stores "\n<s>\n" and "\n</s>\n") typed UNKNOWN/CONTROL/CONTROL, "<0xXX>"
 * pieces are BYTE, the rest NORMAL, and spaces become U+2581. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "convert_llama2c.h"
#include "platform/os_file.h"
#include "engine/model/gguf_write.h"

#define AK42_MAGIC 0x616b3432u
#define AK42_HEADER 256
#define LEGACY_HEADER 28
#define SPACE_MARK "\xe2\x96\x81" /* U+2581 */

enum { TYPE_NORMAL = 1, TYPE_UNKNOWN = 2, TYPE_CONTROL = 3, TYPE_BYTE = 6 };

/* The weights of a checkpoint. */
typedef enum wkind {
    W_EMB, W_ATT_NORM, W_WQ, W_WK, W_WV, W_WO, W_FFN_NORM, W_W1, W_W2, W_W3,
    W_OUT_NORM, W_FREQ_RE, W_FREQ_IM, W_CLS, W_COUNT
} wkind;

/* Their order in the file. */
static const wkind order_v0[] = { W_EMB, W_ATT_NORM, W_WQ, W_WK, W_WV, W_WO, W_FFN_NORM, W_W1,
                                  W_W2, W_W3, W_OUT_NORM, W_FREQ_RE, W_FREQ_IM, W_CLS };
static const wkind order_v12[] = { W_ATT_NORM, W_FFN_NORM, W_OUT_NORM, W_EMB, W_WQ, W_WK,
                                   W_WV, W_WO, W_W1, W_W2, W_W3, W_CLS };

typedef struct wdesc {
    uint64_t ne0, ne1;  /* ggml shape of one tensor (ne1 = 1: a vector) */
    uint32_t count;     /* 1, or one per layer */
    bool matrix;        /* 2-D (written with n_dims 2 even if a dimension is 1) */
    bool quant;         /* int8 + scales (v2 matrices) */
    bool present;       /* in this file */
    uint64_t bytes;     /* of one tensor */
    uint64_t offset;    /* of the first one */
} wdesc;

typedef struct l2c_file {
    const char *path;
    const uint8_t *map;  /* NULL for an empty file */
    uint64_t size;
    ember_file_map os;
} l2c_file;

typedef struct l2c_model {
    l2c_file f;
    int version;        /* 0, 1 or 2 */
    uint32_t dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len, group_size;
    bool shared;        /* the classifier is the token embedding */
    uint64_t header;    /* bytes before the first weight */
    wdesc w[W_COUNT];
} l2c_model;

typedef struct l2c_vocab {
    char **piece;       /* NUL-terminated, GGUF form */
    float *score;
    int32_t *type;
    uint32_t n;         /* entries allocated (pieces not yet read are NULL) */
} l2c_vocab;

/* ---- files -------------------------------------------------------------------- */

static ember_status map_file(const char *path, l2c_file *f, ember_err *err)
{
    *f = (l2c_file){.path = path};
    ember_err e = {{0}};
    ember_status s = ember_file_map_open(path, &f->os, &e);
    if (s == EMBER_ERR_FORMAT) return EMBER_OK; /* empty: the reader says what it misses */
    if (s != EMBER_OK) return ember_fail(err, s, "%s: %s", path, e.msg);
    f->map = f->os.data, f->size = f->os.size;
    return EMBER_OK;
}

static void unmap_file(l2c_file *f)
{
    ember_file_map_close(&f->os);
    f->map = NULL;
}

static int32_t rd_i32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static float rd_f32(const uint8_t *p)
{
    float v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* ---- the checkpoint header ------------------------------------------------------ */

/* Fills the hyper-parameters from the 7 header ints at p; vocab_size must be positive
 * unless negative_vocab_ok (v0, where the sign says "separate classifier"). */
static ember_status read_params(l2c_model *m, const uint8_t *p, bool negative_vocab_ok,
                                ember_err *err)
{
    int32_t h[7];
    for (int i = 0; i < 7; i++) h[i] = rd_i32(p + 4 * i);
    static const char *const field[7] = { "dim", "hidden_dim", "n_layers", "n_heads",
                                          "n_kv_heads", "vocab_size", "seq_len" };
    int64_t vocab = h[5] < 0 && negative_vocab_ok ? -(int64_t)h[5] : h[5];
    const char *why = NULL;
    char buf[64];
    for (int i = 6; i >= 0; i--)
        if ((i == 5 ? vocab : h[i]) <= 0) {
            snprintf(buf, sizeof buf, "%s is zero or negative", field[i]);
            why = buf;
        }
    if (!why && h[0] % h[3] != 0) why = "dim is not a multiple of n_heads";
    else if (!why && h[3] % h[4] != 0) why = "n_heads is not a multiple of n_kv_heads";
    else if (!why && (h[0] / h[3]) % 2 != 0) why = "head size (dim / n_heads) is odd";
    else if (!why && vocab < 3) why = "vocab_size is under 3 (<unk>, <s>, </s>)";
    if (why)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: not a llama2.c checkpoint: header {dim %d, "
                          "hidden_dim %d, n_layers %d, n_heads %d, n_kv_heads %d, vocab_size %d, "
                          "seq_len %d}: %s", m->f.path, h[0], h[1], h[2], h[3], h[4], h[5], h[6], why);
    m->dim = (uint32_t)h[0], m->hidden = (uint32_t)h[1], m->n_layers = (uint32_t)h[2];
    m->n_heads = (uint32_t)h[3], m->n_kv_heads = (uint32_t)h[4], m->vocab = (uint32_t)vocab;
    m->seq_len = (uint32_t)h[6];
    return EMBER_OK;
}

/* The "ak42" header of versions 1 and 2. */
static ember_status read_ak42(l2c_model *m, ember_err *err)
{
    const uint8_t *p = m->f.map;
    if (m->f.size < AK42_HEADER)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: %llu bytes: too short for a llama2.c "
                          "version 1/2 header (256 bytes)", m->f.path, (unsigned long long)m->f.size);
    int32_t version = rd_i32(p + 4);
    if (version != 1 && version != 2)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "%s: llama2.c checkpoint version %d is not "
                          "supported (versions 0, 1 and 2 are)", m->f.path, version);
    m->version = version;
    m->header = AK42_HEADER;
    ember_status st = read_params(m, p + 8, false, err);
    if (st) return st;
    if (p[36] > 1)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: shared_classifier flag is %u, not 0 or 1",
                          m->f.path, p[36]);
    m->shared = p[36] == 1;
    if (version == 2) {
        int32_t gs = rd_i32(p + 37);
        if (gs <= 0)
            return ember_fail(err, EMBER_ERR_FORMAT, "%s: group_size %d is not positive",
                              m->f.path, gs);
        m->group_size = (uint32_t)gs;
    }
    return EMBER_OK;
}

static ember_status read_header(l2c_model *m, ember_err *err)
{
    if (m->f.size < LEGACY_HEADER)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: %llu bytes: too short for a llama2.c "
                          "checkpoint header", m->f.path, (unsigned long long)m->f.size);
    if ((uint32_t)rd_i32(m->f.map) == AK42_MAGIC) return read_ak42(m, err);
    m->version = 0;
    m->header = LEGACY_HEADER;
    m->shared = rd_i32(m->f.map + 20) > 0;
    return read_params(m, m->f.map, true, err);
}

/* ---- the layout ----------------------------------------------------------------- */

static void set_w(l2c_model *m, wkind k, uint64_t ne0, uint64_t ne1, uint32_t count, bool matrix)
{
    m->w[k] = (wdesc){ .ne0 = ne0, .ne1 = ne1, .count = count, .present = true,
                       .matrix = matrix, .quant = matrix && m->version == 2 };
}

/* Shapes of every weight (ggml order: ne0 = input length). */
static void describe(l2c_model *m)
{
    uint64_t hs = m->dim / m->n_heads, kv = (uint64_t)m->n_kv_heads * hs, L = m->n_layers;
    set_w(m, W_EMB, m->dim, m->vocab, 1, true);
    set_w(m, W_ATT_NORM, m->dim, 1, L, false);
    set_w(m, W_WQ, m->dim, m->dim, L, true);
    set_w(m, W_WK, m->dim, kv, L, true);
    set_w(m, W_WV, m->dim, kv, L, true);
    set_w(m, W_WO, m->dim, m->dim, L, true);
    set_w(m, W_FFN_NORM, m->dim, 1, L, false);
    set_w(m, W_W1, m->dim, m->hidden, L, true);
    set_w(m, W_W2, m->hidden, m->dim, L, true);
    set_w(m, W_W3, m->dim, m->hidden, L, true);
    set_w(m, W_OUT_NORM, m->dim, 1, 1, false);
    set_w(m, W_FREQ_RE, (uint64_t)m->seq_len * hs / 2, 1, 1, false);
    set_w(m, W_FREQ_IM, (uint64_t)m->seq_len * hs / 2, 1, 1, false);
    set_w(m, W_CLS, m->dim, m->vocab, 1, true);
    m->w[W_FREQ_RE].present = m->w[W_FREQ_IM].present = m->version == 0;
    m->w[W_CLS].present = !m->shared;
}

static bool mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a && b > UINT64_MAX / a) return false;
    *out = a * b;
    return true;
}

/* Bytes of one tensor; false on overflow. */
static bool tensor_bytes(const l2c_model *m, const wdesc *d, uint64_t *out)
{
    uint64_t n;
    if (!mul_ok(d->ne0, d->ne1, &n) || n > UINT64_MAX / 8) return false;
    *out = d->quant ? n + n / m->group_size * 4 : n * 4;
    return true;
}

/* Assigns offsets in file order; *end receives the file length this implies. */
static ember_status lay_out(l2c_model *m, uint64_t *end, ember_err *err)
{
    const wkind *order = m->version == 0 ? order_v0 : order_v12;
    size_t n = m->version == 0 ? sizeof order_v0 / sizeof *order_v0 : sizeof order_v12 / sizeof *order_v12;
    uint64_t pos = m->header, all;
    for (size_t i = 0; i < n; i++) {
        wdesc *d = &m->w[order[i]];
        if (!d->present) continue;
        if (d->quant && (d->ne0 * d->ne1) % m->group_size != 0)
            return ember_fail(err, EMBER_ERR_FORMAT, "%s: group_size %u does not divide a "
                              "%llu x %llu matrix", m->f.path, m->group_size,
                              (unsigned long long)d->ne1, (unsigned long long)d->ne0);
        if (!tensor_bytes(m, d, &d->bytes) || !mul_ok(d->bytes, d->count, &all) ||
            pos > UINT64_MAX - all)
            return ember_fail(err, EMBER_ERR_FORMAT, "%s: header describes a model too large "
                              "for any file (dim %u, hidden_dim %u, %u layers, vocab %u)",
                              m->f.path, m->dim, m->hidden, m->n_layers, m->vocab);
        d->offset = pos;
        pos += all;
    }
    *end = pos;
    return EMBER_OK;
}

/* The file must be exactly as long as the header implies. */
static ember_status check_size(l2c_model *m, ember_err *err)
{
    describe(m);
    uint64_t want = 0;
    ember_status st = lay_out(m, &want, err);
    if (st || want == m->f.size) return st;
    char extra[160] = "";
    uint64_t cls = m->w[W_EMB].bytes; /* a classifier has the embedding's shape */
    if (m->shared && m->f.size > want && m->f.size - want == cls)
        snprintf(extra, sizeof extra, "; it is as long as the same model with a separate "
                 "classifier, which the header does not announce");
    else if (!m->shared && m->f.size == want - cls)
        snprintf(extra, sizeof extra, "; it is as long as the same model with a shared "
                 "classifier, but the header announces a separate one");
    return ember_fail(err, EMBER_ERR_FORMAT, "%s: file is %llu bytes, but a llama2.c version %d "
                      "checkpoint {dim %u, hidden_dim %u, n_layers %u, n_heads %u, n_kv_heads %u, "
                      "vocab_size %u, seq_len %u, %s classifier} takes %llu bytes%s (truncated, or "
                      "not a llama2.c checkpoint)", m->f.path, (unsigned long long)m->f.size,
                      m->version, m->dim, m->hidden, m->n_layers, m->n_heads, m->n_kv_heads,
                      m->vocab, m->seq_len, m->shared ? "shared" : "separate",
                      (unsigned long long)want, extra);
}

/* ---- the tokenizer ---------------------------------------------------------------- */

static bool is_byte_piece(const uint8_t *b, uint32_t len)
{
    static const char hex[] = "0123456789ABCDEFabcdef";
    return len == 6 && memcmp(b, "<0x", 3) == 0 && b[5] == '>' && b[3] && b[4] &&
           strchr(hex, b[3]) && strchr(hex, b[4]);
}

/* The GGUF piece for token id with llama2.c bytes b[0..len): spaces -> U+2581. */
static char *gguf_piece(uint32_t id, const uint8_t *b, uint32_t len, int32_t *type)
{
    static const char *const special[] = { "<unk>", "<s>", "</s>" };
    if (id < 3) {
        *type = id == 0 ? TYPE_UNKNOWN : TYPE_CONTROL;
        return strdup(special[id]);
    }
    *type = is_byte_piece(b, len) ? TYPE_BYTE : TYPE_NORMAL;
    char *s = malloc((size_t)len * 3 + 1), *o = s;
    if (!s) return NULL;
    for (uint32_t i = 0; i < len; i++) {
        if (b[i] == ' ') memcpy(o, SPACE_MARK, 3), o += 3;
        else *o++ = (char)b[i];
    }
    *o = 0;
    return s;
}

static void free_vocab(l2c_vocab *v)
{
    for (uint32_t i = 0; v->piece && i < v->n; i++) free(v->piece[i]);
    free(v->piece), free(v->score), free(v->type);
}

/* Reads n entries, which must fill the file exactly. */
static ember_status parse_vocab(const l2c_file *f, uint32_t n, l2c_vocab *v, ember_err *err)
{
    uint64_t pos = 4;
    for (uint32_t i = 0; i < n; i++) {
        if (f->size - pos < 8)
            return ember_fail(err, EMBER_ERR_FORMAT, "%s: ends in token %u of %u (the checkpoint's "
                              "vocab_size): wrong tokenizer, or truncated", f->path, i, n);
        v->score[i] = rd_f32(f->map + pos);
        int32_t len = rd_i32(f->map + pos + 4);
        pos += 8;
        if (len < 0 || (uint64_t)len > f->size - pos)
            return ember_fail(err, EMBER_ERR_FORMAT, "%s: token %u: length %d %s", f->path, i, len,
                              len < 0 ? "is negative" : "runs past the end of the file");
        if (memchr(f->map + pos, 0, (size_t)len))
            return ember_fail(err, EMBER_ERR_UNSUPPORTED, "%s: token %u contains a NUL byte",
                              f->path, i);
        v->piece[i] = gguf_piece(i, f->map + pos, (uint32_t)len, &v->type[i]);
        if (!v->piece[i]) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        pos += (uint64_t)len;
    }
    if (pos != f->size)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: %llu bytes left after %u tokens (the "
                          "checkpoint's vocab_size): this tokenizer is for another model",
                          f->path, (unsigned long long)(f->size - pos), n);
    return EMBER_OK;
}

static ember_status read_vocab(const char *path, uint32_t n, l2c_vocab *v, ember_err *err)
{
    l2c_file f = {0};
    ember_status st = map_file(path, &f, err);
    if (st) return st;
    if (f.size < 4 || rd_i32(f.map) <= 0) {
        unmap_file(&f);
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: not a llama2.c tokenizer (no positive "
                          "max_token_length at the start)", path);
    }
    v->n = n;
    v->piece = calloc(n, sizeof *v->piece);
    v->score = malloc(n * sizeof *v->score);
    v->type = malloc(n * sizeof *v->type);
    if (!v->piece || !v->score || !v->type) st = ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    else st = parse_vocab(&f, n, v, err);
    unmap_file(&f);
    return st;
}

/* ---- the GGUF ----------------------------------------------------------------------- */

/* The checkpoint's file name without directory and extension, for general.name. */
static void model_name(const char *path, char *buf, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(buf, cap, "%s", base);
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf) *dot = 0;
}

/* Metadata. Failures of add_* are sticky and reported by ember_gguf_write. */
static void add_metadata(ember_gguf_writer *w, const l2c_model *m, const l2c_vocab *v)
{
    char name[256];
    model_name(m->f.path, name, sizeof name);
    ember_gguf_add_str(w, "general.architecture", "llama");
    ember_gguf_add_str(w, "general.name", name);
    ember_gguf_add_u32(w, "general.file_type", 0); /* ALL_F32 */
    ember_gguf_add_u32(w, "llama.vocab_size", m->vocab);
    ember_gguf_add_u32(w, "llama.context_length", m->seq_len);
    ember_gguf_add_u32(w, "llama.embedding_length", m->dim);
    ember_gguf_add_u32(w, "llama.block_count", m->n_layers);
    ember_gguf_add_u32(w, "llama.feed_forward_length", m->hidden);
    ember_gguf_add_u32(w, "llama.rope.dimension_count", m->dim / m->n_heads);
    ember_gguf_add_u32(w, "llama.attention.head_count", m->n_heads);
    ember_gguf_add_u32(w, "llama.attention.head_count_kv", m->n_kv_heads);
    /* llama2.c hard-codes both (model.py's norm_eps default, run.c's 10000.0f) */
    ember_gguf_add_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    ember_gguf_add_f32(w, "llama.rope.freq_base", 10000.0f);
    ember_gguf_add_str(w, "tokenizer.ggml.model", "llama");
    ember_gguf_add_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->piece, v->n);
    ember_gguf_add_arr_f32(w, "tokenizer.ggml.scores", v->score, v->n);
    ember_gguf_add_arr_i32(w, "tokenizer.ggml.token_type", v->type, v->n);
    ember_gguf_add_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    ember_gguf_add_u32(w, "tokenizer.ggml.bos_token_id", 1);
    ember_gguf_add_u32(w, "tokenizer.ggml.eos_token_id", 2);
    ember_gguf_add_bool(w, "tokenizer.ggml.add_bos_token", true);
    ember_gguf_add_bool(w, "tokenizer.ggml.add_eos_token", false);
}

/* Adds tensor `layer` of kind k under name, dequantizing a v2 matrix. */
static ember_status add_weight(ember_gguf_writer *w, const l2c_model *m, wkind k, uint32_t layer,
                               const char *name, ember_err *err)
{
    const wdesc *d = &m->w[k];
    const uint8_t *src = m->f.map + d->offset + (uint64_t)layer * d->bytes;
    uint64_t n = d->ne0 * d->ne1, ne[2] = { d->ne0, d->ne1 };
    uint32_t n_dims = d->matrix ? 2 : 1;
    if (!d->quant) {
        ember_gguf_add_tensor(w, name, EMBER_DTYPE_F32, n_dims, ne, src, n * 4);
        return EMBER_OK;
    }
    float *x = malloc((size_t)n * sizeof *x);
    if (!x) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory for %s", name);
    const int8_t *q = (const int8_t *)src;
    const uint8_t *scales = src + n;
    for (uint64_t i = 0; i < n; i++) x[i] = q[i] * rd_f32(scales + i / m->group_size * 4);
    ember_gguf_add_tensor(w, name, EMBER_DTYPE_F32, n_dims, ne, x, n * 4);
    free(x);
    return EMBER_OK;
}

/* Tensors in llama.cpp's order; output.weight is always written (a copy of the
 * embedding when shared), as llama.cpp's converter does. */
static ember_status add_tensors(ember_gguf_writer *w, const l2c_model *m, ember_err *err)
{
    static const struct { wkind k; const char *name; } per_layer[] = {
        { W_ATT_NORM, "attn_norm" }, { W_WQ, "attn_q" }, { W_WK, "attn_k" }, { W_WV, "attn_v" },
        { W_WO, "attn_output" }, { W_FFN_NORM, "ffn_norm" }, { W_W1, "ffn_gate" },
        { W_W2, "ffn_down" }, { W_W3, "ffn_up" },
    };
    ember_status st = add_weight(w, m, W_EMB, 0, "token_embd.weight", err);
    for (uint32_t l = 0; l < m->n_layers && !st; l++)
        for (size_t i = 0; i < sizeof per_layer / sizeof *per_layer && !st; i++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%u.%s.weight", l, per_layer[i].name);
            st = add_weight(w, m, per_layer[i].k, l, name, err);
        }
    if (!st) st = add_weight(w, m, W_OUT_NORM, 0, "output_norm.weight", err);
    if (!st) st = add_weight(w, m, m->shared ? W_EMB : W_CLS, 0, "output.weight", err);
    return st;
}

ember_status ember_convert_llama2c(const char *ckpt, const char *tok, const char *out_path,
                                   ember_err *err)
{
    /* writing over an input would truncate the mapping being read */
    if (ember_same_file(out_path, ckpt) || ember_same_file(out_path, tok))
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "%s: output would overwrite an input", out_path);
    l2c_model m = {0};
    l2c_vocab v = {0};
    ember_gguf_writer *w = NULL;
    ember_status st = map_file(ckpt, &m.f, err);
    if (!st) st = read_header(&m, err);
    if (!st) st = check_size(&m, err);
    if (!st) st = read_vocab(tok, m.vocab, &v, err);
    if (!st) st = ember_gguf_writer_create(&w, err);
    if (!st) {
        add_metadata(w, &m, &v);
        st = add_tensors(w, &m, err);
    }
    if (!st) st = ember_gguf_write(w, out_path, err);
    ember_gguf_writer_free(w);
    free_vocab(&v);
    unmap_file(&m.f);
    return st;
}

/* ---- the command ---------------------------------------------------------------------- */

static int usage(FILE *out, int code)
{
    fprintf(out, "usage: ember convert llama2c CKPT.bin TOKENIZER.bin OUT.gguf\n"
                 "  converts a llama2.c checkpoint (legacy version 0, or version 1/2 from\n"
                 "  export.py) and its tokenizer.bin into a llama GGUF with F32 tensors\n");
    return code;
}

/* Exit codes as tools/cli.h's (this file stands alone: tests/test_convert.c includes it). */
int ember_cmd_convert(int argc, char **argv)
{
    enum { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return usage(stdout, CLI_OK);
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "ember convert: unknown option %s\n", argv[i]);
            return usage(stderr, CLI_USAGE);
        }
    }
    if (argc < 2) {
        fprintf(stderr, "ember convert: no source format given (known: llama2c)\n");
        return usage(stderr, CLI_USAGE);
    }
    if (strcmp(argv[1], "llama2c") != 0) {
        fprintf(stderr, "ember convert: unknown source format '%s' (known: llama2c)\n", argv[1]);
        return usage(stderr, CLI_USAGE);
    }
    if (argc != 5) {
        fprintf(stderr, "ember convert llama2c: wants 3 files, CKPT.bin TOKENIZER.bin OUT.gguf; got %d\n", argc - 2);
        return usage(stderr, CLI_USAGE);
    }
    ember_err err = {{0}};
    ember_status st = ember_convert_llama2c(argv[2], argv[3], argv[4], &err);
    if (st) {
        fprintf(stderr, "ember: convert: %s\n", err.msg);
        return CLI_FAILED;
    }
    printf("wrote %s\n", argv[4]);
    return CLI_OK;
}
