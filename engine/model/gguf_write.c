/* gguf_write.c — the GGUF writer: collects key/value pairs and tensors in memory, then
 * writes a version 3 file in one go.
 *
 * Key/value pairs are serialized as they are added (their encoding does not depend on
 * anything that comes later); tensors are kept until ember_gguf_write, which alone knows
 * their offsets. The first failure of an add_* call is kept ("sticky") and reported by
 * ember_gguf_write, so a caller may add many things and check once. The data section is
 * aligned to 32 bytes, or to general.alignment when the caller sets that key (as a
 * UINT32 power of two); each tensor's data is zero-padded to the alignment, the last
 * one included, as llama.cpp does. */
#include "common/alloc.h"
#include "gguf_write.h"
#include "platform/os_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WRITER_ALIGNMENT 32
#define WRITER_MAX_ALIGNMENT (1u << 20)

typedef unsigned long long ull;

typedef struct wtensor {
    char *name;
    ember_dtype type;
    uint32_t n_dims;
    uint64_t ne[4];
    void *data;        /* NULL for a lazy tensor: */
    ember_gguf_fill_fn fill;
    void *user;
    uint64_t nbytes;
    uint64_t offset;   /* filled in by ember_gguf_write */
} wtensor;

struct ember_gguf_writer {
    ember_status status;  /* the first add_* failure, or EMBER_OK */
    ember_err err;
    uint32_t alignment;
    uint8_t *meta;        /* serialized key/value pairs */
    size_t meta_len, meta_cap;
    char **keys;          /* to refuse duplicates: the reader would refuse the file */
    uint64_t n_kv, keys_cap;
    wtensor *tensors;
    uint64_t n_tensors, tensors_cap;
};

/* ---- building ------------------------------------------------------------------- */

static ember_status fail(ember_gguf_writer *w, ember_status code, const char *fmt, const char *what)
{
    if (!w->status) {
        w->status = code;
        ember_fail(&w->err, code, fmt, what);
    }
    return w->status;
}

/* Grows an array to hold at least n items of size sz; doubles to keep appends cheap. */
static int grow(void **p, uint64_t *cap, uint64_t n, size_t sz)
{
    if (n <= *cap) return 1;
    uint64_t c = *cap ? *cap * 2 : 16;
    while (c < n) c *= 2;
    if (c > SIZE_MAX / sz) return 0;
    void *q = ember_realloc(*p, c * sz);
    if (!q) return 0;
    *p = q;
    *cap = c;
    return 1;
}

static ember_status put(ember_gguf_writer *w, const void *src, size_t n)
{
    uint64_t cap = w->meta_cap;
    if (w->status) return w->status;
    if (n == 0) return EMBER_OK;
    if (!grow((void **)&w->meta, &cap, (uint64_t)w->meta_len + n, 1))
        return fail(w, EMBER_ERR_OUT_OF_MEMORY, "%s", "out of memory");
    w->meta_cap = (size_t)cap;
    memcpy(w->meta + w->meta_len, src, n);
    w->meta_len += n;
    return EMBER_OK;
}

/* Little-endian store of n <= 8 bytes, whatever the host's byte order. */
static void store_le(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++, v >>= 8) p[i] = (uint8_t)v;
}

static ember_status put_uint(ember_gguf_writer *w, uint64_t v, unsigned n)
{
    uint8_t b[8];
    store_le(b, v, n);
    return put(w, b, n);
}

static ember_status put_str(ember_gguf_writer *w, const char *s, uint64_t len)
{
    ember_status st = put_uint(w, len, 8);
    return st ? st : put(w, s, (size_t)len);
}

/* Starts a key/value pair: checks the key, writes it and the value type. */
static ember_status begin_kv(ember_gguf_writer *w, const char *key, ember_gguf_type type)
{
    if (w->status) return w->status;
    if (!key || !key[0]) return fail(w, EMBER_ERR_INVALID_ARG, "%s", "empty key");
    for (uint64_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->keys[i], key) == 0)
            return fail(w, EMBER_ERR_INVALID_ARG, "duplicate key %s", key);
    char *copy = ember_strdup(key);
    if (!copy || !grow((void **)&w->keys, &w->keys_cap, w->n_kv + 1, sizeof *w->keys)) {
        ember_free(copy);
        return fail(w, EMBER_ERR_OUT_OF_MEMORY, "%s", "out of memory");
    }
    w->keys[w->n_kv++] = copy;
    ember_status st = put_str(w, key, strlen(key));
    return st ? st : put_uint(w, (uint64_t)type, 4);
}

