/* test_convert.c — `ember convert llama2c` (tools/convert_llama2c.c).
 *
 * stories260K.bin + tok512.bin are converted and compared with stories260K-f32.v3.gguf,
 * made from the same weights by llama.cpp: every tensor bit for bit, the vocabulary
 * (pieces, scores, types), the hyper-parameters as ember_llama_load reads them; the
 * converted file decodes llama2.c's greedy output and the CPU reference forward pass
 * reproduces llama2.c's 200 greedy tokens. Version 1 and 2 ("ak42") checkpoints and a
 * separate classifier, built here from the same weights, convert to what they hold.
 * Truncated, padded and garbage checkpoints and tokenizers are refused with a message.
 *
 * The converter belongs to the ember program, not to the library, so this test
 * compiles it in; the command line is checked through EMBER_BIN when it has `convert`. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/model/gguf.h"
#include "engine/model/model.h"
#include "engine/cpu/reference.h"
#include "engine/tokenizer/tokenizer.h"
#include "testutil.h"
#include "tools/convert_llama2c.c"

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *data, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_i32(buf *b, int32_t v) { put(b, &v, 4); }

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) free(p), p = NULL;
    fclose(f);
    if (p) p[n] = 0;
    if (len) *len = (size_t)n;
    return p;
}

static bool write_all(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(p, 1, n, f) == n;
    if (f) ok = fclose(f) == 0 && ok;
    return ok;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

typedef struct paths {
    char ckpt[1024], tok[1024], ref[1024], ids[1024], text[1024], tmp[1024];
} paths;

static void tmp_path(const paths *P, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/convert_%s", P->tmp, name);
}

/* Converts and expects success. */
static bool convert_ok(const char *ckpt, const char *tok, const char *out)
{
    ember_err err = {{0}};
    ember_status st = ember_convert_llama2c(ckpt, tok, out, &err);
    CHECKF(st == EMBER_OK, "convert %s: %s", ckpt, err.msg);
    return st == EMBER_OK;
}

/* Converts and expects refusal with status want and a message that names the input
 * and contains `says`; no output file may be left. */
static void convert_bad(const char *what, const char *ckpt, const char *tok, const char *out,
                        ember_status want, const char *says)
{
    ember_err err = {{0}};
    remove(out);
    ember_status st = ember_convert_llama2c(ckpt, tok, out, &err);
    CHECKF(st == want, "%s: status %s, want %s (%s)", what, ember_status_name(st),
           ember_status_name(want), err.msg);
    CHECKF(strstr(err.msg, says) != NULL, "%s: message '%s' lacks '%s'", what, err.msg, says);
    CHECKF(!exists(out), "%s: a failed conversion left %s", what, out);
}

/* ---- comparing GGUF files ---------------------------------------------------------- */

static bool same_tensor(const ember_gguf_tensor *a, const ember_gguf_tensor *b)
{
    return a && b && a->type == b->type && a->n_dims == b->n_dims &&
           memcmp(a->ne, b->ne, sizeof a->ne) == 0 && a->nbytes == b->nbytes &&
           memcmp(a->data, b->data, a->nbytes) == 0;
}

/* Every tensor of ref is in got, bit for bit, and got has no others. */
static void check_tensors(const char *what, const ember_gguf *got, const ember_gguf *ref)
{
    CHECKF(got->n_tensors == ref->n_tensors, "%s: %llu tensors, want %llu", what,
           (unsigned long long)got->n_tensors, (unsigned long long)ref->n_tensors);
    for (uint64_t i = 0; i < ref->n_tensors; i++) {
        const ember_gguf_tensor *r = &ref->tensors[i], *g = ember_gguf_find_tensor(got, r->name);
        CHECKF(same_tensor(g, r), "%s: tensor %s differs or is missing", what, r->name);
    }
}

