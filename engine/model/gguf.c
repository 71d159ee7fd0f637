/* gguf.c — the GGUF reader: maps a file read-only, validates all of it, then answers
 * lookups and typed queries. See gguf.h for the contract and docs/gguf.md for what is
 * checked and why.
 *
 * Parsing is in two passes over the header. The first reads the key/value pairs and
 * tensor infos through a cursor that checks every count and length against the bytes
 * left before it trusts it (so a corrupt count can never make us allocate or loop more
 * than the file justifies). The second, once the data section's start is known,
 * checks each tensor's bytes: alignment, bounds, overlap. Messages are built inside
 * out: the cursor says what went wrong, each level prepends where ("key 3 'x'"), and
 * ember_gguf_open finally prepends the file name. */
#include "common/alloc.h"
#include "gguf.h"

#include <float.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4

typedef unsigned long long ull; /* for printf: uint64_t's format differs by platform */

/* A position in the mapping. Every read checks the bytes left first. */
typedef struct cursor {
    const uint8_t *base;
    uint64_t size, pos;
    unsigned lensz;   /* bytes of counts, lengths and dims: 4 in version 1, else 8 */
    ember_err *err;
} cursor;

/* ---- names for messages --------------------------------------------------------- */

/* Copies a name from the file into buf for a message: at most 64 bytes, control
 * characters replaced, so a corrupt name cannot garble a terminal or a log line. */
static const char *show(const char *s, uint64_t len, char buf[72])
{
    uint64_t n = len < 64 ? len : 64, i;
    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        buf[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    strcpy(buf + i, len > 64 ? "..." : "");
    return buf;
}

const char *ember_gguf_type_name(ember_gguf_type t)
{
    static const char *const names[] = {
        "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
        "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64",
    };
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "unknown";
}

/* "F32=0, F16=1, ...": the types the table can read, for the refusal's message. */
static const char *read_types(char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    for (uint64_t id = 0; id < 64 && len < cap; id++) {
        const ember_dtype_info *d = ember_dtype_find(id);
        if (d && d->to_float)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s=%llu", len ? ", " : "", d->name, (ull)id);
    }
    return buf;
}

/* ---- the cursor ----------------------------------------------------------------- */

static uint64_t left(const cursor *c) { return c->size - c->pos; }

static ember_status need(cursor *c, uint64_t n, const char *what)
{
    if (n <= left(c)) return EMBER_OK;
    return ember_fail(c->err, EMBER_ERR_FORMAT,
                      "truncated: %s at offset %llu needs %llu bytes, only %llu left",
                      what, (ull)c->pos, (ull)n, (ull)left(c));
}

/* Little-endian load of n <= 8 bytes, whatever the host's byte order. */
static uint64_t load_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    while (n-- > 0) v = v << 8 | p[n];
    return v;
}

static ember_status read_uint(cursor *c, unsigned n, const char *what, uint64_t *v)
{
    ember_status st = need(c, n, what);
    if (st) return st;
    *v = load_le(c->base + c->pos, n);
    c->pos += n;
    return EMBER_OK;
}

static ember_status read_count(cursor *c, const char *what, uint64_t *v)
{
    return read_uint(c, c->lensz, what, v);
}

static ember_status read_str(cursor *c, const char *what, ember_gguf_str *s)
{
    uint64_t n = 0;
    ember_status st = read_count(c, what, &n);
    if (st) return st;
    if (n > left(c))
        return ember_fail(c->err, EMBER_ERR_FORMAT,
                          "%s of length %llu at offset %llu extends past end of file "
                          "(%llu bytes left)", what, (ull)n, (ull)c->pos, (ull)left(c));
    s->ptr = (const char *)c->base + c->pos;
    s->len = n;
    c->pos += n;
    return EMBER_OK;
}

/* A key or tensor name: non-empty, no NUL inside (we hand out NUL-terminated copies,
 * and a NUL would make two different names compare equal). */
