/* test_gguf.c — the GGUF reader, writer and llama model description:
 * round trips through the writer, hand-built version 1 and 3 files with every
 * metadata type, typed getters, the real files in ../shared, and ember_llama_load on
 * good and bad synthetic models. Corrupt files are in test_gguf_corrupt.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/gguf_write.h"
#include "engine/model/model.h"
#include "testutil.h"

static char tmp_path[512];

static const char *tmp(const char *name)
{
    snprintf(tmp_path, sizeof tmp_path, "%s/test_gguf-%s.gguf", tu_tmp_dir(), name);
    return tmp_path;
}

static int has(const char *msg, const char *part) { return strstr(msg, part) != NULL; }

/* ---- a byte builder for hand-made files (the writer only makes version 3) ------- */

typedef struct blob {
    uint8_t *p;
    size_t n, cap;
    unsigned lensz; /* 4 for version 1, 8 otherwise */
} blob;

static void b_bytes(blob *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void b_uint(blob *b, uint64_t v, unsigned n)
{
    uint8_t x[8];
    for (unsigned i = 0; i < n; i++, v >>= 8) x[i] = (uint8_t)v;
    b_bytes(b, x, n);
}

static void b_count(blob *b, uint64_t v) { b_uint(b, v, b->lensz); }
static void b_str(blob *b, const char *s) { b_count(b, strlen(s)); b_bytes(b, s, strlen(s)); }
static void b_key(blob *b, const char *k, uint32_t type) { b_str(b, k); b_uint(b, type, 4); }
static void b_pad(blob *b, unsigned a) { while (b->n % a) b_uint(b, 0, 1); }

static void b_header(blob *b, uint32_t version)
{
    b->lensz = version == 1 ? 4 : 8;
    b_bytes(b, "GGUF", 4);
    b_uint(b, version, 4);
    b_count(b, 0); /* counts are patched by b_counts once known */
    b_count(b, 0);
}

static void b_counts(blob *b, uint64_t n_tensors, uint64_t n_kv)
{
    for (unsigned i = 0; i < b->lensz; i++) {
        b->p[8 + i] = (uint8_t)(n_tensors >> 8 * i);
        b->p[8 + b->lensz + i] = (uint8_t)(n_kv >> 8 * i);
    }
}

static int b_save(const blob *b, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(b->p, 1, b->n, f) == b->n;
    return fclose(f) == 0 && ok;
}

/* ---- writer -> reader ----------------------------------------------------------- */

static void fill_bytes(tu_rng *r, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)tu_next(r);
}

typedef struct tdesc {
    const char *name;
    ember_dtype type;
    uint32_t n_dims;
    uint64_t ne[4];
    uint8_t *data;
    uint64_t nbytes;
} tdesc;

static tdesc tensors[] = {
    { "f32.matrix", EMBER_DTYPE_F32, 2, { 3, 5 } },
    { "f16.vector", EMBER_DTYPE_F16, 1, { 7 } },
    { "q8.matrix", EMBER_DTYPE_Q8_0, 2, { 64, 3 } },
    { "f32.cube", EMBER_DTYPE_F32, 3, { 2, 3, 4 } },
    { "f16.4d", EMBER_DTYPE_F16, 4, { 2, 1, 3, 2 } },
};
#define N_TENSORS (sizeof tensors / sizeof *tensors)

static void make_tensor_data(void)
{
    tu_rng r = { 42 };
    for (size_t i = 0; i < N_TENSORS; i++) {
        uint64_t n = 1;
        for (uint32_t d = 0; d < tensors[i].n_dims; d++) n *= tensors[i].ne[d];
        tensors[i].nbytes = ember_dtype_size(tensors[i].type, n);
        tensors[i].data = malloc(tensors[i].nbytes);
        fill_bytes(&r, tensors[i].data, tensors[i].nbytes);
    }
}

static void add_tensors(ember_gguf_writer *w)
{
    for (size_t i = 0; i < N_TENSORS; i++) {
        const tdesc *t = &tensors[i];
        CHECK(ember_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes) == EMBER_OK);
    }
}

static const char *const words[] = { "hello", "", "w\xc3\xb6rld", "\xe2\x96\x81the" };
static const float floats[] = { 1.0f, -2.5f, 3.0e-8f, INFINITY };
static const int32_t ints[] = { 0, -1, 2147483647, -2147483647 - 1, 77 };

static void add_metadata(ember_gguf_writer *w)
{
    CHECK(ember_gguf_add_str(w, "general.architecture", "test") == EMBER_OK);
    CHECK(ember_gguf_add_u32(w, "k.u32", 4000000000u) == EMBER_OK);
    CHECK(ember_gguf_add_i32(w, "k.i32", -123456) == EMBER_OK);
    CHECK(ember_gguf_add_f32(w, "k.f32", 0.1f) == EMBER_OK);
    CHECK(ember_gguf_add_bool(w, "k.true", true) == EMBER_OK);
    CHECK(ember_gguf_add_bool(w, "k.false", false) == EMBER_OK);
    CHECK(ember_gguf_add_str(w, "k.empty", "") == EMBER_OK);
    CHECK(ember_gguf_add_arr_str(w, "a.str", words, 4) == EMBER_OK);
    CHECK(ember_gguf_add_arr_f32(w, "a.f32", floats, 4) == EMBER_OK);
    CHECK(ember_gguf_add_arr_i32(w, "a.i32", ints, 5) == EMBER_OK);
    CHECK(ember_gguf_add_arr_i32(w, "a.none", NULL, 0) == EMBER_OK);
}

static float arr_f32(const ember_gguf_kv *kv, uint64_t i)
{
    float f;
    memcpy(&f, kv->arr_data + 4 * i, 4); /* little-endian host assumed by the test */
    return f;
}

static void check_metadata(const ember_gguf *g)
{
    const ember_gguf_kv *kv;
    CHECK(g->n_kv == 11);
    CHECK((kv = ember_gguf_find(g, "k.u32")) && kv->type == EMBER_GGUF_UINT32 && kv->v.u64 == 4000000000u);
    CHECK((kv = ember_gguf_find(g, "k.i32")) && kv->type == EMBER_GGUF_INT32 && kv->v.i64 == -123456);
    CHECK((kv = ember_gguf_find(g, "k.f32")) && kv->type == EMBER_GGUF_FLOAT32 && (float)kv->v.f64 == 0.1f);
    CHECK((kv = ember_gguf_find(g, "k.true")) && kv->type == EMBER_GGUF_BOOL && kv->v.u64 == 1);
    CHECK((kv = ember_gguf_find(g, "k.false")) && kv->type == EMBER_GGUF_BOOL && kv->v.u64 == 0);
    CHECK((kv = ember_gguf_find(g, "k.empty")) && kv->type == EMBER_GGUF_STRING && kv->v.str.len == 0);
    CHECK((kv = ember_gguf_find(g, "general.architecture")) && ember_gguf_str_eq(kv->v.str, "test"));
    kv = ember_gguf_find(g, "a.str");
    CHECK(kv && kv->type == EMBER_GGUF_ARRAY && kv->arr_type == EMBER_GGUF_STRING && kv->arr_n == 4);
    for (uint64_t i = 0; kv && i < kv->arr_n && i < 4; i++)
        CHECKF(ember_gguf_str_eq(kv->arr_str[i], words[i]), "a.str[%d]", (int)i);
    kv = ember_gguf_find(g, "a.f32");
    CHECK(kv && kv->arr_type == EMBER_GGUF_FLOAT32 && kv->arr_n == 4);
    for (uint64_t i = 0; kv && i < 4; i++) CHECK(arr_f32(kv, i) == floats[i]);
    kv = ember_gguf_find(g, "a.i32");
    CHECK(kv && kv->arr_type == EMBER_GGUF_INT32 && kv->arr_n == 5 && memcmp(kv->arr_data, ints, sizeof ints) == 0);
    CHECK((kv = ember_gguf_find(g, "a.none")) && kv->arr_n == 0);
    CHECK(ember_gguf_find(g, "nope") == NULL);
}