static void check_vocab(const ember_gguf *got, const ember_gguf *ref)
{
    const ember_gguf_kv *gt = NULL, *rt = NULL, *gs = NULL, *rs = NULL, *gy = NULL, *ry = NULL;
    ember_err err = {{0}};
    CHECK(ember_gguf_get_arr(got, "tokenizer.ggml.tokens", EMBER_GGUF_STRING, &gt, &err) == EMBER_OK);
    CHECK(ember_gguf_get_arr(ref, "tokenizer.ggml.tokens", EMBER_GGUF_STRING, &rt, &err) == EMBER_OK);
    CHECK(ember_gguf_get_arr(got, "tokenizer.ggml.scores", EMBER_GGUF_FLOAT32, &gs, &err) == EMBER_OK);
    CHECK(ember_gguf_get_arr(ref, "tokenizer.ggml.scores", EMBER_GGUF_FLOAT32, &rs, &err) == EMBER_OK);
    CHECK(ember_gguf_get_arr(got, "tokenizer.ggml.token_type", EMBER_GGUF_INT32, &gy, &err) == EMBER_OK);
    CHECK(ember_gguf_get_arr(ref, "tokenizer.ggml.token_type", EMBER_GGUF_INT32, &ry, &err) == EMBER_OK);
    if (!gt || !rt || !gs || !rs || !gy || !ry) return;
    CHECK(gt->arr_n == 512 && rt->arr_n == 512 && gs->arr_n == 512 && gy->arr_n == 512);
    uint32_t bad = 0;
    for (uint64_t i = 0; i < rt->arr_n && i < gt->arr_n; i++) {
        ember_gguf_str a = gt->arr_str[i], b = rt->arr_str[i];
        if (a.len != b.len || memcmp(a.ptr, b.ptr, a.len) != 0) {
            if (bad++ < 5) fprintf(stderr, "token %llu: '%.*s' vs '%.*s'\n", (unsigned long long)i,
                                   (int)a.len, a.ptr, (int)b.len, b.ptr);
        }
    }
    CHECKF(bad == 0, "%u pieces differ from the reference GGUF", bad);
    CHECK(memcmp(gs->arr_data, rs->arr_data, 512 * 4) == 0);  /* scores, bit for bit (-0.0 too) */
    CHECK(memcmp(gy->arr_data, ry->arr_data, 512 * 4) == 0);  /* types */
    uint32_t bos = 0, eos = 0, unk = 9;
    CHECK(ember_gguf_get_u32(got, "tokenizer.ggml.bos_token_id", &bos, &err) == EMBER_OK && bos == 1);
    CHECK(ember_gguf_get_u32(got, "tokenizer.ggml.eos_token_id", &eos, &err) == EMBER_OK && eos == 2);
    CHECK(ember_gguf_get_u32(got, "tokenizer.ggml.unknown_token_id", &unk, &err) == EMBER_OK && unk == 0);
}

static size_t read_ids(const char *path, uint32_t *ids, size_t cap)
{
    char *t = read_all(path, NULL);
    size_t n = 0;
    for (char *p = t, *q; t && n < cap; p = q) {
        unsigned long v = strtoul(p, &q, 10);
        if (q == p) break;
        ids[n++] = (uint32_t)v;
    }
    free(t);
    return n;
}

/* Greedy decoding from BOS with the CPU reference must give llama2.c's ids, and the
 * converted vocabulary must decode them to llama2.c's text. */
static void check_generation(const paths *P, const ember_gguf *g, const ember_llama *m)
{
    uint32_t want[200], got[200], tok = 1;
    CHECK(read_ids(P->ids, want, 200) == 200);
    ember_err err = {{0}};
    ember_ref *r = NULL;
    float *logits = malloc(m->hp.n_vocab * sizeof *logits);
    ember_status st = ember_ref_create(m, &r, &err);
    CHECKF(st == EMBER_OK, "ember_ref_create: %s", err.msg);
    uint32_t same = 0;
    for (uint32_t pos = 0; !st && pos < 200; pos++) {
        st = ember_ref_forward(r, &tok, 1, pos, logits, 0, &err);
        CHECKF(st == EMBER_OK, "forward at %u: %s", pos, err.msg);
        uint32_t best = 0;
        for (uint32_t i = 1; i < m->hp.n_vocab; i++)
            if (logits[i] > logits[best]) best = i;
        got[pos] = tok = best;
        if (same == pos && got[pos] == want[pos]) same++;
    }
    CHECKF(same == 200, "greedy ids of the converted model differ from llama2.c at token %u", same);
    ember_ref_free(r);
    free(logits);

    ember_tokenizer *t = NULL;
    st = ember_tokenizer_load(g, &t, &err);
    CHECKF(st == EMBER_OK, "tokenizer: %s", err.msg);
    char *text = read_all(P->text, NULL), dec[4096];
    size_t n = 0;
    for (uint32_t i = 0; t && i < 200 && n < sizeof dec - 64; i++)
        n += ember_tokenizer_decode(t, want[i], dec + n, sizeof dec - 1 - n);
    dec[n] = 0;
    /* llama2.c drops the space that starts the first piece after BOS */
    CHECKF(text && strcmp(dec + (dec[0] == ' '), text) == 0, "decoded text differs:\n%s", dec);
    free(text);
    ember_tokenizer_free(t);
}