static ember_status begin_array(ember_gguf_writer *w, const char *key, ember_gguf_type elem,
                                uint64_t n, const void *v)
{
    if (!w) return EMBER_ERR_INVALID_ARG;
    if (!v && n) return fail(w, EMBER_ERR_INVALID_ARG, "array %s: no data", key ? key : "");
    ember_status st = begin_kv(w, key, EMBER_GGUF_ARRAY);
    if (!st) st = put_uint(w, (uint64_t)elem, 4);
    return st ? st : put_uint(w, n, 8);
}

ember_status ember_gguf_writer_create(ember_gguf_writer **out, ember_err *err)
{
    *out = ember_calloc(1, sizeof **out);
    if (!*out) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    (*out)->alignment = WRITER_ALIGNMENT;
    return EMBER_OK;
}

void ember_gguf_writer_free(ember_gguf_writer *w)
{
    if (!w) return;
    for (uint64_t i = 0; i < w->n_kv; i++) ember_free(w->keys[i]);
    for (uint64_t i = 0; i < w->n_tensors; i++) {
        ember_free(w->tensors[i].name);
        ember_free(w->tensors[i].data);
    }
    ember_free(w->keys);
    ember_free(w->tensors);
    ember_free(w->meta);
    ember_free(w);
}

ember_status ember_gguf_add_u32(ember_gguf_writer *w, const char *key, uint32_t v)
{
    if (!w) return EMBER_ERR_INVALID_ARG;
    /* The one key that changes the layout: the data section follows it. */
    if (key && strcmp(key, "general.alignment") == 0) {
        if (v == 0 || (v & (v - 1)) || v > WRITER_MAX_ALIGNMENT)
            return fail(w, EMBER_ERR_INVALID_ARG, "%s: not a power of two up to 2^20",
                        "general.alignment");
        if (!w->status) w->alignment = v;
    }
    ember_status st = begin_kv(w, key, EMBER_GGUF_UINT32);
    return st ? st : put_uint(w, v, 4);
}

ember_status ember_gguf_add_i32(ember_gguf_writer *w, const char *key, int32_t v)
{
    if (!w) return EMBER_ERR_INVALID_ARG;
    ember_status st = begin_kv(w, key, EMBER_GGUF_INT32);
    return st ? st : put_uint(w, (uint32_t)v, 4);
}

ember_status ember_gguf_add_f32(ember_gguf_writer *w, const char *key, float v)
{
    uint32_t bits;
    if (!w) return EMBER_ERR_INVALID_ARG;
    memcpy(&bits, &v, sizeof bits);
    ember_status st = begin_kv(w, key, EMBER_GGUF_FLOAT32);
    return st ? st : put_uint(w, bits, 4);
}

ember_status ember_gguf_add_bool(ember_gguf_writer *w, const char *key, bool v)
{
    if (!w) return EMBER_ERR_INVALID_ARG;
    ember_status st = begin_kv(w, key, EMBER_GGUF_BOOL);
    return st ? st : put_uint(w, v ? 1 : 0, 1);
}

ember_status ember_gguf_add_str(ember_gguf_writer *w, const char *key, const char *v)
{
    if (!w) return EMBER_ERR_INVALID_ARG;
    if (!v) return fail(w, EMBER_ERR_INVALID_ARG, "string %s: NULL value", key ? key : "");
    ember_status st = begin_kv(w, key, EMBER_GGUF_STRING);
    return st ? st : put_str(w, v, strlen(v));
}

