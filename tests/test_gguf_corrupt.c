/* test_gguf_corrupt.c — corrupt GGUF files must be refused with a message, never crash.
 *
 * A valid small llama model is written with the writer; from it the test makes, at run
 * time, files truncated at every header offset and at a spread through the data, files
 * with every header byte flipped, and hand-aimed damage: huge counts and lengths,
 * unknown types, bad dims, misaligned and overlapping tensors, bad alignment, duplicate
 * names. Each must be refused by ember_gguf_open or ember_llama_load (or, for random
 * flips that happen to leave a valid file, accepted) with a non-empty message naming the
 * file. With ../shared present the version 1 stories260K file gets the same truncation
 * and flip sweeps. Then, if the `ember` program has `generate`, a sample of the files
 * must make it exit non-zero with a message. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/model/gguf_write.h"
#include "engine/model/model.h"
#include "testutil.h"

#define TIME_LIMIT_S 60.0

typedef struct buf {
    uint8_t *p;
    size_t n;
} buf;

static int n_files, n_refused, n_accepted_flips;
static char named[64][512]; /* the hand-aimed files, for the `ember` sample */
static int n_named;

static int has(const char *msg, const char *part) { return strstr(msg, part) != NULL; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *tmp(const char *name, char *path, size_t cap)
{
    snprintf(path, cap, "%s/corrupt-%s.gguf", tu_tmp_dir(), name);
    return path;
}

static int save(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static buf slurp(const char *path)
{
    buf b = { 0 };
    FILE *f = fopen(path, "rb");
    if (!f) return b;
    fseek(f, 0, SEEK_END);
    b.n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    b.p = malloc(b.n ? b.n : 1);
    if (b.p && fread(b.p, 1, b.n, f) != b.n) b.n = 0;
    fclose(f);
    return b;
}

/* Opens path and loads it as llama. Returns 1 when refused. A refusal must be
 * EMBER_ERR_FORMAT (UNSUPPORTED is allowed from the model level) with a message that
 * names the file; `must_fail` files must be refused; `want` (if not NULL) must appear
 * in the message. */
static int probe(const char *path, const char *label, int must_fail, const char *want)
{
    ember_gguf *g = NULL;
    ember_llama m;
    ember_err err = { "" };
    ember_status st = ember_gguf_open(path, &g, &err);
    n_files++;
    if (st == EMBER_OK) {
        st = ember_llama_load(g, &m, &err);
        if (st == EMBER_OK) ember_llama_free(&m);
        CHECKF(st == EMBER_OK || st == EMBER_ERR_FORMAT || st == EMBER_ERR_UNSUPPORTED,
               "%s: load gave %s", label, ember_status_name(st));
        ember_gguf_close(g);
    } else {
        CHECKF(st == EMBER_ERR_FORMAT && g == NULL, "%s: open gave %s (%s)", label,
               ember_status_name(st), err.msg);
    }
    if (st == EMBER_OK) {
        CHECKF(!must_fail, "%s: accepted", label);
        return 0;
    }
    n_refused++;
    CHECKF(err.msg[0] && has(err.msg, path), "%s: message '%s' does not name the file", label, err.msg);
    const char *after = has(err.msg, path) ? strstr(err.msg, path) + strlen(path) : err.msg;
    if (want) CHECKF(has(after, want), "%s: message '%s' lacks '%s'", label, err.msg, want);
    return 1;
}

/* Writes a named corrupt file (kept for the `ember` sample) and probes it. */
static void named_case(const char *label, const buf *b, const char *want)
{
    char path[512];
    tmp(label, path, sizeof path);
    CHECK(save(path, b->p, b->n));
    probe(path, label, 1, want);
    if (n_named < 64) snprintf(named[n_named++], sizeof named[0], "%s", path);
}

/* ---- the valid model ------------------------------------------------------------ */

static void add_weight(ember_gguf_writer *w, const char *name, ember_dtype type,
                       uint64_t ne0, uint64_t ne1, tu_rng *r)
{
    uint64_t ne[2] = { ne0, ne1 }, nbytes = ember_dtype_size(type, ne0 * ne1);
    uint8_t *p = malloc(nbytes);
    for (uint64_t i = 0; i < nbytes; i++) p[i] = (uint8_t)tu_next(r);
    CHECK(ember_gguf_add_tensor(w, name, type, ne1 == 1 ? 1 : 2, ne, p, nbytes) == EMBER_OK);
    free(p);
}

/* dim 32, 2 layers, 4 heads, 2 KV heads, ffn 64, vocab 40: layer 0 in Q8_0, layer 1 in
 * F16, embeddings in F32, so that every tensor type is in the corpus. */
static int write_base(const char *path)
{
    ember_err err = { "" };
    ember_gguf_writer *w;
    tu_rng r = { 99 };
    const char *tok[40];
    float scores[40];
    char names[40][8];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "t%d", i);
        tok[i] = names[i];
        scores[i] = (float)-i;
    }
    if (ember_gguf_writer_create(&w, &err)) return 0;
    ember_gguf_add_str(w, "general.architecture", "llama");
    ember_gguf_add_u32(w, "general.alignment", 32);
    ember_gguf_add_u32(w, "llama.embedding_length", 32);
    ember_gguf_add_u32(w, "llama.block_count", 2);
    ember_gguf_add_u32(w, "llama.feed_forward_length", 64);
    ember_gguf_add_u32(w, "llama.attention.head_count", 4);
    ember_gguf_add_u32(w, "llama.attention.head_count_kv", 2);
    ember_gguf_add_u32(w, "llama.context_length", 64);
    ember_gguf_add_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    ember_gguf_add_u32(w, "test.k1", 1);
    ember_gguf_add_u32(w, "test.k2", 2);
    ember_gguf_add_bool(w, "test.flag", true);
    ember_gguf_add_str(w, "tokenizer.ggml.model", "llama");
    ember_gguf_add_arr_str(w, "tokenizer.ggml.tokens", tok, 40);
    ember_gguf_add_arr_f32(w, "tokenizer.ggml.scores", scores, 40);
    add_weight(w, "token_embd.weight", EMBER_DTYPE_F32, 32, 40, &r);
    add_weight(w, "output_norm.weight", EMBER_DTYPE_F32, 32, 1, &r);
    add_weight(w, "output.weight", EMBER_DTYPE_F32, 32, 40, &r);
    for (int l = 0; l < 2; l++) {
        ember_dtype t = l == 0 ? EMBER_DTYPE_Q8_0 : EMBER_DTYPE_F16;
        static const char *const parts[9] = { "attn_norm", "attn_q", "attn_k", "attn_v",
            "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down" };
        static const uint64_t shape[9][2] = { { 32, 1 }, { 32, 32 }, { 32, 16 }, { 32, 16 },
            { 32, 32 }, { 32, 1 }, { 32, 64 }, { 32, 64 }, { 64, 32 } };
        for (int i = 0; i < 9; i++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, parts[i]);
            add_weight(w, name, shape[i][1] == 1 ? EMBER_DTYPE_F32 : t, shape[i][0], shape[i][1], &r);
        }
    }
    ember_status st = ember_gguf_write(w, path, &err);
    CHECKF(st == EMBER_OK, "%s", err.msg);
    ember_gguf_writer_free(w);
    return st == EMBER_OK;
}