static void test_stories(const paths *P)
{
    char out[1200];
    tmp_path(P, "stories260K.gguf", out, sizeof out);
    if (!convert_ok(P->ckpt, P->tok, out)) return;
    ember_gguf *g = NULL, *ref = NULL;
    ember_llama m = {0};
    ember_err err = {{0}};
    CHECKF(ember_gguf_open(out, &g, &err) == EMBER_OK, "%s", err.msg);
    CHECKF(ember_gguf_open(P->ref, &ref, &err) == EMBER_OK, "%s", err.msg);
    if (g && ref) {
        CHECKF(ember_llama_load(g, &m, &err) == EMBER_OK, "%s", err.msg);
        const ember_hparams *hp = &m.hp;
        CHECK(hp->n_vocab == 512 && hp->dim == 64 && hp->n_layers == 5 && hp->n_heads == 8);
        CHECK(hp->n_kv_heads == 4 && hp->head_dim == 8 && hp->ffn_dim == 172 && hp->ctx_len == 512);
        CHECK(hp->rope_dim == 8 && hp->rope_base == 10000.0f && hp->rms_eps == 1e-5f);
        check_tensors("stories260K", g, ref);
        const ember_gguf_tensor *emb = ember_gguf_find_tensor(g, "token_embd.weight"),
                                *o = ember_gguf_find_tensor(g, "output.weight");
        CHECK(emb && o && emb->nbytes == o->nbytes && memcmp(emb->data, o->data, o->nbytes) == 0);
        check_vocab(g, ref);
        ember_gguf_str name = {0}, arch = {0};
        CHECK(ember_gguf_get_str(g, "general.name", &name, &err) == EMBER_OK &&
              ember_gguf_str_eq(name, "stories260K"));
        CHECK(ember_gguf_get_str(g, "general.architecture", &arch, &err) == EMBER_OK &&
              ember_gguf_str_eq(arch, "llama"));
        if (m.layers) check_generation(P, g, &m);
    }
    ember_llama_free(&m);
    ember_gguf_close(g);
    ember_gguf_close(ref);
    remove(out);
}

/* ---- version 1 / 2 and a separate classifier, built from the reference GGUF ----------- */

static const float *tensor_f32(const ember_gguf *g, const char *fmt, uint32_t layer, uint64_t *n)
{
    char name[64];
    snprintf(name, sizeof name, fmt, layer);
    const ember_gguf_tensor *t = ember_gguf_find_tensor(g, name);
    if (!t) {
        fprintf(stderr, "missing %s\n", name);
        abort();
    }
    *n = t->nbytes / 4;
    return t->data;
}

/* llama2.c's Q8_0 (export.py quantize_q80): per group, scale = max|w| / 127,
 * q = round(w / scale). Appends q then the scales; writes what they decode to into dq. */
static void put_q80(buf *b, const float *w, uint64_t n, uint32_t gs, float *dq)
{
    int8_t *q = malloc(n);
    float *s = malloc(n / gs * sizeof *s);
    for (uint64_t g = 0; g < n / gs; g++) {
        float mx = 0;
        for (uint32_t i = 0; i < gs; i++) mx = fmaxf(mx, fabsf(w[g * gs + i]));
        s[g] = mx / 127.0f;
        for (uint32_t i = 0; i < gs; i++) {
            uint64_t k = g * gs + i;
            q[k] = s[g] > 0 ? (int8_t)lrintf(w[k] / s[g]) : 0;
            dq[k] = q[k] * s[g];
        }
    }
    put(b, q, n);
    put(b, s, n / gs * sizeof *s);
    free(q), free(s);
}