ember_status ember_gguf_add_arr_str(ember_gguf_writer *w, const char *key, const char *const *v,
                                    uint64_t n)
{
    ember_status st = begin_array(w, key, EMBER_GGUF_STRING, n, v);
    for (uint64_t i = 0; i < n && !st; i++) {
        if (!v[i]) return fail(w, EMBER_ERR_INVALID_ARG, "array %s: NULL string", key);
        st = put_str(w, v[i], strlen(v[i]));
    }
    return st;
}

/* 32-bit elements, converted to little-endian one by one. */
static ember_status put_words(ember_gguf_writer *w, const void *v, uint64_t n)
{
    ember_status st = EMBER_OK;
    for (uint64_t i = 0; i < n && !st; i++) {
        uint32_t x;
        memcpy(&x, (const uint8_t *)v + 4 * i, 4);
        st = put_uint(w, x, 4);
    }
    return st;
}

ember_status ember_gguf_add_arr_f32(ember_gguf_writer *w, const char *key, const float *v,
                                    uint64_t n)
{
    ember_status st = begin_array(w, key, EMBER_GGUF_FLOAT32, n, v);
    return st ? st : put_words(w, v, n);
}

ember_status ember_gguf_add_arr_i32(ember_gguf_writer *w, const char *key, const int32_t *v,
                                    uint64_t n)
{
    ember_status st = begin_array(w, key, EMBER_GGUF_INT32, n, v);
    return st ? st : put_words(w, v, n);
}