static ember_status read_name(cursor *c, const char *what, char **out)
{
    ember_gguf_str s = { 0 };
    ember_status st = read_str(c, what, &s);
    if (st) return st;
    if (s.len == 0) return ember_fail(c->err, EMBER_ERR_FORMAT, "empty %s", what);
    if (memchr(s.ptr, 0, s.len))
        return ember_fail(c->err, EMBER_ERR_FORMAT, "%s contains a NUL byte", what);
    char *z = ember_malloc(s.len + 1);
    if (!z) return ember_fail(c->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(z, s.ptr, s.len);
    z[s.len] = 0;
    *out = z;
    return EMBER_OK;
}

/* ---- metadata values ------------------------------------------------------------ */

/* Bytes of a fixed-size value type; 0 for STRING, ARRAY and unknown types. */
static unsigned scalar_size(uint64_t t)
{
    static const unsigned sizes[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    return t < sizeof sizes / sizeof *sizes ? sizes[t] : 0;
}

static bool is_signed(uint64_t t)
{
    return t == EMBER_GGUF_INT8 || t == EMBER_GGUF_INT16 || t == EMBER_GGUF_INT32 ||
           t == EMBER_GGUF_INT64;
}

static ember_status read_scalar(cursor *c, ember_gguf_type t, ember_gguf_kv *kv)
{
    unsigned n = scalar_size(t);
    uint64_t v = 0;
    ember_status st = read_uint(c, n, "value", &v);
    if (st) return st;
    if (t == EMBER_GGUF_FLOAT32) {
        uint32_t bits = (uint32_t)v;
        float f;
        memcpy(&f, &bits, sizeof f);
        kv->v.f64 = f;
    } else if (t == EMBER_GGUF_FLOAT64) {
        memcpy(&kv->v.f64, &v, sizeof v);
    } else if (is_signed(t)) {
        unsigned shift = 64 - 8 * n; /* sign-extend through the top bits */
        kv->v.i64 = (int64_t)(v << shift) >> shift;
    } else {
        if (t == EMBER_GGUF_BOOL && v > 1)
            return ember_fail(c->err, EMBER_ERR_FORMAT, "bool value %llu is not 0 or 1", (ull)v);
        kv->v.u64 = v;
    }
    return EMBER_OK;
}

static ember_status read_str_array(cursor *c, ember_gguf_kv *kv)
{
    /* Each string needs at least its length field: bound the count before allocating. */
    if (kv->arr_n > left(c) / c->lensz)
        return ember_fail(c->err, EMBER_ERR_FORMAT,
                          "array of %llu strings at offset %llu extends past end of file "
                          "(%llu bytes left)", (ull)kv->arr_n, (ull)c->pos, (ull)left(c));
    if (kv->arr_n == 0) return EMBER_OK;
    kv->arr_str = ember_malloc(kv->arr_n * sizeof *kv->arr_str);
    if (!kv->arr_str) return ember_fail(c->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint64_t i = 0; i < kv->arr_n; i++) {
        ember_status st = read_str(c, "string", &kv->arr_str[i]);
        if (st) return ember_fail_ctx(c->err, st, "array element %llu", (ull)i);
    }
    return EMBER_OK;
}

static ember_status read_array(cursor *c, ember_gguf_kv *kv)
{
    uint64_t t = 0;
    ember_status st = read_uint(c, 4, "array element type", &t);
    if (!st) st = read_count(c, "array length", &kv->arr_n);
    if (st) return st;
    kv->arr_type = (ember_gguf_type)t;
    if (t == EMBER_GGUF_ARRAY)
        return ember_fail(c->err, EMBER_ERR_FORMAT, "arrays of arrays are not supported");
    if (t == EMBER_GGUF_STRING) return read_str_array(c, kv);
    unsigned esize = scalar_size(t);
    if (esize == 0)
        return ember_fail(c->err, EMBER_ERR_FORMAT, "unknown array element type %llu", (ull)t);
    if (kv->arr_n > left(c) / esize)
        return ember_fail(c->err, EMBER_ERR_FORMAT,
                          "array of %llu %s values at offset %llu extends past end of file "
                          "(%llu bytes left)", (ull)kv->arr_n,
                          ember_gguf_type_name(kv->arr_type), (ull)c->pos, (ull)left(c));
    kv->arr_data = c->base + c->pos;
    c->pos += kv->arr_n * esize;
    if (t == EMBER_GGUF_BOOL)
        for (uint64_t i = 0; i < kv->arr_n; i++)
            if (kv->arr_data[i] > 1)
                return ember_fail(c->err, EMBER_ERR_FORMAT,
                                  "bool array element %llu is %u, not 0 or 1", (ull)i,
                                  kv->arr_data[i]);
    return EMBER_OK;
}

static ember_status read_kv(cursor *c, ember_gguf_kv *kv)
{
    uint64_t t = 0;
    char *key = NULL;
    ember_status st = read_name(c, "key", &key);
    kv->key = key;
    if (!st) st = read_uint(c, 4, "value type", &t);
    if (st) return st;
    kv->type = (ember_gguf_type)t;
    if (t == EMBER_GGUF_STRING) return read_str(c, "string value", &kv->v.str);
    if (t == EMBER_GGUF_ARRAY) return read_array(c, kv);
    if (scalar_size(t) == 0)
        return ember_fail(c->err, EMBER_ERR_FORMAT, "unknown value type %llu", (ull)t);
    return read_scalar(c, kv->type, kv);
}

/* ---- tensor infos --------------------------------------------------------------- */

static ember_status read_tensor_info(cursor *c, ember_gguf_tensor *t)
{
    uint64_t n_dims = 0, type = 0, n = 1;
    char *name = NULL;
    ember_status st = read_name(c, "tensor name", &name);
    t->name = name;
    if (!st) st = read_uint(c, 4, "n_dims", &n_dims);
    if (st) return st;
    if (n_dims == 0 || n_dims > GGUF_MAX_DIMS)
        return ember_fail(c->err, EMBER_ERR_FORMAT, "n_dims %llu is not in 1..%d",
                          (ull)n_dims, GGUF_MAX_DIMS);
    t->n_dims = (uint32_t)n_dims;
    for (unsigned i = 0; i < GGUF_MAX_DIMS; i++) t->ne[i] = 1;
    for (unsigned i = 0; i < n_dims; i++) {
        if ((st = read_count(c, "dimension", &t->ne[i]))) return st;
        if (t->ne[i] == 0)
            return ember_fail(c->err, EMBER_ERR_FORMAT, "dimension %u is 0", i);
        if (t->ne[i] > UINT64_MAX / n)
            return ember_fail(c->err, EMBER_ERR_FORMAT, "element count overflows 64 bits");
        n *= t->ne[i];
    }
    if ((st = read_uint(c, 4, "tensor type", &type))) return st;
    const ember_dtype_info *d = ember_dtype_find(type);
    if (!d || !d->to_float) {
        char known[256];
        return ember_fail(c->err, EMBER_ERR_FORMAT, "unsupported tensor type %llu (%s); Ember reads %s", (ull)type,
                          ember_dtype_ggml_name(type), read_types(known, sizeof known));
    }
    t->type = (ember_dtype)type;
    /* Blocks are counted over the whole tensor, not per row: some old files quantize in
     * flat blocks that straddle rows (model.c decides whether to use them). */
    if (n % d->block)
        return ember_fail(c->err, EMBER_ERR_FORMAT, "%s tensor of %llu elements, not a multiple of %u", d->name,
                          (ull)n, d->block);
    /* Keeps the byte count from overflowing; a large count that does not overflow is
     * caught with a clearer message when the data is placed (past end of file). */
    if (n > UINT64_MAX / 8)
        return ember_fail(c->err, EMBER_ERR_FORMAT, "element count %llu is absurd", (ull)n);
    t->nbytes = ember_dtype_size(t->type, n);
    return read_uint(c, 8, "tensor offset", &t->offset);
}

/* ---- the whole header ----------------------------------------------------------- */

static ember_status read_header(cursor *c, ember_gguf *g)
{
    uint64_t version = 0;
    ember_status st = need(c, 4, "magic");
    if (st) return ember_fail(c->err, EMBER_ERR_FORMAT,
                              "not a GGUF file: only %llu bytes", (ull)c->size);
    if (memcmp(c->base, "GGUF", 4) != 0)
        return ember_fail(c->err, EMBER_ERR_FORMAT,
                          "not a GGUF file: magic bytes %02x %02x %02x %02x, expected 'GGUF'",
                          c->base[0], c->base[1], c->base[2], c->base[3]);
    c->pos = 4;
    if ((st = read_uint(c, 4, "version", &version))) return st;
    if (version == 0x01000000 || version == 0x02000000 || version == 0x03000000)
        return ember_fail(c->err, EMBER_ERR_FORMAT, "big-endian GGUF files are not supported");
    if (version < 1 || version > 3)
        return ember_fail(c->err, EMBER_ERR_FORMAT,
                          "unsupported GGUF version %llu (Ember reads 1, 2 and 3)", (ull)version);
    g->version = (uint32_t)version;
    c->lensz = version == 1 ? 4 : 8;
    if ((st = read_count(c, "tensor count", &g->n_tensors))) return st;
    return read_count(c, "key/value count", &g->n_kv);
}

/* The least a key/value pair and a tensor info can take in the file. Counts above
 * what the remaining bytes could hold are refused before anything is allocated. */
static ember_status check_counts(cursor *c, const ember_gguf *g)
{
    uint64_t min_kv = c->lensz + 1 + 4 + 1;               /* key, type, 1-byte value */
    uint64_t min_ti = c->lensz + 1 + 4 + c->lensz + 4 + 8; /* name, n_dims, 1 dim, type, offset */
    uint64_t room = left(c);
    if (g->n_kv > room / min_kv)
        return ember_fail(c->err, EMBER_ERR_FORMAT,
                          "key/value count %llu is impossible: the %llu bytes left hold at "
                          "most %llu", (ull)g->n_kv, (ull)room, (ull)(room / min_kv));
    room -= g->n_kv * min_kv;
    if (g->n_tensors > room / min_ti)
        return ember_fail(c->err, EMBER_ERR_FORMAT,
                          "tensor count %llu is impossible: the %llu bytes left hold at "
                          "most %llu", (ull)g->n_tensors, (ull)room, (ull)(room / min_ti));
    return EMBER_OK;
}

static ember_status read_kvs(cursor *c, ember_gguf *g)
{
    for (uint64_t i = 0; i < g->n_kv; i++) {
        ember_status st = read_kv(c, &g->kv[i]);
        if (st) {
            char b[72];
            const char *k = g->kv[i].key;
            if (k)
                return ember_fail_ctx(c->err, st, "key %llu '%s'", (ull)i, show(k, strlen(k), b));
            return ember_fail_ctx(c->err, st, "key %llu", (ull)i);
        }
    }
    return EMBER_OK;
}

static ember_status read_tensor_infos(cursor *c, ember_gguf *g)
{
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        ember_status st = read_tensor_info(c, &g->tensors[i]);
        if (st) {
            char b[72];
            const char *n = g->tensors[i].name;
            if (n)
                return ember_fail_ctx(c->err, st, "tensor %llu '%s'", (ull)i,
                                      show(n, strlen(n), b));
            return ember_fail_ctx(c->err, st, "tensor %llu", (ull)i);
        }
    }
    return EMBER_OK;
}

/* Value of an integer key as u64 if it lies in [0, max]. Message without the path. */
static ember_status kv_uint(const ember_gguf_kv *kv, uint64_t max, uint64_t *out, ember_err *err)
{
    char b[72];
    const char *k = show(kv->key, strlen(kv->key), b);
    if (kv->type == EMBER_GGUF_STRING || kv->type == EMBER_GGUF_ARRAY ||
        kv->type == EMBER_GGUF_BOOL || kv->type == EMBER_GGUF_FLOAT32 ||
        kv->type == EMBER_GGUF_FLOAT64)
        return ember_fail(err, EMBER_ERR_FORMAT, "key %s has type %s, expected an integer",
                          k, ember_gguf_type_name(kv->type));
    if (is_signed(kv->type) && kv->v.i64 < 0)
        return ember_fail(err, EMBER_ERR_FORMAT, "key %s = %lld is negative", k,
                          (long long)kv->v.i64);
    if (kv->v.u64 > max)
        return ember_fail(err, EMBER_ERR_FORMAT, "key %s = %llu is larger than %llu", k,
                          (ull)kv->v.u64, (ull)max);
    *out = kv->v.u64;
    return EMBER_OK;
}

static ember_status read_alignment(cursor *c, ember_gguf *g)
{
    const ember_gguf_kv *kv = ember_gguf_find(g, "general.alignment");
    uint64_t a = GGUF_DEFAULT_ALIGNMENT;
    if (kv) {
        ember_status st = kv_uint(kv, UINT32_MAX, &a, c->err);
        if (st) return st;
        if (a == 0 || (a & (a - 1)))
            return ember_fail(c->err, EMBER_ERR_FORMAT,
                              "general.alignment %llu is not a power of two", (ull)a);
    }
    g->alignment = (uint32_t)a;
    return EMBER_OK;
}

/* ---- duplicates and overlaps: sort an index, compare neighbours ------------------ */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_offset(const void *a, const void *b)
{
    const ember_gguf_tensor *x = *(const ember_gguf_tensor *const *)a;
    const ember_gguf_tensor *y = *(const ember_gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Names are at a fixed stride inside kv[] or tensors[]; sorting pointers to them keeps
 * the check O(n log n) even for a file that claims many keys. */
static ember_status check_unique(const char *first, size_t stride, uint64_t n,
                                 const char *what, ember_err *err)
{
    if (n < 2) return EMBER_OK;
    const char **idx = ember_malloc(n * sizeof *idx);
    if (!idx) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint64_t i = 0; i < n; i++) idx[i] = *(const char *const *)(first + i * stride);
    qsort(idx, n, sizeof *idx, cmp_str);
    ember_status st = EMBER_OK;
    for (uint64_t i = 1; i < n && !st; i++)
        if (strcmp(idx[i - 1], idx[i]) == 0) {
            char b[72];
            st = ember_fail(err, EMBER_ERR_FORMAT, "duplicate %s '%s'", what,
                            show(idx[i], strlen(idx[i]), b));
        }
    ember_free(idx);
    return st;
}

static ember_status place_tensor(ember_gguf *g, ember_gguf_tensor *t, ember_err *err)
{
    char b[72];
    uint64_t avail = g->size > g->data_offset ? g->size - g->data_offset : 0;
    if (t->offset % g->alignment)
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "tensor '%s' offset %llu is not a multiple of the alignment %u",
                          show(t->name, strlen(t->name), b), (ull)t->offset, g->alignment);
    if (t->offset > avail || t->nbytes > avail - t->offset) {
        char at[64]; /* the file offset, unless it does not fit in 64 bits */
        if (t->offset <= UINT64_MAX - g->data_offset)
            snprintf(at, sizeof at, "%llu", (ull)(g->data_offset + t->offset));
        else
            snprintf(at, sizeof at, "%llu + %llu", (ull)g->data_offset, (ull)t->offset);
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "tensor '%s' data [offset %s, %llu bytes] extends past end of file "
                          "(%llu bytes)", show(t->name, strlen(t->name), b), at,
                          (ull)t->nbytes, (ull)g->size);
    }
    t->data = (const uint8_t *)g->map + g->data_offset + t->offset;
    /* Readers take the data as float / uint16 arrays (model.c's rope_freqs check, the CPU
     * backend, the quantizer), so it must sit at its element's alignment. A file whose
     * general.alignment is 1 or 2 could place it anywhere: found by fuzz/fuzz_gguf.c
     * (UBSan: misaligned float load in get_rope_freqs). Checked on the address, which
     * for a file is the file offset (the mapping starts on a page). */
    unsigned need = t->type == EMBER_DTYPE_F32 ? 4 : 2;
    if ((uintptr_t)t->data % need)
        return ember_fail(err, EMBER_ERR_FORMAT,
                          "tensor '%s' data at offset %llu is not aligned to %u bytes (%s)",
                          show(t->name, strlen(t->name), b), (ull)(g->data_offset + t->offset), need,
                          ember_dtype_name(t->type));
    return EMBER_OK;
}