/* Appends one weight (all layers when fmt has %u) as fp32 or, with gs > 0, Q8;
 * records into `expect` (a writer) the tensors the conversion must produce. */
static void put_weight(buf *b, const ember_gguf *ref, const char *fmt, uint32_t layers, uint32_t gs,
                       ember_gguf_writer *expect)
{
    for (uint32_t l = 0; l < layers; l++) {
        uint64_t n;
        char name[64];
        snprintf(name, sizeof name, fmt, l);
        const float *w = tensor_f32(ref, fmt, l, &n);
        const ember_gguf_tensor *t = ember_gguf_find_tensor(ref, name);
        float *dq = malloc(n * sizeof *dq);
        if (gs) put_q80(b, w, n, gs, dq);
        else put(b, w, n * 4), memcpy(dq, w, n * 4);
        ember_gguf_add_tensor(expect, name, EMBER_DTYPE_F32, t->n_dims, t->ne, dq, n * 4);
        if (strcmp(fmt, "token_embd.weight") == 0)
            ember_gguf_add_tensor(expect, "output.weight", EMBER_DTYPE_F32, 2, t->ne, dq, n * 4);
        free(dq);
    }
}

/* A version 1 (gs = 0) or 2 checkpoint of stories260K with a shared classifier. */
static void build_ak42(const ember_gguf *ref, int version, uint32_t gs, buf *b, ember_gguf_writer *expect)
{
    int32_t hdr[7] = { 64, 172, 5, 8, 4, 512, 512 };
    put_i32(b, (int32_t)AK42_MAGIC);
    put_i32(b, version);
    put(b, hdr, sizeof hdr);
    uint8_t shared = 1;
    put(b, &shared, 1);
    if (version == 2) put_i32(b, (int32_t)gs);
    uint8_t zero[256] = {0};
    put(b, zero, 256 - b->n);
    put_weight(b, ref, "blk.%u.attn_norm.weight", 5, 0, expect);
    put_weight(b, ref, "blk.%u.ffn_norm.weight", 5, 0, expect);
    put_weight(b, ref, "output_norm.weight", 1, 0, expect);
    static const char *const mats[] = {
        "token_embd.weight", "blk.%u.attn_q.weight", "blk.%u.attn_k.weight", "blk.%u.attn_v.weight",
        "blk.%u.attn_output.weight", "blk.%u.ffn_gate.weight", "blk.%u.ffn_down.weight",
        "blk.%u.ffn_up.weight",
    };
    for (size_t i = 0; i < sizeof mats / sizeof *mats; i++)
        put_weight(b, ref, mats[i], i == 0 ? 1 : 5, gs, expect);
}

/* Converts the checkpoint in b and compares with the tensors recorded in expect. */
static void check_built(const paths *P, const char *what, const buf *b, ember_gguf_writer *expect)
{
    char ckpt[1200], out[1200], want[1200];
    tmp_path(P, "built.bin", ckpt, sizeof ckpt);
    tmp_path(P, "built.gguf", out, sizeof out);
    tmp_path(P, "built_want.gguf", want, sizeof want);
    ember_err err = {{0}};
    CHECK(write_all(ckpt, b->p, b->n));
    CHECKF(ember_gguf_write(expect, want, &err) == EMBER_OK, "%s", err.msg);
    if (convert_ok(ckpt, P->tok, out)) {
        ember_gguf *g = NULL, *w = NULL;
        ember_llama m = {0};
        CHECK(ember_gguf_open(out, &g, &err) == EMBER_OK && ember_gguf_open(want, &w, &err) == EMBER_OK);
        if (g && w) {
            check_tensors(what, g, w);
            CHECKF(ember_llama_load(g, &m, &err) == EMBER_OK, "%s: %s", what, err.msg);
        }
        ember_llama_free(&m);
        ember_gguf_close(g), ember_gguf_close(w);
    }
    remove(ckpt), remove(out), remove(want);
}