static void check_tensors(const ember_gguf *g, uint32_t alignment)
{
    CHECK(g->n_tensors == N_TENSORS);
    CHECK(g->alignment == alignment && g->data_offset % alignment == 0);
    for (size_t i = 0; i < N_TENSORS; i++) {
        const tdesc *d = &tensors[i];
        const ember_gguf_tensor *t = ember_gguf_find_tensor(g, d->name);
        CHECKF(t != NULL, "tensor %s", d->name);
        if (!t) continue;
        CHECK(t == &g->tensors[i]); /* kept in the order added */
        CHECK(t->type == d->type && t->n_dims == d->n_dims && t->nbytes == d->nbytes);
        for (uint32_t k = 0; k < 4; k++) CHECK(t->ne[k] == (k < d->n_dims ? d->ne[k] : 1));
        CHECK(t->offset % alignment == 0);
        CHECK((const uint8_t *)t->data == (const uint8_t *)g->map + g->data_offset + t->offset);
        CHECKF(memcmp(t->data, d->data, d->nbytes) == 0, "data of %s", d->name);
    }
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(*n ? *n : 1);
    if (p && fread(p, 1, *n, f) != *n) { free(p); p = NULL; }
    fclose(f);
    return p;
}

static void test_roundtrip(void)
{
    ember_err err = { "" };
    ember_gguf_writer *w;
    char a[512], b[512];
    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    add_metadata(w);
    add_tensors(w);
    snprintf(a, sizeof a, "%s", tmp("roundtrip"));
    CHECKF(ember_gguf_write(w, a, &err) == EMBER_OK, "%s", err.msg);
    ember_gguf_writer_free(w);

    ember_gguf *g = NULL;
    CHECKF(ember_gguf_open(a, &g, &err) == EMBER_OK, "%s", err.msg);
    if (!g) return;
    CHECK(g->version == 3);
    check_metadata(g);
    check_tensors(g, 32);
    CHECK(g->size % 32 == 0); /* the last tensor is padded too */

    /* copy_kv + the same tensors gives back the very same bytes. */
    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    CHECK(ember_gguf_copy_kv(w, g, NULL) == EMBER_OK);
    add_tensors(w);
    snprintf(b, sizeof b, "%s", tmp("roundtrip-copy"));
    CHECKF(ember_gguf_write(w, b, &err) == EMBER_OK, "%s", err.msg);
    ember_gguf_writer_free(w);
    size_t na = 0, nb = 0;
    uint8_t *pa = slurp(a, &na), *pb = slurp(b, &nb);
    CHECK(pa && pb && na == nb && memcmp(pa, pb, na) == 0);

    /* The same bytes from memory give the same file; the caller's bytes are borrowed
     * (tensor data points into them) and a refusal names the given name. */
    ember_gguf *m = NULL;
    size_t cut = 0; /* one byte into the tensor data: the first tensor is cut short */
    CHECKF(pa && ember_gguf_open_memory(pa, na, "mem.gguf", &m, &err) == EMBER_OK, "%s", err.msg);
    if (m) {
        check_metadata(m);
        check_tensors(m, 32);
        CHECK(m->tensors[0].data == pa + (m->data_offset + m->tensors[0].offset));
        cut = (size_t)m->data_offset + 1;
        ember_gguf_close(m);
    }
    CHECK(pa && ember_gguf_open_memory(pa, cut, "mem.gguf", &m, &err) == EMBER_ERR_FORMAT && !m);
    CHECKF(has(err.msg, "mem.gguf: ") && has(err.msg, "extends past end of file"), "%s", err.msg);
    CHECK(ember_gguf_open_memory(pa, 0, NULL, &m, &err) == EMBER_ERR_FORMAT && !m);
    CHECKF(strcmp(err.msg, "<memory>: not a GGUF file: empty") == 0, "%s", err.msg);
    CHECK(ember_gguf_open_memory(NULL, 4, NULL, &m, &err) == EMBER_ERR_INVALID_ARG && !m);
    free(pa);
    free(pb);

    /* copy_kv with a skip list */
    const char *const skip[] = { "a.str", "k.u32", NULL };
    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    CHECK(ember_gguf_copy_kv(w, g, skip) == EMBER_OK);
    CHECK(ember_gguf_write(w, b, &err) == EMBER_OK);
    ember_gguf_writer_free(w);
    ember_gguf_close(g);
    CHECK(ember_gguf_open(b, &g, &err) == EMBER_OK);
    if (g) {
        CHECK(g->n_kv == 9 && g->n_tensors == 0);
        CHECK(!ember_gguf_find(g, "a.str") && !ember_gguf_find(g, "k.u32") && ember_gguf_find(g, "a.f32"));
        ember_gguf_close(g);
    }
}

/* ---- hand-made files with every metadata type, versions 1 and 3 ----------------- */

static const unsigned type_size[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };

static void arr_bytes(uint32_t t, uint8_t *out)
{
    for (unsigned i = 0; i < 3 * type_size[t]; i++) out[i] = (uint8_t)(0x11 * (i + 1) + t);
    if (t == EMBER_GGUF_BOOL) out[0] = 1, out[1] = 0, out[2] = 1;
}