static ember_status check_overlap(ember_gguf *g, ember_err *err)
{
    if (g->n_tensors < 2) return EMBER_OK;
    const ember_gguf_tensor **idx = ember_malloc(g->n_tensors * sizeof *idx);
    if (!idx) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint64_t i = 0; i < g->n_tensors; i++) idx[i] = &g->tensors[i];
    qsort(idx, g->n_tensors, sizeof *idx, cmp_offset);
    ember_status st = EMBER_OK;
    for (uint64_t i = 1; i < g->n_tensors && !st; i++) {
        const ember_gguf_tensor *a = idx[i - 1], *b = idx[i];
        if (b->offset < a->offset + a->nbytes) { /* no overflow: both lie inside the file */
            char ba[72], bb[72];
            st = ember_fail(err, EMBER_ERR_FORMAT,
                            "tensors '%s' [offset %llu, %llu bytes] and '%s' [offset %llu, "
                            "%llu bytes] overlap", show(a->name, strlen(a->name), ba),
                            (ull)a->offset, (ull)a->nbytes, show(b->name, strlen(b->name), bb),
                            (ull)b->offset, (ull)b->nbytes);
        }
    }
    ember_free(idx);
    return st;
}

static ember_status place_tensors(ember_gguf *g, ember_err *err)
{
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        ember_status st = place_tensor(g, &g->tensors[i], err);
        if (st) return st;
    }
    return check_overlap(g, err);
}