static void test_versions(const paths *P)
{
    ember_gguf *ref = NULL;
    ember_err err = {{0}};
    if (ember_gguf_open(P->ref, &ref, &err)) {
        CHECKF(0, "%s", err.msg);
        return;
    }
    for (int v = 1; v <= 2; v++) {
        buf b = {0};
        ember_gguf_writer *expect = NULL;
        ember_gguf_writer_create(&expect, &err);
        build_ak42(ref, v, v == 2 ? 64 : 0, &b, expect);
        check_built(P, v == 1 ? "version 1" : "version 2 (int8, group 64)", &b, expect);
        ember_gguf_writer_free(expect);
        free(b.p);
    }

    /* version 0 with a separate classifier: vocab_size < 0 and wcls at the end */
    size_t n;
    char *v0 = read_all(P->ckpt, &n);
    CHECK(v0 && n == 1056540);
    if (v0) {
        uint64_t cnt;
        const float *emb = tensor_f32(ref, "token_embd.weight", 0, &cnt);
        float *cls = malloc(cnt * sizeof *cls);
        for (uint64_t i = 0; i < cnt; i++) cls[i] = emb[i] * -0.5f;
        buf b = {0};
        put(&b, v0, n);
        put(&b, cls, cnt * 4);
        int32_t neg = -512;
        memcpy(b.p + 20, &neg, 4);
        ember_gguf_writer *expect = NULL;
        ember_gguf_writer_create(&expect, &err);
        for (uint64_t i = 0; i < ref->n_tensors; i++) {
            const ember_gguf_tensor *t = &ref->tensors[i];
            bool out = strcmp(t->name, "output.weight") == 0;
            ember_gguf_add_tensor(expect, t->name, t->type, t->n_dims, t->ne, out ? cls : t->data, t->nbytes);
        }
        check_built(P, "separate classifier", &b, expect);
        ember_gguf_writer_free(expect);
        free(b.p), free(cls);
    }
    free(v0);
    ember_gguf_close(ref);
}

/* ---- bad input ------------------------------------------------------------------------ */

static void write_bad(const char *path, const char *src, size_t n, size_t keep)
{
    CHECK(write_all(path, src, keep < n ? keep : n));
}