/* Returns the number of key/value pairs written. */
static unsigned every_type_kvs(blob *b)
{
    unsigned n = 0;
    float f = 1.5f;
    double d = 3.141592653589793;
    uint32_t fb;
    uint64_t db;
    memcpy(&fb, &f, 4);
    memcpy(&db, &d, 8);
    b_key(b, "k.u8", 0), b_uint(b, 255, 1), n++;
    b_key(b, "k.i8", 1), b_uint(b, 0x80, 1), n++;
    b_key(b, "k.u16", 2), b_uint(b, 65535, 2), n++;
    b_key(b, "k.i16", 3), b_uint(b, 0x8000, 2), n++;
    b_key(b, "k.u32", 4), b_uint(b, 4000000000u, 4), n++;
    b_key(b, "k.i32", 5), b_uint(b, (uint32_t)-2000000000, 4), n++;
    b_key(b, "k.f32", 6), b_uint(b, fb, 4), n++;
    b_key(b, "k.bool", 7), b_uint(b, 1, 1), n++;
    b_key(b, "k.str", 8), b_str(b, "h\xc3\xa9llo"), n++;
    b_key(b, "k.u64", 10), b_uint(b, (1ull << 63) + 5, 8), n++;
    b_key(b, "k.i64", 11), b_uint(b, (uint64_t)-(1ll << 62), 8), n++;
    b_key(b, "k.f64", 12), b_bytes(b, &db, 8), n++;
    for (uint32_t t = 0; t <= 12; t++) {
        if (t == EMBER_GGUF_STRING || t == EMBER_GGUF_ARRAY) continue;
        char key[32];
        uint8_t bytes[24];
        snprintf(key, sizeof key, "a.%s", ember_gguf_type_name((ember_gguf_type)t));
        arr_bytes(t, bytes);
        b_key(b, key, 9), b_uint(b, t, 4), b_count(b, 3), b_bytes(b, bytes, 3 * type_size[t]), n++;
    }
    b_key(b, "a.STRING", 9), b_uint(b, 8, 4), b_count(b, 3), n++;
    b_str(b, ""), b_str(b, "a"), b_str(b, "bc");
    b_key(b, "a.empty", 9), b_uint(b, 4, 4), b_count(b, 0), n++;
    b_key(b, "general.alignment", 4), b_uint(b, 64, 4), n++;
    return n;
}

static void check_every_type(const ember_gguf *g)
{
    const ember_gguf_kv *kv;
    CHECK((kv = ember_gguf_find(g, "k.u8")) && kv->type == 0 && kv->v.u64 == 255);
    CHECK((kv = ember_gguf_find(g, "k.i8")) && kv->type == 1 && kv->v.i64 == -128);
    CHECK((kv = ember_gguf_find(g, "k.u16")) && kv->type == 2 && kv->v.u64 == 65535);
    CHECK((kv = ember_gguf_find(g, "k.i16")) && kv->type == 3 && kv->v.i64 == -32768);
    CHECK((kv = ember_gguf_find(g, "k.u32")) && kv->type == 4 && kv->v.u64 == 4000000000u);
    CHECK((kv = ember_gguf_find(g, "k.i32")) && kv->type == 5 && kv->v.i64 == -2000000000);
    CHECK((kv = ember_gguf_find(g, "k.f32")) && kv->type == 6 && kv->v.f64 == 1.5);
    CHECK((kv = ember_gguf_find(g, "k.bool")) && kv->type == 7 && kv->v.u64 == 1);
    CHECK((kv = ember_gguf_find(g, "k.str")) && kv->type == 8 && ember_gguf_str_eq(kv->v.str, "h\xc3\xa9llo"));
    CHECK((kv = ember_gguf_find(g, "k.u64")) && kv->type == 10 && kv->v.u64 == (1ull << 63) + 5);
    CHECK((kv = ember_gguf_find(g, "k.i64")) && kv->type == 11 && kv->v.i64 == -(1ll << 62));
    CHECK((kv = ember_gguf_find(g, "k.f64")) && kv->type == 12 && kv->v.f64 == 3.141592653589793);
    for (uint32_t t = 0; t <= 12; t++) {
        if (t == EMBER_GGUF_STRING || t == EMBER_GGUF_ARRAY) continue;
        char key[32];
        uint8_t bytes[24];
        snprintf(key, sizeof key, "a.%s", ember_gguf_type_name((ember_gguf_type)t));
        arr_bytes(t, bytes);
        kv = ember_gguf_find(g, key);
        CHECKF(kv && kv->type == EMBER_GGUF_ARRAY && kv->arr_type == t && kv->arr_n == 3 &&
               memcmp(kv->arr_data, bytes, 3 * type_size[t]) == 0, "%s", key);
    }
    kv = ember_gguf_find(g, "a.STRING");
    CHECK(kv && kv->arr_type == EMBER_GGUF_STRING && kv->arr_n == 3 && kv->arr_str &&
          ember_gguf_str_eq(kv->arr_str[0], "") && ember_gguf_str_eq(kv->arr_str[1], "a") &&
          ember_gguf_str_eq(kv->arr_str[2], "bc"));
    CHECK((kv = ember_gguf_find(g, "a.empty")) && kv->arr_n == 0 && kv->arr_type == EMBER_GGUF_UINT32);
    CHECK(g->alignment == 64 && g->data_offset % 64 == 0);
    const ember_gguf_tensor *t = ember_gguf_find_tensor(g, "t.f32");
    const ember_gguf_tensor *t2 = ember_gguf_find_tensor(g, "t.q8");
    CHECK(t && t->type == EMBER_DTYPE_F32 && t->ne[0] == 4 && t->ne[1] == 2 && t->nbytes == 32 &&
          ((const float *)t->data)[7] == 7.0f);
    /* 40 x 4 Q8_0: rows of 40 are not whole blocks, but 160 elements are (5 blocks) */
    CHECK(t2 && t2->type == EMBER_DTYPE_Q8_0 && t2->offset == 64 && t2->nbytes == 5 * 34 &&
          ((const uint8_t *)t2->data)[169] == 169);
}

static void build_every_type(blob *b, uint32_t version)
{
    b_header(b, version);
    unsigned n_kv = every_type_kvs(b);
    b_str(b, "t.f32"), b_uint(b, 2, 4), b_count(b, 4), b_count(b, 2), b_uint(b, 0, 4), b_uint(b, 0, 8);
    b_str(b, "t.q8"), b_uint(b, 2, 4), b_count(b, 40), b_count(b, 4), b_uint(b, 8, 4), b_uint(b, 64, 8);
    b_counts(b, 2, n_kv);
    b_pad(b, 64);
    for (int i = 0; i < 8; i++) {
        float f = (float)i;
        b_bytes(b, &f, 4);
    }
    b_pad(b, 64);
    for (int i = 0; i < 170; i++) b_uint(b, (uint64_t)i, 1);
}

/* Writes g's metadata and tensors to path through the writer (checked). */
static void rewrite(const ember_gguf *g, const char *path)
{
    ember_err err = {""};
    ember_gguf_writer *w;
    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    CHECK(ember_gguf_copy_kv(w, g, NULL) == EMBER_OK);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const ember_gguf_tensor *t = &g->tensors[i];
        CHECK(ember_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes) == EMBER_OK);
    }
    CHECKF(ember_gguf_write(w, path, &err) == EMBER_OK, "%s", err.msg);
    ember_gguf_writer_free(w);
}

static void test_every_type(uint32_t version)
{
    blob b = { 0 };
    ember_err err = { "" };
    char path[512], copy[512];
    snprintf(path, sizeof path, "%s/test_gguf-every-v%u.gguf", tu_tmp_dir(), version);
    snprintf(copy, sizeof copy, "%s/test_gguf-every-v%u-copy.gguf", tu_tmp_dir(), version);
    build_every_type(&b, version);
    CHECK(b_save(&b, path));
    free(b.p);

    ember_gguf *g = NULL;
    CHECKF(ember_gguf_open(path, &g, &err) == EMBER_OK, "v%u: %s", version, err.msg);
    if (!g) return;
    CHECK(g->version == version && g->n_kv == 26 && g->n_tensors == 2);
    check_every_type(g);

    /* Through the writer (now version 3): same values, same alignment. */
    rewrite(g, copy);
    ember_gguf_close(g);
    CHECKF(ember_gguf_open(copy, &g, &err) == EMBER_OK, "copy of v%u: %s", version, err.msg);
    if (!g) return;
    CHECK(g->version == 3 && g->n_kv == 26);
    check_every_type(g);
    ember_gguf_close(g);
}