static ember_status parse(ember_gguf *g, ember_err *err)
{
    cursor c = { g->map, g->size, 0, 4, err };
    ember_status st = read_header(&c, g);
    if (!st) st = check_counts(&c, g);
    if (st) return st;
    /* Counts are bounded by the file size now; ember_calloc(0) is avoided for clean frees. */
    g->kv = ember_calloc(g->n_kv ? g->n_kv : 1, sizeof *g->kv);
    g->tensors = ember_calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    if ((st = read_kvs(&c, g))) return st;
    if ((st = check_unique((const char *)&g->kv[0].key, sizeof *g->kv, g->n_kv, "key", err)))
        return st;
    if ((st = read_alignment(&c, g))) return st;
    if ((st = read_tensor_infos(&c, g))) return st;
    if ((st = check_unique((const char *)&g->tensors[0].name, sizeof *g->tensors,
                           g->n_tensors, "tensor name", err)))
        return st;
    /* The data section starts at the next multiple of the alignment. A file with no
     * tensors may end before it: nothing is read there. */
    g->data_offset = (c.pos + g->alignment - 1) / g->alignment * g->alignment;
    return place_tensors(g, err);
}

/* ---- open / close --------------------------------------------------------------- */

static ember_status map_file(ember_gguf *g, ember_err *err)
{
    ember_status s = ember_file_map_open(g->path, &g->file, err);
    g->map = (void *)g->file.data, g->size = g->file.size;
    if (s == EMBER_ERR_FORMAT) return ember_fail(err, s, "not a GGUF file: empty"); /* the only format refusal */
    return s;
}