static void test_bad_checkpoints(const paths *P)
{
    size_t n;
    char *v0 = read_all(P->ckpt, &n);
    if (!v0) return;
    char bad[1200], out[1200];
    tmp_path(P, "bad.bin", bad, sizeof bad);
    tmp_path(P, "bad.gguf", out, sizeof out);
    /* truncations: inside the weights, one float short, in and before the header */
    static const size_t cut[] = { 1056536, 1056539, 600000, 4096, 29, 27, 4, 0 };
    for (size_t i = 0; i < sizeof cut / sizeof *cut; i++) {
        write_bad(bad, v0, n, cut[i]);
        convert_bad("truncated", bad, P->tok, out, EMBER_ERR_FORMAT, bad);
        convert_bad("truncated", bad, P->tok, out, EMBER_ERR_FORMAT, cut[i] < 28 ? "too short" : "bytes");
    }
    char *big = malloc(n + 4);
    memcpy(big, v0, n);
    memset(big + n, 0, 4);
    write_bad(bad, big, n + 4, n + 4);
    convert_bad("4 bytes too long", bad, P->tok, out, EMBER_ERR_FORMAT, "takes 1056540 bytes");

    /* the file has room for a classifier the header does not announce (and vice versa) */
    char *two = malloc(n + 512 * 64 * 4);
    memcpy(two, v0, n);
    memcpy(two + n, v0 + 28, 512 * 64 * 4);
    write_bad(bad, two, n + 512 * 64 * 4, n + 512 * 64 * 4);
    convert_bad("unannounced classifier", bad, P->tok, out, EMBER_ERR_FORMAT, "does not announce");
    int32_t neg = -512;
    memcpy(big, v0, n);
    memcpy(big + 20, &neg, 4);
    write_bad(bad, big, n, n);
    convert_bad("missing classifier", bad, P->tok, out, EMBER_ERR_FORMAT, "announces a separate");

    /* garbage headers: every field zero, negative, inconsistent, absurdly large */
    static const int32_t hdrs[][7] = {
        { 0, 172, 5, 8, 4, 512, 512 }, { 64, -1, 5, 8, 4, 512, 512 }, { 64, 172, 5, 7, 4, 512, 512 },
        { 64, 172, 5, 8, 3, 512, 512 }, { 64, 172, 5, 64, 4, 512, 512 }, { 64, 172, 5, 8, 4, 2, 512 },
        { 64, 172, 5, 8, 4, (int32_t)0x80000000, 512 }, { 0x7fffffff, 0x7fffffff, 0x7fffffff, 1, 1, 0x7fffffff, 0x7fffffff },
        { 0x40000000, 0x7fffffff, 0x7fffffff, 2, 1, 512, 512 },
    };
    for (size_t i = 0; i < sizeof hdrs / sizeof *hdrs; i++) {
        memcpy(big, v0, n);
        memcpy(big, hdrs[i], sizeof hdrs[i]);
        write_bad(bad, big, n, n);
        convert_bad("garbage header", bad, P->tok, out, EMBER_ERR_FORMAT, bad);
    }

    /* ak42 headers: unknown version, bad flag, bad group size, version 2 with a group
     * size that does not divide the matrices */
    uint8_t ak[300] = {0};
    int32_t v[9] = { (int32_t)AK42_MAGIC, 3, 64, 172, 5, 8, 4, 512, 512 };
    memcpy(ak, v, sizeof v);
    write_bad(bad, (char *)ak, sizeof ak, sizeof ak);
    convert_bad("version 3", bad, P->tok, out, EMBER_ERR_UNSUPPORTED, "version 3 is not supported");
    write_bad(bad, (char *)ak, sizeof ak, 100);
    convert_bad("short ak42", bad, P->tok, out, EMBER_ERR_FORMAT, "too short");
    v[1] = 1, memcpy(ak, v, sizeof v), ak[36] = 7;
    write_bad(bad, (char *)ak, sizeof ak, sizeof ak);
    convert_bad("flag 7", bad, P->tok, out, EMBER_ERR_FORMAT, "shared_classifier");
    v[1] = 2, memcpy(ak, v, sizeof v), ak[36] = 1;
    int32_t gs = 0;
    memcpy(ak + 37, &gs, 4);
    write_bad(bad, (char *)ak, sizeof ak, sizeof ak);
    convert_bad("group 0", bad, P->tok, out, EMBER_ERR_FORMAT, "group_size");
    gs = 100;
    memcpy(ak + 37, &gs, 4);
    write_bad(bad, (char *)ak, sizeof ak, sizeof ak);
    convert_bad("group 100", bad, P->tok, out, EMBER_ERR_FORMAT, "does not divide");
    v[1] = 1, memcpy(ak, v, sizeof v), ak[36] = 1;
    write_bad(bad, (char *)ak, sizeof ak, sizeof ak);
    convert_bad("version 1, no weights", bad, P->tok, out, EMBER_ERR_FORMAT, "version 1");

    /* a missing input, and an output that would overwrite an input */
    tmp_path(P, "does_not_exist.bin", bad, sizeof bad);
    convert_bad("missing", bad, P->tok, out, EMBER_ERR_IO, "cannot open");
    tmp_path(P, "bad.bin", bad, sizeof bad);
    write_bad(bad, v0, n, n);
    ember_err err = {{0}};
    CHECK(ember_convert_llama2c(bad, P->tok, bad, &err) == EMBER_ERR_INVALID_ARG);
    CHECKF(strstr(err.msg, "overwrite") && exists(bad), "overwrite: %s", err.msg);
    remove(bad);
    free(v0), free(big), free(two);
}