/* Facts about the valid file that the corruptions aim at. */
typedef struct layout {
    uint64_t data_offset, data_end; /* data_end: the end of the last tensor's bytes */
} layout;

static int read_layout(const char *path, layout *lo)
{
    ember_gguf *g = NULL;
    ember_llama m;
    ember_err err = { "" };
    if (ember_gguf_open(path, &g, &err)) {
        CHECKF(0, "the valid file is refused: %s", err.msg);
        return 0;
    }
    int ok = ember_llama_load(g, &m, &err) == EMBER_OK;
    CHECKF(ok, "the valid model is refused: %s", err.msg);
    if (ok) ember_llama_free(&m);
    lo->data_offset = g->data_offset;
    lo->data_end = g->data_offset;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        uint64_t end = g->data_offset + g->tensors[i].offset + g->tensors[i].nbytes;
        if (end > lo->data_end) lo->data_end = end;
    }
    ember_gguf_close(g);
    return ok;
}

/* ---- sweeps --------------------------------------------------------------------- */

/* Writes p[0..n) at offset off of the file at path. The file is opened for each write:
 * Windows maps no file that another handle holds open for writing. */
static bool put_at(const char *path, const void *p, size_t n, uint64_t off)
{
    FILE *f = fopen(path, "r+b");
    bool ok = f && fseek(f, (long)off, SEEK_SET) == 0 && fwrite(p, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = false;
    return ok;
}

/* Every prefix shorter than the end of the tensor data must be refused. The prefixes
 * grow by appending to one file: rewriting a file from scratch thousands of times
 * makes some file systems (ext4's auto_da_alloc) flush each one to disk. */
static void sweep_truncations(const buf *b, const layout *lo, const char *label, uint64_t data_step)
{
    char path[512], what[600];
    uint64_t have = 0;
    tmp(label, path, sizeof path);
    bool made = save(path, b->p, 0);
    CHECK(made);
    if (!made) return;
    for (uint64_t n = 0; n < lo->data_end; n += n < lo->data_offset + 64 ? 1 : data_step) {
        CHECK(put_at(path, b->p + have, (size_t)(n - have), have));
        have = n;
        snprintf(what, sizeof what, "%s truncated to %llu bytes", label, (unsigned long long)n);
        probe(path, what, 1, NULL);
    }
}

/* Each header byte changed in place (on one copy, then restored): a changed byte may
 * still leave a valid file (a letter of a string, a float), so the only demands are no
 * crash and, when refused, a message naming the file. */
static void sweep_flips(const buf *b, const layout *lo, const char *label, uint64_t step)
{
    static const uint8_t masks[] = { 0xff, 0x01, 0x80 };
    char path[512], what[600];
    tmp(label, path, sizeof path);
    bool made = save(path, b->p, b->n);
    CHECK(made);
    if (!made) return;
    for (uint64_t off = 0; off < lo->data_offset; off += step)
        for (size_t k = 0; k < sizeof masks; k++) {
            uint8_t x = b->p[off] ^ masks[k];
            CHECK(put_at(path, &x, 1, off));
            snprintf(what, sizeof what, "%s byte %llu ^ 0x%02x", label, (unsigned long long)off, masks[k]);
            n_accepted_flips += !probe(path, what, 0, NULL);
            CHECK(put_at(path, &b->p[off], 1, off));
        }
}

/* ---- hand-aimed damage ---------------------------------------------------------- */

static uint64_t find(const buf *b, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= b->n; i++)
        if (memcmp(b->p + i, s, n) == 0) return i;
    CHECKF(0, "'%s' not found in the base file", s);
    return 0;
}

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++, v >>= 8) p[i] = (uint8_t)v;
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    while (n-- > 0) v = v << 8 | p[n];
    return v;
}