void ember_gguf_release(const ember_gguf *g, const ember_gguf_tensor *t)
{
    if (g && t && !g->borrowed && g->map) ember_file_map_drop(t->data, t->nbytes);
}

/* The handle both openers start from; path is kept for messages. */
static ember_gguf *new_gguf(const char *path, ember_err *err)
{
    ember_gguf *g = ember_calloc(1, sizeof *g);
    if (g) g->path = ember_strdup(path);
    if (!g || !g->path) {
        ember_free(g);
        ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        return NULL;
    }
    return g;
}

/* Parses g's bytes; on failure frees g and names path in the message. */
static ember_status finish_open(ember_gguf *g, ember_status st, ember_gguf **out, ember_err *err)
{
    if (!st) st = parse(g, err);
    if (st) {
        ember_fail_ctx(err, st, "%s", g->path);
        ember_gguf_close(g);
        return st;
    }
    *out = g;
    return EMBER_OK;
}

ember_status ember_gguf_open(const char *path, ember_gguf **out, ember_err *err)
{
    ember_err local;
    if (!err) err = &local;
    err->msg[0] = 0;
    *out = NULL;
    if (!path) return ember_fail(err, EMBER_ERR_INVALID_ARG, "ember_gguf_open: no path");
    ember_gguf *g = new_gguf(path, err);
    if (!g) return EMBER_ERR_OUT_OF_MEMORY;
    return finish_open(g, map_file(g, err), out, err);
}