/* Arrays of arrays are refused by name (docs/gguf.md). */
static void test_nested_array(void)
{
    blob b = { 0 };
    ember_err err = { "" };
    ember_gguf *g = NULL;
    const char *path = tmp("nested");
    b_header(&b, 3);
    b_key(&b, "a.nested", 9), b_uint(&b, 9, 4), b_count(&b, 1);
    b_uint(&b, 4, 4), b_count(&b, 1), b_uint(&b, 7, 4);
    b_counts(&b, 0, 1);
    CHECK(b_save(&b, path));
    free(b.p);
    CHECK(ember_gguf_open(path, &g, &err) == EMBER_ERR_FORMAT && g == NULL);
    CHECKF(has(err.msg, path) && has(err.msg, "arrays of arrays") && has(err.msg, "a.nested"), "%s", err.msg);
}

/* general.alignment 1 lets a tensor start anywhere; its data must still sit at its
 * element's alignment in memory (a fuzzing finding: float loads from an odd address).
 * One tensor of the given type whose file offset is `at` past a multiple of 4. */
static ember_status open_placed(ember_dtype type, unsigned at, ember_err *err)
{
    blob b = { 0 };
    ember_gguf *g = NULL;
    const char *path = tmp("placed");
    b_header(&b, 3);
    b_key(&b, "general.alignment", 4), b_uint(&b, 1, 4);
    b_str(&b, "t"), b_uint(&b, 1, 4), b_count(&b, 32), b_uint(&b, type, 4);
    size_t off_at = b.n;
    b_uint(&b, 0, 8);
    b_counts(&b, 1, 1);
    size_t offset = (4 - b.n % 4) % 4 + at; /* the data section starts at b.n */
    for (unsigned k = 0; k < 8; k++) b.p[off_at + k] = (uint8_t)(offset >> 8 * k);
    for (size_t k = 0; k < offset + 128; k++) b_uint(&b, 0, 1);
    CHECK(b_save(&b, path));
    free(b.p);
    ember_status st = ember_gguf_open(path, &g, err);
    if (g) CHECK((uintptr_t)g->tensors[0].data % 4 == at);
    ember_gguf_close(g);
    return st;
}

static void test_tensor_alignment(void)
{
    ember_err err = { "" };
    CHECKF(open_placed(EMBER_DTYPE_F32, 0, &err) == EMBER_OK, "%s", err.msg);
    CHECKF(open_placed(EMBER_DTYPE_F16, 2, &err) == EMBER_OK, "%s", err.msg);
    CHECKF(open_placed(EMBER_DTYPE_Q8_0, 2, &err) == EMBER_OK, "%s", err.msg);
    CHECK(open_placed(EMBER_DTYPE_F32, 2, &err) == EMBER_ERR_FORMAT);
    CHECKF(has(err.msg, "tensor 't' data at offset") && has(err.msg, "is not aligned to 4 bytes (F32)"), "%s", err.msg);
    CHECK(open_placed(EMBER_DTYPE_F16, 1, &err) == EMBER_ERR_FORMAT);
    CHECKF(has(err.msg, "is not aligned to 2 bytes (F16)"), "%s", err.msg);
    CHECK(open_placed(EMBER_DTYPE_Q8_0, 3, &err) == EMBER_ERR_FORMAT);
    CHECKF(has(err.msg, "is not aligned to 2 bytes (Q8_0)"), "%s", err.msg);
}

/* ---- typed getters -------------------------------------------------------------- */

static void test_getters(void)
{
    blob b = { 0 };
    ember_err err = { "" };
    ember_gguf *g = NULL;
    char path[512];
    snprintf(path, sizeof path, "%s", tmp("getters"));
    b_header(&b, 3);
    unsigned n_kv = every_type_kvs(&b);
    b_counts(&b, 0, n_kv);
    CHECK(b_save(&b, path));
    free(b.p);
    CHECKF(ember_gguf_open(path, &g, &err) == EMBER_OK, "%s", err.msg);
    if (!g) return;

    uint32_t u = 7;
    float f = 0;
    ember_gguf_str s;
    bool flag = false;
    const ember_gguf_kv *kv;
    CHECK(ember_gguf_get_u32(g, "k.u8", &u, &err) == EMBER_OK && u == 255);
    CHECK(ember_gguf_get_u32(g, "k.u16", &u, &err) == EMBER_OK && u == 65535);
    CHECK(ember_gguf_get_u32(g, "k.u32", &u, &err) == EMBER_OK && u == 4000000000u);
    err.msg[0] = 0;
    CHECK(ember_gguf_get_u32(g, "nope.key", &u, &err) == EMBER_ERR_FORMAT);
    CHECKF(has(err.msg, path) && has(err.msg, "missing key nope.key"), "%s", err.msg);
    CHECK(ember_gguf_get_u32(g, "k.i8", &u, &err) == EMBER_ERR_FORMAT && has(err.msg, "negative") && has(err.msg, path));
    CHECK(ember_gguf_get_u32(g, "k.u64", &u, &err) == EMBER_ERR_FORMAT && has(err.msg, "larger") && has(err.msg, "k.u64"));
    CHECK(ember_gguf_get_u32(g, "k.str", &u, &err) == EMBER_ERR_FORMAT && has(err.msg, "STRING"));
    CHECK(ember_gguf_get_u32(g, "k.f32", &u, &err) == EMBER_ERR_FORMAT);
    CHECK(ember_gguf_get_u32(g, "k.bool", &u, &err) == EMBER_ERR_FORMAT);
    CHECK(ember_gguf_get_u32(g, "a.UINT32", &u, &err) == EMBER_ERR_FORMAT && has(err.msg, "ARRAY"));
    CHECK(u == 4000000000u); /* untouched by failures */
    u = 5;
    CHECK(ember_gguf_opt_u32(g, "nope.key", &u, &err) == EMBER_OK && u == 5);
    CHECK(ember_gguf_opt_u32(g, "k.i16", &u, &err) == EMBER_ERR_FORMAT && u == 5);

    CHECK(ember_gguf_get_f32(g, "k.f32", &f, &err) == EMBER_OK && f == 1.5f);
    CHECK(ember_gguf_get_f32(g, "k.f64", &f, &err) == EMBER_OK && f == (float)3.141592653589793);
    CHECK(ember_gguf_get_f32(g, "k.i32", &f, &err) == EMBER_OK && f == -2000000000.0f);
    CHECK(ember_gguf_get_f32(g, "k.str", &f, &err) == EMBER_ERR_FORMAT);
    CHECK(ember_gguf_get_f32(g, "nope.f", &f, &err) == EMBER_ERR_FORMAT && has(err.msg, "missing key nope.f"));
    f = 2.0f;
    CHECK(ember_gguf_opt_f32(g, "nope.f", &f, &err) == EMBER_OK && f == 2.0f);

    CHECK(ember_gguf_get_str(g, "k.str", &s, &err) == EMBER_OK && ember_gguf_str_eq(s, "h\xc3\xa9llo"));
    CHECK(ember_gguf_get_str(g, "k.u8", &s, &err) == EMBER_ERR_FORMAT && has(err.msg, "UINT8"));
    CHECK(ember_gguf_get_str(g, "nope.s", &s, &err) == EMBER_ERR_FORMAT);

    CHECK(ember_gguf_opt_bool(g, "k.bool", &flag, &err) == EMBER_OK && flag);
    CHECK(ember_gguf_opt_bool(g, "k.u8", &flag, &err) == EMBER_ERR_FORMAT);
    CHECK(ember_gguf_get_arr(g, "a.STRING", EMBER_GGUF_STRING, &kv, &err) == EMBER_OK && kv->arr_n == 3);
    CHECK(ember_gguf_get_arr(g, "a.STRING", EMBER_GGUF_FLOAT32, &kv, &err) == EMBER_ERR_FORMAT &&
          has(err.msg, "ARRAY of STRING"));
    CHECK(ember_gguf_get_arr(g, "k.u8", EMBER_GGUF_UINT8, &kv, &err) == EMBER_ERR_FORMAT);

    CHECK(ember_dtype_size(EMBER_DTYPE_F32, 10) == 40 && ember_dtype_size(EMBER_DTYPE_F16, 10) == 20 &&
          ember_dtype_size(EMBER_DTYPE_Q8_0, 64) == 68);
    CHECK(strcmp(ember_dtype_name(EMBER_DTYPE_Q8_0), "Q8_0") == 0);
    ember_gguf_close(g);
}