/* A copy of base with n bytes at off set to v (little-endian), probed as must-fail. */
static void patched(const buf *base, const char *label, uint64_t off, uint64_t v, unsigned n,
                    const char *want)
{
    buf b = { malloc(base->n), base->n };
    memcpy(b.p, base->p, base->n);
    if (off + n <= b.n) put_le(b.p + off, v, n);
    named_case(label, &b, want);
    free(b.p);
}

/* Offsets inside a tensor info: its n_dims follows the name. */
typedef struct tinfo {
    uint64_t n_dims, ne0, type, offset; /* file offsets of those fields */
} tinfo;

static tinfo locate_tensor(const buf *b, const char *name)
{
    tinfo t;
    t.n_dims = find(b, name) + strlen(name);
    uint32_t nd = (uint32_t)get_le(b->p + t.n_dims, 4);
    t.ne0 = t.n_dims + 4;
    t.type = t.ne0 + 8ull * nd;
    t.offset = t.type + 4;
    return t;
}

static void aimed(const buf *b)
{
    const uint64_t huge = 1ull << 62;
    buf small = { b->p, 0 };
    named_case("empty", &small, "not a GGUF file");
    small.n = 3;
    named_case("3-bytes", &small, "not a GGUF file");
    patched(b, "bad-magic", 0, 0x47554747, 4, "not a GGUF file");
    patched(b, "version-0", 4, 0, 4, "version 0");
    patched(b, "version-4", 4, 4, 4, "version 4");
    patched(b, "big-endian", 4, 0x03000000, 4, "big-endian");

    uint64_t n_tensors = get_le(b->p + 8, 8), n_kv = get_le(b->p + 16, 8);
    patched(b, "n-tensors-2e62", 8, huge, 8, "tensor count");
    patched(b, "n-tensors-max", 8, UINT64_MAX, 8, "tensor count");
    patched(b, "n-tensors-plus-1", 8, n_tensors + 1, 8, NULL);
    patched(b, "n-kv-2e62", 16, huge, 8, "key/value count");
    patched(b, "n-kv-2e32", 16, 1ull << 32, 8, "key/value count");
    patched(b, "n-kv-max", 16, UINT64_MAX, 8, "key/value count");
    patched(b, "n-kv-plus-1", 16, n_kv + 1, 8, NULL);
    patched(b, "n-kv-0", 16, 0, 8, NULL);
    patched(b, "key-length-2e62", 24, huge, 8, "extends past end of file");
    patched(b, "key-length-max", 24, UINT64_MAX, 8, "extends past end of file");
    patched(b, "key-length-size", 24, b->n, 8, "extends past end of file");
    patched(b, "key-nul", 24 + 8 + 3, 0, 1, "NUL");

    uint64_t tokens = find(b, "tokenizer.ggml.tokens") + strlen("tokenizer.ggml.tokens");
    patched(b, "array-length-2e62", tokens + 8, huge, 8, "array of 4611686018427387904 strings");
    patched(b, "array-length-2e32", tokens + 8, 1ull << 32, 8, "strings");
    patched(b, "array-length-max", tokens + 8, UINT64_MAX, 8, "strings");
    patched(b, "array-string-length", tokens + 16, huge, 8, "array element 0");
    patched(b, "array-elem-type-13", tokens + 4, 13, 4, "unknown array element type 13");
    patched(b, "array-of-arrays", tokens + 4, 9, 4, "arrays of arrays");
    uint64_t scores = find(b, "tokenizer.ggml.scores") + strlen("tokenizer.ggml.scores");
    patched(b, "f32-array-length", scores + 8, huge, 8, "FLOAT32 values");

    uint64_t k1 = find(b, "test.k1") + strlen("test.k1");
    patched(b, "value-type-13", k1, 13, 4, "unknown value type 13");
    patched(b, "value-type-max", k1, UINT32_MAX, 4, "unknown value type");
    patched(b, "duplicate-key", find(b, "test.k2") + 6, '1', 1, "duplicate key 'test.k1'");
    uint64_t flag = find(b, "test.flag") + strlen("test.flag");
    patched(b, "bool-2", flag + 4, 2, 1, "bool value 2");
    uint64_t align = find(b, "general.alignment") + strlen("general.alignment");
    patched(b, "alignment-0", align + 4, 0, 4, "general.alignment 0");
    patched(b, "alignment-3", align + 4, 3, 4, "not a power of two");
    patched(b, "alignment-48", align + 4, 48, 4, "not a power of two");
    patched(b, "alignment-2e31", align + 4, 1u << 31, 4, "extends past end of file");
    patched(b, "alignment-float", align, EMBER_GGUF_FLOAT32, 4, "expected an integer");

    tinfo k = locate_tensor(b, "blk.0.attn_k.weight");  /* Q8_0 {32, 16} */
    tinfo q = locate_tensor(b, "blk.0.attn_q.weight");
    tinfo e = locate_tensor(b, "token_embd.weight");
    uint64_t k_off = get_le(b->p + k.offset, 8), q_off = get_le(b->p + q.offset, 8);
    patched(b, "n-dims-0", k.n_dims, 0, 4, "n_dims 0");
    patched(b, "n-dims-5", k.n_dims, 5, 4, "n_dims 5");
    patched(b, "n-dims-max", k.n_dims, UINT32_MAX, 4, "n_dims");
    patched(b, "dim-0", k.ne0, 0, 8, "dimension 0 is 0");
    patched(b, "dim-2e40", k.ne0, 1ull << 40, 8, "extends past end of file");
    patched(b, "dim-absurd", k.ne0, 1ull << 59, 8, "element count 9223372036854775808 is absurd");
    patched(b, "dim-max", k.ne0 + 8, UINT64_MAX, 8, "overflows");
    patched(b, "q8-not-32", k.ne0, 31, 8, "not a multiple of 32");
    patched(b, "type-iq2_xxs", k.type, 16, 4, "unsupported tensor type 16 (IQ2_XXS)");
    patched(b, "type-9999", k.type, 9999, 4, "unsupported tensor type 9999");
    patched(b, "offset-misaligned", k.offset, k_off + 1, 8, "not a multiple of the alignment 32");
    patched(b, "offset-misaligned-16", k.offset, k_off + 16, 8, "not a multiple");
    patched(b, "offset-overlap", k.offset, q_off, 8, "overlap");
    patched(b, "offset-2e62", k.offset, huge, 8, "extends past end of file");
    patched(b, "offset-max", k.offset, UINT64_MAX - 31, 8, "extends past end of file");
    patched(b, "offset-past-end", e.offset, b->n, 8, "extends past end of file");
    patched(b, "duplicate-tensor", find(b, "blk.1.attn_q.weight") + 4, '0', 1,
            "duplicate tensor name 'blk.0.attn_q.weight'");
    /* Valid for the reader, wrong for the model: named by ember_llama_load. */
    patched(b, "shape-attn-k", k.ne0 + 8, 8, 8, "'blk.0.attn_k.weight' has shape [32, 8]");
}