ember_status ember_gguf_open_memory(const void *data, size_t size, const char *name, ember_gguf **out,
                                    ember_err *err)
{
    ember_err local;
    if (!err) err = &local;
    err->msg[0] = 0;
    *out = NULL;
    if (!name) name = "<memory>";
    if (!data && size) return ember_fail(err, EMBER_ERR_INVALID_ARG, "ember_gguf_open_memory: no data");
    ember_gguf *g = new_gguf(name, err);
    if (!g) return EMBER_ERR_OUT_OF_MEMORY;
    g->map = (void *)data;
    g->size = size;
    g->borrowed = true;
    /* As map_file says for an empty file; parse would say "truncated" instead. */
    ember_status st = size ? EMBER_OK : ember_fail(err, EMBER_ERR_FORMAT, "not a GGUF file: empty");
    return finish_open(g, st, out, err);
}

void ember_gguf_close(ember_gguf *g)
{
    if (!g) return;
    for (uint64_t i = 0; g->kv && i < g->n_kv; i++) {
        ember_free((char *)g->kv[i].key);
        ember_free(g->kv[i].arr_str);
    }
    for (uint64_t i = 0; g->tensors && i < g->n_tensors; i++) ember_free((char *)g->tensors[i].name);
    ember_free(g->kv);
    ember_free(g->tensors);
    if (!g->borrowed) ember_file_map_close(&g->file);
    ember_free(g->path);
    ember_free(g);
}