/* ---- writer errors -------------------------------------------------------------- */

static void test_writer_errors(void)
{
    ember_err err = { "" };
    ember_gguf_writer *w;
    float data[64] = { 0 };
    uint64_t ne[2] = { 8, 8 }, ne_q[2] = { 40, 1 };
    const char *path = tmp("never-written");
    remove(path);

    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    CHECK(ember_gguf_add_u32(w, "x", 1) == EMBER_OK);
    CHECK(ember_gguf_add_u32(w, "x", 2) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_gguf_add_u32(w, "y", 3) == EMBER_ERR_INVALID_ARG); /* sticky */
    CHECK(ember_gguf_write(w, path, &err) == EMBER_ERR_INVALID_ARG);
    CHECKF(has(err.msg, "duplicate key x") && has(err.msg, path), "%s", err.msg);
    ember_gguf_writer_free(w);
    FILE *f = fopen(path, "rb");
    CHECK(f == NULL);
    if (f) fclose(f);

    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    CHECK(ember_gguf_add_tensor(w, "t", EMBER_DTYPE_F32, 2, ne, data, 255) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_gguf_write(w, path, &err) == EMBER_ERR_INVALID_ARG && has(err.msg, "nbytes"));
    ember_gguf_writer_free(w);

    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    CHECK(ember_gguf_add_tensor(w, "q", EMBER_DTYPE_Q8_0, 2, ne_q, data, 34) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_gguf_write(w, path, &err) == EMBER_ERR_INVALID_ARG && has(err.msg, "multiple of 32"));
    ember_gguf_writer_free(w);

    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    CHECK(ember_gguf_add_tensor(w, "t", EMBER_DTYPE_F32, 2, ne, data, 256) == EMBER_OK);
    CHECK(ember_gguf_add_tensor(w, "t", EMBER_DTYPE_F32, 2, ne, data, 256) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_gguf_write(w, path, &err) == EMBER_ERR_INVALID_ARG && has(err.msg, "duplicate tensor t"));
    ember_gguf_writer_free(w);

    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    CHECK(ember_gguf_add_u32(w, "general.alignment", 48) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_gguf_write(w, path, &err) == EMBER_ERR_INVALID_ARG && has(err.msg, "general.alignment"));
    ember_gguf_writer_free(w);

    /* A chosen alignment is honoured. */
    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    CHECK(ember_gguf_add_u32(w, "general.alignment", 256) == EMBER_OK);
    CHECK(ember_gguf_add_tensor(w, "a", EMBER_DTYPE_F32, 1, ne, data, 32) == EMBER_OK);
    CHECK(ember_gguf_add_tensor(w, "b", EMBER_DTYPE_F32, 1, ne, data, 32) == EMBER_OK);
    CHECK(ember_gguf_write(w, path, &err) == EMBER_OK);
    ember_gguf_writer_free(w);
    ember_gguf *g = NULL;
    CHECKF(ember_gguf_open(path, &g, &err) == EMBER_OK, "%s", err.msg);
    if (g) {
        CHECK(g->alignment == 256 && g->data_offset % 256 == 0 && g->tensors[1].offset == 256);
        ember_gguf_close(g);
    }

    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    CHECK(ember_gguf_write(w, "/nonexistent-dir/x.gguf", &err) == EMBER_ERR_IO && has(err.msg, "/nonexistent-dir/x.gguf"));
    ember_gguf_writer_free(w);

    ember_gguf *none = NULL;
    CHECK(ember_gguf_open("/nonexistent-dir/y.gguf", &none, &err) == EMBER_ERR_IO && none == NULL);
    CHECK(has(err.msg, "/nonexistent-dir/y.gguf"));
}

/* ---- synthetic llama models ----------------------------------------------------- */

typedef struct llama_spec {
    const char *arch;
    uint32_t dim, layers, heads, kv_heads, ffn, vocab, ctx, rope_dim;
    ember_dtype mat, norm;
    bool tied, vocab_key, tokens;
    const char *wrong_shape; /* this tensor gets one row too many */
    const char *leave_out;   /* this tensor is not written */
} llama_spec;

static const llama_spec base_spec = {
    "llama", 32, 2, 4, 2, 64, 40, 128, 0, EMBER_DTYPE_F32, EMBER_DTYPE_F32, false, false, true, NULL, NULL,
};

static void add_weight(ember_gguf_writer *w, const llama_spec *s, const char *name,
                       ember_dtype type, uint64_t ne0, uint64_t ne1, tu_rng *r)
{
    if (s->leave_out && strcmp(name, s->leave_out) == 0) return;
    if (s->wrong_shape && strcmp(name, s->wrong_shape) == 0) ne1 += 1;
    uint64_t ne[2] = { ne0, ne1 }, nbytes = ember_dtype_size(type, ne0 * ne1);
    uint8_t *p = malloc(nbytes);
    fill_bytes(r, p, nbytes); /* contents do not matter to the loader */
    CHECK(ember_gguf_add_tensor(w, name, type, ne1 == 1 ? 1 : 2, ne, p, nbytes) == EMBER_OK);
    free(p);
}