static void test_bad_tokenizers(const paths *P)
{
    size_t n;
    char *tok = read_all(P->tok, &n);
    if (!tok) return;
    char bad[1200], out[1200];
    tmp_path(P, "bad_tok.bin", bad, sizeof bad);
    tmp_path(P, "bad_tok.gguf", out, sizeof out);
    static const size_t cut[] = { 6226, 3000, 9, 5, 0 };
    for (size_t i = 0; i < sizeof cut / sizeof *cut; i++) {
        write_bad(bad, tok, n, cut[i]);
        convert_bad("truncated tokenizer", P->ckpt, bad, out, EMBER_ERR_FORMAT, bad);
    }
    char *big = malloc(n + 16);
    memcpy(big, tok, n);
    memset(big + n, 0, 16);
    write_bad(bad, big, n + 16, n + 16);
    convert_bad("long tokenizer", P->ckpt, bad, out, EMBER_ERR_FORMAT, "another model");
    int32_t len = -3; /* token 0's length */
    memcpy(big, tok, n);
    memcpy(big + 8, &len, 4);
    write_bad(bad, big, n, n);
    convert_bad("negative length", P->ckpt, bad, out, EMBER_ERR_FORMAT, "negative");
    len = 1 << 30;
    memcpy(big + 8, &len, 4);
    write_bad(bad, big, n, n);
    convert_bad("huge length", P->ckpt, bad, out, EMBER_ERR_FORMAT, "past the end");
    memcpy(big, tok, n);
    big[12] = 0; /* '<' of "<unk>" */
    write_bad(bad, big, n, n);
    convert_bad("NUL in a piece", P->ckpt, bad, out, EMBER_ERR_UNSUPPORTED, "NUL");
    remove(bad);
    free(tok), free(big);
}

/* The command line, when the ember program has `convert`. */
static void test_cli(const paths *P)
{
    char out[1200], cmd[4096], text[2048];
    tmp_path(P, "cli.gguf", out, sizeof out);
    snprintf(cmd, sizeof cmd, "'%s' convert llama2c '%s' '%s' '%s' 2>&1", tu_ember_bin(), P->ckpt, P->tok, out);
    int rc = tu_run(cmd, text, sizeof text);
    if ((rc == 2 && strstr(text, "unknown command")) || rc == 127) {
        printf("  note: '%s' has no convert command: command line not checked\n", tu_ember_bin());
        return;
    }
    CHECKF(rc == 0 && exists(out), "ember convert: exit %d: %s", rc, text);
    char bad[1200];
    tmp_path(P, "cli_bad.bin", bad, sizeof bad);
    CHECK(write_all(bad, "0123456789abcdefghijklmnopqrstuvwxyz", 36));
    snprintf(cmd, sizeof cmd, "'%s' convert llama2c '%s' '%s' '%s' 2>&1", tu_ember_bin(), bad, P->tok, out);
    rc = tu_run(cmd, text, sizeof text);
    CHECKF(rc == 1 && strstr(text, "ember: convert: ") && strstr(text, bad), "bad input: exit %d: %s", rc, text);
    snprintf(cmd, sizeof cmd, "'%s' convert gguf a b c 2>&1", tu_ember_bin());
    rc = tu_run(cmd, text, sizeof text);
    CHECKF(rc == 2 && strstr(text, "usage"), "unknown format: exit %d: %s", rc, text);
    remove(out), remove(bad);
}

int main(void)
{
    const char *shared = tu_shared_dir();
    if (!shared) return tu_skip("../shared is absent: stories260K conversion not checked");
    paths P;
    const char *d = "models/stories260K";
    snprintf(P.ckpt, sizeof P.ckpt, "%s/%s/stories260K.bin", shared, d);
    snprintf(P.tok, sizeof P.tok, "%s/%s/tok512.bin", shared, d);
    snprintf(P.ref, sizeof P.ref, "%s/%s/stories260K-f32.v3.gguf", shared, d);
    snprintf(P.ids, sizeof P.ids, "%s/%s/expected/greedy200_f32_ids.txt", shared, d);
    snprintf(P.text, sizeof P.text, "%s/%s/expected/greedy200_f32.txt", shared, d);
    snprintf(P.tmp, sizeof P.tmp, "%s", tu_tmp_dir());
    if (!exists(P.ckpt) || !exists(P.tok) || !exists(P.ref))
        return tu_skip("stories260K.bin / tok512.bin / stories260K-f32.v3.gguf missing in ../shared");
    test_stories(&P);
    test_versions(&P);
    test_bad_checkpoints(&P);
    test_bad_tokenizers(&P);
    test_cli(&P);
    return tu_finish("test_convert");
}