/* ---- lookups and typed getters -------------------------------------------------- */

const ember_gguf_kv *ember_gguf_find(const ember_gguf *g, const char *key)
{
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (strcmp(g->kv[i].key, key) == 0) return &g->kv[i];
    return NULL;
}

const ember_gguf_tensor *ember_gguf_find_tensor(const ember_gguf *g, const char *name)
{
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, name) == 0) return &g->tensors[i];
    return NULL;
}

bool ember_gguf_str_eq(ember_gguf_str s, const char *z)
{
    size_t n = strlen(z);
    return s.len == n && memcmp(s.ptr, z, n) == 0;
}

static ember_status missing(const ember_gguf *g, const char *key, ember_err *err)
{
    return ember_fail(err, EMBER_ERR_FORMAT, "%s: missing key %s", g->path, key);
}

ember_status ember_gguf_opt_u32(const ember_gguf *g, const char *key, uint32_t *out,
                                ember_err *err)
{
    const ember_gguf_kv *kv = ember_gguf_find(g, key);
    uint64_t v = 0;
    if (!kv) return EMBER_OK;
    ember_status st = kv_uint(kv, UINT32_MAX, &v, err);
    if (st) return ember_fail_ctx(err, st, "%s", g->path);
    *out = (uint32_t)v;
    return EMBER_OK;
}