static void write_llama(const char *path, const llama_spec *s)
{
    ember_err err = { "" };
    ember_gguf_writer *w;
    tu_rng r = { 7 };
    uint32_t hd = s->dim / (s->heads ? s->heads : 1);
    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    ember_gguf_add_str(w, "general.architecture", s->arch);
    ember_gguf_add_u32(w, "llama.embedding_length", s->dim);
    ember_gguf_add_u32(w, "llama.block_count", s->layers);
    ember_gguf_add_u32(w, "llama.feed_forward_length", s->ffn);
    ember_gguf_add_u32(w, "llama.attention.head_count", s->heads);
    ember_gguf_add_u32(w, "llama.attention.head_count_kv", s->kv_heads);
    ember_gguf_add_u32(w, "llama.context_length", s->ctx);
    ember_gguf_add_f32(w, "llama.rope.freq_base", 500000.0f);
    ember_gguf_add_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-6f);
    if (s->rope_dim) ember_gguf_add_u32(w, "llama.rope.dimension_count", s->rope_dim);
    if (s->vocab_key) ember_gguf_add_u32(w, "llama.vocab_size", s->vocab);
    if (s->tokens) {
        const char **tok = malloc(s->vocab * sizeof *tok);
        for (uint32_t i = 0; i < s->vocab; i++) tok[i] = "tok";
        ember_gguf_add_arr_str(w, "tokenizer.ggml.tokens", tok, s->vocab);
        free(tok);
    }
    add_weight(w, s, "token_embd.weight", s->mat, s->dim, s->vocab, &r);
    add_weight(w, s, "output_norm.weight", s->norm, s->dim, 1, &r);
    if (!s->tied) add_weight(w, s, "output.weight", s->mat, s->dim, s->vocab, &r);
    for (uint32_t l = 0; l < s->layers; l++) {
        char n[9][64];
        const char *parts[9] = { "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                 "ffn_norm", "ffn_gate", "ffn_up", "ffn_down" };
        for (int i = 0; i < 9; i++) snprintf(n[i], sizeof n[i], "blk.%u.%s.weight", l, parts[i]);
        uint64_t q = (uint64_t)s->heads * hd, kv = (uint64_t)s->kv_heads * hd;
        add_weight(w, s, n[0], s->norm, s->dim, 1, &r);
        add_weight(w, s, n[1], s->mat, s->dim, q, &r);
        add_weight(w, s, n[2], s->mat, s->dim, kv, &r);
        add_weight(w, s, n[3], s->mat, s->dim, kv, &r);
        add_weight(w, s, n[4], s->mat, q, s->dim, &r);
        add_weight(w, s, n[5], s->norm, s->dim, 1, &r);
        add_weight(w, s, n[6], s->mat, s->dim, s->ffn, &r);
        add_weight(w, s, n[7], s->mat, s->dim, s->ffn, &r);
        add_weight(w, s, n[8], s->mat, s->ffn, s->dim, &r);
    }
    CHECKF(ember_gguf_write(w, path, &err) == EMBER_OK, "%s", err.msg);
    ember_gguf_writer_free(w);
}

/* Writes the model, opens it and runs ember_llama_load; returns its status. */
static ember_status load_spec(const char *name, const llama_spec *s, ember_llama *m, ember_err *err)
{
    char path[512];
    ember_gguf *g = NULL;
    snprintf(path, sizeof path, "%s", tmp(name));
    write_llama(path, s);
    ember_status st = ember_gguf_open(path, &g, err);
    CHECKF(st == EMBER_OK, "%s: %s", name, err->msg);
    if (st) return st;
    st = ember_llama_load(g, m, err);
    if (st) CHECKF(has(err->msg, path), "message without the file name: %s", err->msg);
    if (!st) /* m's tensors point into g: look at them before closing it */
        CHECK(m->tok_embd->data != NULL && m->layers[m->hp.n_layers - 1].w_down->ne[0] == m->hp.ffn_dim &&
              m->layers[0].wk->ne[1] == (uint64_t)m->hp.n_kv_heads * m->hp.head_dim);
    ember_gguf_close(g); /* after this only m's hp and pointer identities are used */
    return st;
}

static void expect_refused(const char *name, const llama_spec *s, ember_status code, const char *part)
{
    ember_llama m;
    ember_err err = { "" };
    ember_status st = load_spec(name, s, &m, &err);
    CHECKF(st == code, "%s: got %s (%s)", name, ember_status_name(st), err.msg);
    CHECKF(has(err.msg, part), "%s: message '%s' lacks '%s'", name, err.msg, part);
    CHECK(m.layers == NULL);
}

static void test_llama_synthetic(void)
{
    ember_llama m;
    ember_err err = { "" };
    llama_spec s = base_spec;
    CHECKF(load_spec("llama-ok", &s, &m, &err) == EMBER_OK, "%s", err.msg);
    CHECK(m.hp.dim == 32 && m.hp.n_layers == 2 && m.hp.n_heads == 4 && m.hp.n_kv_heads == 2 &&
          m.hp.head_dim == 8 && m.hp.rope_dim == 8 && m.hp.ffn_dim == 64 && m.hp.n_vocab == 40 &&
          m.hp.ctx_len == 128 && m.hp.rope_base == 500000.0f && m.hp.rms_eps == 1e-6f);
    CHECK(m.output != m.tok_embd && m.layers);
    ember_llama_free(&m);
    CHECK(m.layers == NULL);

    s = base_spec, s.tied = true, s.tokens = false, s.mat = EMBER_DTYPE_Q8_0, s.rope_dim = 4;
    CHECKF(load_spec("llama-q8-tied", &s, &m, &err) == EMBER_OK, "%s", err.msg);
    CHECK(m.output == m.tok_embd && m.hp.n_vocab == 40 && m.hp.rope_dim == 4); /* vocab from token_embd */
    ember_llama_free(&m);

    s = base_spec, s.mat = EMBER_DTYPE_F16, s.vocab_key = true, s.tokens = false;
    CHECKF(load_spec("llama-f16", &s, &m, &err) == EMBER_OK, "%s", err.msg);
    ember_llama_free(&m);

    s = base_spec, s.wrong_shape = "blk.1.attn_k.weight";
    expect_refused("llama-bad-k", &s, EMBER_ERR_FORMAT, "tensor 'blk.1.attn_k.weight' has shape [32, 17], expected [32, 16]");
    s = base_spec, s.wrong_shape = "output.weight";
    expect_refused("llama-bad-output", &s, EMBER_ERR_FORMAT, "'output.weight'");
    s = base_spec, s.wrong_shape = "blk.0.ffn_down.weight";
    expect_refused("llama-bad-down", &s, EMBER_ERR_FORMAT, "'blk.0.ffn_down.weight'");
    s = base_spec, s.leave_out = "blk.1.ffn_up.weight";
    expect_refused("llama-missing", &s, EMBER_ERR_FORMAT, "missing tensor 'blk.1.ffn_up.weight'");
    s = base_spec, s.arch = "gpt2";
    expect_refused("llama-gpt2", &s, EMBER_ERR_UNSUPPORTED, "unsupported architecture 'gpt2'");
    s = base_spec, s.heads = 3;
    expect_refused("llama-heads", &s, EMBER_ERR_FORMAT, "head_count 3 does not divide");
    s = base_spec, s.kv_heads = 3;
    expect_refused("llama-kv-heads", &s, EMBER_ERR_FORMAT, "head_count_kv 3");
    s = base_spec, s.rope_dim = 5;
    expect_refused("llama-rope-odd", &s, EMBER_ERR_FORMAT, "dimension_count 5");
    s = base_spec, s.rope_dim = 16;
    expect_refused("llama-rope-big", &s, EMBER_ERR_FORMAT, "dimension_count 16");
    s = base_spec, s.norm = EMBER_DTYPE_F16;
    expect_refused("llama-norm-f16", &s, EMBER_ERR_FORMAT, "norms must be F32");
    s = base_spec, s.vocab_key = true, s.tokens = false, s.wrong_shape = "token_embd.weight";
    expect_refused("llama-vocab", &s, EMBER_ERR_FORMAT, "'token_embd.weight' has shape [32, 41], expected [32, 40]");
    s = base_spec, s.layers = 1; /* the file then claims 1000 layers */
    {
        char path[512];
        ember_gguf *g = NULL;
        ember_gguf_writer *w;
        snprintf(path, sizeof path, "%s", tmp("llama-one"));
        write_llama(path, &s);
        CHECK(ember_gguf_open(path, &g, &err) == EMBER_OK);
        CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
        const char *const skip[] = { "llama.block_count", NULL };
        ember_gguf_copy_kv(w, g, skip);
        ember_gguf_add_u32(w, "llama.block_count", 1000);
        for (uint64_t i = 0; g && i < g->n_tensors; i++) {
            const ember_gguf_tensor *t = &g->tensors[i];
            ember_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
        }
        snprintf(path, sizeof path, "%s", tmp("llama-1000-layers"));
        CHECK(ember_gguf_write(w, path, &err) == EMBER_OK);
        ember_gguf_writer_free(w);
        ember_gguf_close(g);
        CHECK(ember_gguf_open(path, &g, &err) == EMBER_OK);
        if (g) {
            CHECK(ember_llama_load(g, &m, &err) == EMBER_ERR_FORMAT && has(err.msg, "block_count 1000"));
            ember_gguf_close(g);
        }
    }
}