static ember_status check_tensor(ember_gguf_writer *w, const char *name, ember_dtype type,
                                 uint32_t n_dims, const uint64_t *ne, const void *data,
                                 uint64_t nbytes)
{
    uint64_t n = 1;
    if (!name || !name[0]) return fail(w, EMBER_ERR_INVALID_ARG, "%s", "tensor with no name");
    for (uint64_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return fail(w, EMBER_ERR_INVALID_ARG, "duplicate tensor %s", name);
    const ember_dtype_info *d = ember_dtype_find(type);
    if (!d) return fail(w, EMBER_ERR_INVALID_ARG, "tensor %s: unsupported type", name);
    if (n_dims < 1 || n_dims > 4 || !ne || !data)
        return fail(w, EMBER_ERR_INVALID_ARG, "tensor %s: bad n_dims, shape or data", name);
    for (uint32_t i = 0; i < n_dims; i++) {
        if (ne[i] == 0 || ne[i] > UINT64_MAX / 4 / n)
            return fail(w, EMBER_ERR_INVALID_ARG, "tensor %s: bad dimension", name);
        n *= ne[i];
    }
    if (n % d->block) {
        char why[160];
        snprintf(why, sizeof why, "%.80s: %s element count is not a multiple of %u", name, d->name, d->block);
        return fail(w, EMBER_ERR_INVALID_ARG, "tensor %s", why);
    }
    if (nbytes != ember_dtype_size(type, n) || nbytes > SIZE_MAX)
        return fail(w, EMBER_ERR_INVALID_ARG, "tensor %s: nbytes does not match its shape", name);
    return EMBER_OK;
}

/* Appends a checked tensor: its buffer (filled by the caller), or fill to make its bytes
 * later. data is only checked here. */
static ember_status append_tensor(ember_gguf_writer *w, const char *name, ember_dtype type, uint32_t n_dims,
                                  const uint64_t *ne, const void *data, uint64_t nbytes, ember_gguf_fill_fn fill,
                                  void *user)
{
    if (!w) return EMBER_ERR_INVALID_ARG;
    if (w->status) return w->status;
    ember_status st = check_tensor(w, name, type, n_dims, ne, fill ? (const void *)fill : data, nbytes);
    if (st) return st;
    if (!grow((void **)&w->tensors, &w->tensors_cap, w->n_tensors + 1, sizeof *w->tensors))
        return fail(w, EMBER_ERR_OUT_OF_MEMORY, "%s", "out of memory");
    wtensor *t = &w->tensors[w->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = ember_strdup(name);
    t->data = fill ? NULL : ember_malloc((size_t)nbytes);
    if (!t->name || (!fill && !t->data)) {
        ember_free(t->name);
        ember_free(t->data);
        return fail(w, EMBER_ERR_OUT_OF_MEMORY, "%s", "out of memory");
    }
    t->fill = fill, t->user = user;
    t->type = type;
    t->n_dims = n_dims;
    for (uint32_t i = 0; i < 4; i++) t->ne[i] = i < n_dims ? ne[i] : 1;
    t->nbytes = nbytes;
    w->n_tensors++;
    return EMBER_OK;
}

ember_status ember_gguf_add_tensor(ember_gguf_writer *w, const char *name, ember_dtype type,
                                   uint32_t n_dims, const uint64_t *ne, const void *data,
                                   uint64_t nbytes)
{
    ember_status st = append_tensor(w, name, type, n_dims, ne, data, nbytes, NULL, NULL);
    if (st == EMBER_OK) memcpy(w->tensors[w->n_tensors - 1].data, data, (size_t)nbytes);
    return st;
}

ember_status ember_gguf_add_tensor_lazy(ember_gguf_writer *w, const char *name, ember_dtype type, uint32_t n_dims,
                                        const uint64_t *ne, uint64_t nbytes, ember_gguf_fill_fn fill, void *user)
{
    if (!fill) return EMBER_ERR_INVALID_ARG;
    return append_tensor(w, name, type, n_dims, ne, NULL, nbytes, fill, user);
}

/* ---- copying metadata from a file ----------------------------------------------- */

static const unsigned value_size[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };

/* A scalar value in its file encoding (the reader widened it into the union). */
static ember_status put_scalar(ember_gguf_writer *w, const ember_gguf_kv *kv)
{
    unsigned n = value_size[kv->type];
    if (kv->type == EMBER_GGUF_FLOAT32) {
        float f = (float)kv->v.f64;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        return put_uint(w, bits, 4);
    }
    if (kv->type == EMBER_GGUF_FLOAT64) {
        uint64_t bits;
        memcpy(&bits, &kv->v.f64, 8);
        return put_uint(w, bits, 8);
    }
    return put_uint(w, kv->v.u64, n); /* two's complement: i64 and u64 share the bits */
}

static ember_status put_array(ember_gguf_writer *w, const ember_gguf_kv *kv)
{
    ember_status st = put_uint(w, (uint64_t)kv->arr_type, 4);
    if (!st) st = put_uint(w, kv->arr_n, 8);
    if (kv->arr_type != EMBER_GGUF_STRING) /* already little-endian in the file */
        return st ? st : put(w, kv->arr_data, (size_t)(kv->arr_n * value_size[kv->arr_type]));
    for (uint64_t i = 0; i < kv->arr_n && !st; i++)
        st = put_str(w, kv->arr_str[i].ptr, kv->arr_str[i].len);
    return st;
}

static bool skipped(const char *key, const char *const *skip)
{
    for (; skip && *skip; skip++)
        if (strcmp(*skip, key) == 0) return true;
    return false;
}

static ember_status copy_one(ember_gguf_writer *w, const ember_gguf_kv *kv)
{
    /* Through add_u32 so that the writer lays its data out the way the key says. */
    if (strcmp(kv->key, "general.alignment") == 0) {
        if (kv->type == EMBER_GGUF_FLOAT32 || kv->type == EMBER_GGUF_FLOAT64 ||
            kv->type == EMBER_GGUF_BOOL || kv->type == EMBER_GGUF_STRING ||
            kv->type == EMBER_GGUF_ARRAY || kv->v.u64 > UINT32_MAX) /* negative too */
            return fail(w, EMBER_ERR_INVALID_ARG, "%s: not a 32-bit unsigned integer", kv->key);
        return ember_gguf_add_u32(w, kv->key, (uint32_t)kv->v.u64);
    }
    ember_status st = begin_kv(w, kv->key, kv->type);
    if (st) return st;
    if (kv->type == EMBER_GGUF_STRING) return put_str(w, kv->v.str.ptr, kv->v.str.len);
    if (kv->type == EMBER_GGUF_ARRAY) return put_array(w, kv);
    return put_scalar(w, kv);
}

ember_status ember_gguf_copy_kv(ember_gguf_writer *w, const ember_gguf *g, const char *const *skip)
{
    if (!w || !g) return EMBER_ERR_INVALID_ARG;
    ember_status st = w->status;
    for (uint64_t i = 0; i < g->n_kv && !st; i++)
        if (!skipped(g->kv[i].key, skip)) st = copy_one(w, &g->kv[i]);
    return st;
}

/* ---- writing the file ----------------------------------------------------------- */

typedef struct out {
    FILE *f;
    uint64_t pos;
    bool bad;
    ember_status fill_status; /* a lazy tensor's fill that failed */
} out;

static void out_bytes(out *o, const void *p, size_t n)
{
    if (!o->bad && n && fwrite(p, 1, n, o->f) != n) o->bad = true;
    o->pos += n;
}

static void out_uint(out *o, uint64_t v, unsigned n)
{
    uint8_t b[8];
    store_le(b, v, n);
    out_bytes(o, b, n);
}

static void out_pad(out *o, uint32_t alignment)
{
    static const uint8_t zeros[256];
    uint64_t n = (alignment - o->pos % alignment) % alignment;
    while (n > 0) {
        size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
        out_bytes(o, zeros, k);
        n -= k;
    }
}

static void out_tensor_info(out *o, const wtensor *t)
{
    out_uint(o, strlen(t->name), 8);
    out_bytes(o, t->name, strlen(t->name));
    out_uint(o, t->n_dims, 4);
    for (uint32_t i = 0; i < t->n_dims; i++) out_uint(o, t->ne[i], 8);
    out_uint(o, (uint64_t)t->type, 4);
    out_uint(o, t->offset, 8);
}

/* A tensor's bytes: copied, or made now (and freed at once) for a lazy one. */
static void out_tensor_data(out *o, const wtensor *t)
{
    if (!t->fill) {
        out_bytes(o, t->data, (size_t)t->nbytes);
        return;
    }
    void *buf = ember_malloc((size_t)t->nbytes ? (size_t)t->nbytes : 1);
    o->fill_status = buf ? t->fill(t->user, buf, t->nbytes) : EMBER_ERR_OUT_OF_MEMORY;
    if (!o->fill_status) out_bytes(o, buf, (size_t)t->nbytes);
    ember_free(buf);
}

static void out_file(ember_gguf_writer *w, out *o)
{
    uint64_t off = 0;
    for (uint64_t i = 0; i < w->n_tensors; i++) {
        w->tensors[i].offset = off;
        off += (w->tensors[i].nbytes + w->alignment - 1) / w->alignment * w->alignment;
    }
    out_bytes(o, "GGUF", 4);
    out_uint(o, 3, 4);
    out_uint(o, w->n_tensors, 8);
    out_uint(o, w->n_kv, 8);
    out_bytes(o, w->meta, w->meta_len);
    for (uint64_t i = 0; i < w->n_tensors; i++) out_tensor_info(o, &w->tensors[i]);
    out_pad(o, w->alignment);
    for (uint64_t i = 0; i < w->n_tensors && !o->fill_status; i++) {
        out_tensor_data(o, &w->tensors[i]);
        out_pad(o, w->alignment);
    }
}

ember_status ember_gguf_write(ember_gguf_writer *w, const char *path, ember_err *err)
{
    if (!w || !path)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "ember_gguf_write: no writer or path");
    if (w->status) return ember_fail(err, w->status, "%s: %s", path, w->err.msg);
    out o = { ember_fopen(path, "wb"), 0, false, EMBER_OK };
    if (!o.f) return ember_fail(err, EMBER_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    out_file(w, &o);
    if (o.fill_status) {
        fclose(o.f);
        remove(path);
        return ember_fail(err, o.fill_status, "%s: making a tensor's bytes failed: %s", path,
                          ember_status_name(o.fill_status));
    }
    int saved = errno;
    if (!o.bad && fflush(o.f) != 0) {
        o.bad = true;
        saved = errno;
    }
    if (fclose(o.f) != 0 && !o.bad) {
        o.bad = true;
        saved = errno;
    }
    if (o.bad) {
        remove(path); /* a partial model file is worse than none */
        return ember_fail(err, EMBER_ERR_IO, "%s: write failed: %s", path, strerror(saved));
    }
    return EMBER_OK;
}