ember_status ember_gguf_get_u32(const ember_gguf *g, const char *key, uint32_t *out,
                                ember_err *err)
{
    if (!ember_gguf_find(g, key)) return missing(g, key, err);
    return ember_gguf_opt_u32(g, key, out, err);
}

/* Floats, and integers too (a hand-made file may write rope.freq_base as 10000). */
ember_status ember_gguf_opt_f32(const ember_gguf *g, const char *key, float *out,
                                ember_err *err)
{
    const ember_gguf_kv *kv = ember_gguf_find(g, key);
    double v;
    if (!kv) return EMBER_OK;
    if (kv->type == EMBER_GGUF_FLOAT32 || kv->type == EMBER_GGUF_FLOAT64) v = kv->v.f64;
    else if (is_signed(kv->type)) v = (double)kv->v.i64;
    else if (kv->type != EMBER_GGUF_STRING && kv->type != EMBER_GGUF_ARRAY &&
             kv->type != EMBER_GGUF_BOOL) v = (double)kv->v.u64;
    else
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: key %s has type %s, expected a number",
                          g->path, key, ember_gguf_type_name(kv->type));
    if (isfinite(v) && fabs(v) > FLT_MAX)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: key %s = %g does not fit a float",
                          g->path, key, v);
    *out = (float)v;
    return EMBER_OK;
}

ember_status ember_gguf_get_f32(const ember_gguf *g, const char *key, float *out,
                                ember_err *err)
{
    if (!ember_gguf_find(g, key)) return missing(g, key, err);
    return ember_gguf_opt_f32(g, key, out, err);
}

ember_status ember_gguf_get_str(const ember_gguf *g, const char *key, ember_gguf_str *out,
                                ember_err *err)
{
    const ember_gguf_kv *kv = ember_gguf_find(g, key);
    if (!kv) return missing(g, key, err);
    if (kv->type != EMBER_GGUF_STRING)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: key %s has type %s, expected STRING",
                          g->path, key, ember_gguf_type_name(kv->type));
    *out = kv->v.str;
    return EMBER_OK;
}

ember_status ember_gguf_opt_bool(const ember_gguf *g, const char *key, bool *out,
                                 ember_err *err)
{
    const ember_gguf_kv *kv = ember_gguf_find(g, key);
    if (!kv) return EMBER_OK;
    if (kv->type != EMBER_GGUF_BOOL)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: key %s has type %s, expected BOOL",
                          g->path, key, ember_gguf_type_name(kv->type));
    *out = kv->v.u64 != 0;
    return EMBER_OK;
}

ember_status ember_gguf_get_arr(const ember_gguf *g, const char *key, ember_gguf_type elem,
                                const ember_gguf_kv **out, ember_err *err)
{
    const ember_gguf_kv *kv = ember_gguf_find(g, key);
    if (!kv) return missing(g, key, err);
    if (kv->type != EMBER_GGUF_ARRAY || kv->arr_type != elem)
        return ember_fail(err, EMBER_ERR_FORMAT, "%s: key %s has type %s%s%s, expected ARRAY of %s",
                          g->path, key, ember_gguf_type_name(kv->type),
                          kv->type == EMBER_GGUF_ARRAY ? " of " : "",
                          kv->type == EMBER_GGUF_ARRAY ? ember_gguf_type_name(kv->arr_type) : "",
                          ember_gguf_type_name(elem));
    *out = kv;
    return EMBER_OK;
}