/* ---- the real files in ../shared ------------------------------------------------ */

static const struct { const char *name; uint64_t ne0, ne1; } stories_shapes[] = {
    { "token_embd.weight", 64, 512 }, { "output.weight", 64, 512 },
    { "output_norm.weight", 64, 1 }, { "blk.4.attn_q.weight", 64, 64 },
    { "blk.0.attn_k.weight", 64, 32 }, { "blk.2.attn_v.weight", 64, 32 },
    { "blk.3.attn_output.weight", 64, 64 }, { "blk.1.ffn_gate.weight", 64, 172 },
    { "blk.1.ffn_up.weight", 64, 172 }, { "blk.4.ffn_down.weight", 172, 64 },
    { "blk.0.attn_norm.weight", 64, 1 }, { "blk.4.ffn_norm.weight", 64, 1 },
};

static void check_stories_meta(const ember_gguf *g, uint32_t version, uint64_t n_kv)
{
    ember_err err = { "" };
    uint32_t u = 0;
    ember_gguf_str s;
    const ember_gguf_kv *kv;
    CHECKF(g->version == version && g->n_tensors == 48 && g->n_kv == n_kv && g->alignment == 32,
           "%s: version %u, %llu tensors, %llu keys", g->path, g->version,
           (unsigned long long)g->n_tensors, (unsigned long long)g->n_kv);
    CHECK(ember_gguf_get_str(g, "general.architecture", &s, &err) == EMBER_OK && ember_gguf_str_eq(s, "llama"));
    CHECK(ember_gguf_get_u32(g, "llama.embedding_length", &u, &err) == EMBER_OK && u == 64);
    CHECK(ember_gguf_get_u32(g, "llama.feed_forward_length", &u, &err) == EMBER_OK && u == 172);
    CHECK(ember_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &u, &err) == EMBER_OK && u == 1);
    CHECK(ember_gguf_get_arr(g, "tokenizer.ggml.tokens", EMBER_GGUF_STRING, &kv, &err) == EMBER_OK &&
          kv->arr_n == 512 && ember_gguf_str_eq(kv->arr_str[1], "<s>") &&
          ember_gguf_str_eq(kv->arr_str[3], "<0x00>"));
    CHECK(ember_gguf_get_arr(g, "tokenizer.ggml.scores", EMBER_GGUF_FLOAT32, &kv, &err) == EMBER_OK &&
          kv->arr_n == 512);
    for (size_t i = 0; i < sizeof stories_shapes / sizeof *stories_shapes; i++) {
        const ember_gguf_tensor *t = ember_gguf_find_tensor(g, stories_shapes[i].name);
        CHECKF(t && t->ne[0] == stories_shapes[i].ne0 && t->ne[1] == stories_shapes[i].ne1 &&
               t->ne[2] == 1 && t->n_dims == (stories_shapes[i].ne1 == 1 ? 1u : 2u),
               "%s: %s", g->path, stories_shapes[i].name);
    }
}

static ember_gguf *open_shared(const char *dir, const char *rel)
{
    char path[1024];
    ember_err err = { "" };
    ember_gguf *g = NULL;
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    CHECKF(ember_gguf_open(path, &g, &err) == EMBER_OK, "%s", err.msg);
    return g;
}

static void check_stories_llama(const ember_gguf *g)
{
    ember_llama m;
    ember_err err = { "" };
    CHECKF(ember_llama_load(g, &m, &err) == EMBER_OK, "%s", err.msg);
    const ember_hparams *hp = &m.hp;
    CHECKF(hp->dim == 64 && hp->n_layers == 5 && hp->n_heads == 8 && hp->n_kv_heads == 4 &&
           hp->ffn_dim == 172 && hp->n_vocab == 512 && hp->head_dim == 8 && hp->rope_dim == 8 &&
           hp->ctx_len == 512 && hp->rope_base == 10000.0f && fabsf(hp->rms_eps - 1e-5f) < 1e-9f,
           "%s: hparams", g->path);
    CHECK(m.output && m.output != m.tok_embd && m.layers && m.layers[4].w_down->ne[0] == 172);
    ember_llama_free(&m);
}