/* ---- the `ember` program -------------------------------------------------------- */

static void sample_ember_program(void)
{
    const char *bin = tu_ember_bin();
    char cmd[4096], out[4096];
    FILE *f = fopen(bin, "rb");
    if (!f) {
        printf("note: %s not found, `ember generate` check skipped\n", bin);
        return;
    }
    fclose(f);
    for (int i = 0; i < n_named; i += 3) { /* a third of them is plenty */
        if (snprintf(cmd, sizeof cmd, "'%s' generate -m '%s' -p hi -n 1 --backend cpu 2>&1 >/dev/null", bin,
                     named[i]) >= (int)sizeof cmd)
            continue;
        int rc = tu_run(cmd, out, sizeof out);
        if (rc == 2 && has(out, "unknown command")) {
            printf("note: `ember generate` not implemented yet, check skipped\n");
            return;
        }
        /* 124: timed out; above 128: killed by a signal */
        CHECKF(rc > 0 && rc < 124 && out[0], "ember generate on %s: exit %d, stderr '%s'", named[i], rc, out);
    }
}

int main(void)
{
    char base_path[512], v1_copy[512];
    layout lo;
    double t0 = now_s();
    tmp("base", base_path, sizeof base_path);
    if (!write_base(base_path) || !read_layout(base_path, &lo)) return tu_finish("test_gguf_corrupt");
    buf base = slurp(base_path);
    CHECK(base.n > lo.data_end - 32 && lo.data_end > lo.data_offset);

    sweep_truncations(&base, &lo, "trunc", 61);
    sweep_flips(&base, &lo, "flip", 1);
    aimed(&base);

    const char *dir = tu_shared_dir();
    if (dir) { /* a real version 1 file: 32-bit counts and lengths */
        char path[1024];
        snprintf(path, sizeof path, "%s/models/stories260K/tinyllamas-stories-260k-f32.gguf", dir);
        buf v1 = slurp(path);
        layout l1;
        CHECK(v1.n > 0 && read_layout(path, &l1));
        l1.data_end = l1.data_offset + 4096; /* the header plus some data is enough */
        if (v1.n > 0) {
            sweep_truncations(&v1, &l1, "v1-trunc", 509);
            sweep_flips(&v1, &l1, "v1-flip", 3);
        }
        free(v1.p);
        remove(tmp("v1-flip", v1_copy, sizeof v1_copy));
    } else {
        printf("note: EMBER_SHARED absent, version 1 sweep skipped\n");
    }
    double elapsed = now_s() - t0;
    printf("%d files, %d refused (%d byte changes left a valid file), %.1f s\n", n_files,
           n_refused, n_accepted_flips, elapsed);
    CHECKF(elapsed < TIME_LIMIT_S, "corpus took %.1f s", elapsed);

    sample_ember_program();
    free(base.p);
    return tu_finish("test_gguf_corrupt");
}