static void test_shared(void)
{
    const char *dir = tu_shared_dir();
    if (!dir) {
        printf("note: EMBER_SHARED absent, real-file checks skipped\n");
        return;
    }
    ember_gguf *v1 = open_shared(dir, "models/stories260K/tinyllamas-stories-260k-f32.gguf");
    ember_gguf *v3 = open_shared(dir, "models/stories260K/stories260K-f32.v3.gguf");
    ember_gguf *q8 = open_shared(dir, "models/stories260K/tinyllamas-stories-260k-q8_0.gguf");
    ember_gguf *voc = open_shared(dir, "testdata/tokenizer/llama-spm/llama2-spm-vocab.v3.gguf");
    if (v1) check_stories_meta(v1, 1, 18), check_stories_llama(v1);
    if (v3) check_stories_meta(v3, 3, 18), check_stories_llama(v3);
    if (v1 && v3) { /* the v3 file is a rewrite with byte-identical tensor data */
        for (uint64_t i = 0; i < v1->n_tensors; i++) {
            const ember_gguf_tensor *a = &v1->tensors[i], *b = ember_gguf_find_tensor(v3, a->name);
            CHECKF(b && a->nbytes == b->nbytes && a->type == EMBER_DTYPE_F32 &&
                   memcmp(a->data, b->data, a->nbytes) == 0, "%s", a->name);
        }
    }
    if (q8) {
        check_stories_meta(q8, 2, 20);
        const ember_gguf_tensor *t = ember_gguf_find_tensor(q8, "blk.0.ffn_down.weight");
        CHECK(t && t->type == EMBER_DTYPE_Q8_0 && t->nbytes == 344 * 34); /* flat blocks */
        t = ember_gguf_find_tensor(q8, "blk.0.attn_norm.weight");
        CHECK(t && t->type == EMBER_DTYPE_F32);
        ember_llama m;
        ember_err err = { "" };
        CHECK(ember_llama_load(q8, &m, &err) != EMBER_OK && m.layers == NULL);
        CHECKF(has(err.msg, q8->path) && has(err.msg, "ffn_down") && has(err.msg, "cross rows"),
               "%s", err.msg);
    }
    if (voc) {
        const ember_gguf_kv *kv;
        ember_err err = { "" };
        bool add_bos = false;
        CHECK(voc->version == 3 && voc->n_tensors == 0 && voc->n_kv == 11);
        CHECK(ember_gguf_get_arr(voc, "tokenizer.ggml.tokens", EMBER_GGUF_STRING, &kv, &err) == EMBER_OK &&
              kv->arr_n == 32000 && ember_gguf_str_eq(kv->arr_str[2], "</s>"));
        CHECK(ember_gguf_get_arr(voc, "tokenizer.ggml.token_type", EMBER_GGUF_INT32, &kv, &err) == EMBER_OK &&
              kv->arr_n == 32000);
        CHECK(ember_gguf_opt_bool(voc, "tokenizer.ggml.add_bos_token", &add_bos, &err) == EMBER_OK && add_bos);
        ember_llama m;
        CHECK(ember_llama_load(voc, &m, &err) == EMBER_ERR_FORMAT && has(err.msg, "missing key"));
    }
    if (v1) { /* a v1 file through the writer: loads with the same hyper-parameters */
        ember_err err = { "" };
        ember_gguf *g = NULL;
        char path[512];
        snprintf(path, sizeof path, "%s", tmp("stories-rewritten"));
        rewrite(v1, path);
        CHECKF(ember_gguf_open(path, &g, &err) == EMBER_OK, "%s", err.msg);
        if (g) {
            check_stories_meta(g, 3, 18);
            check_stories_llama(g);
            ember_gguf_close(g);
        }
    }
    ember_gguf_close(v1);
    ember_gguf_close(v3);
    ember_gguf_close(q8);
    ember_gguf_close(voc);
}

/* A tensor made while the file is written (ember_gguf_add_tensor_lazy): the value of byte
 * i is i * 7 mod 251, so that every page differs. */
static ember_status fill_pattern(void *user, void *dst, uint64_t nbytes)
{
    (void)user;
    for (uint64_t i = 0; i < nbytes; i++) ((uint8_t *)dst)[i] = (uint8_t)(i * 7 % 251);
    return EMBER_OK;
}

static ember_status fill_fails(void *user, void *dst, uint64_t nbytes)
{
    (void)user, (void)dst, (void)nbytes;
    return EMBER_ERR_OUT_OF_MEMORY;
}

static bool is_pattern(const uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i] != (uint8_t)(i * 7 % 251)) return false;
    return true;
}

/* Lazy tensors are written as made, a failing fill fails the write and leaves no file;
 * ember_gguf_release drops a mapped tensor's pages yet it reads the same after (mapped in
 * again from the file), and leaves a file opened from memory alone (the caller's bytes). */
static void test_lazy_and_release(void)
{
    ember_err err = { "" };
    ember_gguf_writer *w = NULL;
    const uint64_t ne[2] = {4096, 64}; /* 256 KiB of F32: many pages */
    const uint64_t nbytes = ne[0] * ne[1] * 4;
    char path[512];
    snprintf(path, sizeof path, "%s", tmp("lazy"));
    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    CHECK(ember_gguf_add_u32(w, "k", 1) == EMBER_OK);
    CHECK(ember_gguf_add_tensor_lazy(w, "big", EMBER_DTYPE_F32, 2, ne, nbytes, fill_pattern, NULL) == EMBER_OK);
    CHECK(ember_gguf_add_tensor_lazy(w, "none", EMBER_DTYPE_F32, 2, ne, nbytes, NULL, NULL) == EMBER_ERR_INVALID_ARG);
    CHECKF(ember_gguf_write(w, path, &err) == EMBER_OK, "%s", err.msg);
    ember_gguf_writer_free(w);

    ember_gguf *g = NULL;
    CHECKF(ember_gguf_open(path, &g, &err) == EMBER_OK, "%s", err.msg);
    if (g) {
        const ember_gguf_tensor *t = ember_gguf_find_tensor(g, "big");
        CHECK(t && t->nbytes == nbytes && is_pattern(t->data, nbytes));
        ember_gguf_release(g, t);
        CHECK(t && is_pattern(t->data, nbytes)); /* read back from the file */
        size_t n = 0;
        uint8_t *copy = slurp(path, &n);
        ember_gguf *m = NULL;
        CHECK(copy && ember_gguf_open_memory(copy, n, "mem.gguf", &m, &err) == EMBER_OK);
        if (m) {
            const ember_gguf_tensor *mt = ember_gguf_find_tensor(m, "big");
            ember_gguf_release(m, mt);
            CHECK(mt && is_pattern(mt->data, nbytes)); /* untouched: not the library's to drop */
            ember_gguf_close(m);
        }
        free(copy);
        ember_gguf_close(g);
    }
    ember_gguf_release(NULL, NULL); /* nothing */

    CHECK(ember_gguf_writer_create(&w, &err) == EMBER_OK);
    CHECK(ember_gguf_add_tensor_lazy(w, "big", EMBER_DTYPE_F32, 2, ne, nbytes, fill_fails, NULL) == EMBER_OK);
    remove(path);
    CHECK(ember_gguf_write(w, path, &err) == EMBER_ERR_OUT_OF_MEMORY);
    CHECKF(has(err.msg, "making a tensor's bytes failed"), "%s", err.msg);
    CHECK(fopen(path, "rb") == NULL);
    ember_gguf_writer_free(w);
}

int main(void)
{
    make_tensor_data();
    test_roundtrip();
    test_every_type(1);
    test_every_type(3);
    test_nested_array();
    test_tensor_alignment();
    test_getters();
    test_writer_errors();
    test_llama_synthetic();
    test_shared();
    test_lazy_and_release();
    for (size_t i = 0; i < N_TENSORS; i++) free(tensors[i].data);
    return tu_finish("test_gguf");
}
