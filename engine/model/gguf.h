/* gguf.h — reading and writing GGUF files (llama.cpp's model format).
 *
 * The reader maps the file read-only and validates everything before any other code
 * sees it: magic, version (1, 2, 3; version 1 has 32-bit counts), every count and
 * length against the bytes left in the file, metadata types, tensor types, shapes,
 * alignment, offsets inside the data section and non-overlap of tensors. A bad file
 * gives EMBER_ERR_FORMAT with a message naming the file and the problem; it never
 * crashes and never allocates more than the file's size justifies.
 *
 * Strings inside the file are not NUL-terminated; ember_gguf_str is (ptr, len) into
 * the mapping. Keys and tensor names are also offered NUL-terminated (copies). */
#ifndef EMBER_GGUF_H
#define EMBER_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "dtype.h"
#include "platform/os_file.h"

/* Metadata value types, numbered as in the GGUF spec. */
typedef enum ember_gguf_type {
    EMBER_GGUF_UINT8 = 0, EMBER_GGUF_INT8 = 1, EMBER_GGUF_UINT16 = 2, EMBER_GGUF_INT16 = 3,
    EMBER_GGUF_UINT32 = 4, EMBER_GGUF_INT32 = 5, EMBER_GGUF_FLOAT32 = 6, EMBER_GGUF_BOOL = 7,
    EMBER_GGUF_STRING = 8, EMBER_GGUF_ARRAY = 9, EMBER_GGUF_UINT64 = 10, EMBER_GGUF_INT64 = 11,
    EMBER_GGUF_FLOAT64 = 12,
} ember_gguf_type;

typedef struct ember_gguf_str {
    const char *ptr; /* into the mapping (reader) — not NUL-terminated */
    uint64_t len;
} ember_gguf_str;

typedef struct ember_gguf_kv {
    const char *key;          /* NUL-terminated copy */
    ember_gguf_type type;
    union {
        uint64_t u64;         /* UINT8..UINT64, BOOL (0/1) */
        int64_t i64;          /* INT8..INT64 */
        double f64;           /* FLOAT32, FLOAT64 */
        ember_gguf_str str;   /* STRING */
    } v;
    /* ARRAY: element type and count. Numeric elements are at arr_data (unaligned,
     * little-endian, packed); string elements are indexed in arr_str. */
    ember_gguf_type arr_type;
    uint64_t arr_n;
    const uint8_t *arr_data;
    ember_gguf_str *arr_str;  /* owned; only when arr_type == STRING */
} ember_gguf_kv;

typedef struct ember_gguf_tensor {
    const char *name;         /* NUL-terminated copy */
    uint32_t n_dims;          /* 1..4 */
    uint64_t ne[4];           /* ne[0] is the contiguous (row) length; unused dims = 1 */
    ember_dtype type;
    uint64_t offset;          /* relative to the data section */
    const void *data;         /* into the mapping */
    uint64_t nbytes;
} ember_gguf_tensor;

typedef struct ember_gguf {
    char *path;               /* owned copy, for messages */
    void *map;
    size_t size;
    ember_file_map file;      /* the mapping of the file (ember_gguf_open) */
    bool borrowed;            /* map is the caller's bytes (open_memory): not unmapped */
    uint32_t version;
    uint32_t alignment;       /* general.alignment or 32 */
    uint64_t n_kv, n_tensors;
    ember_gguf_kv *kv;
    ember_gguf_tensor *tensors;
    uint64_t data_offset;     /* start of the tensor data section in the file */
} ember_gguf;

/* Maps and validates path. On success *out is owned by the caller (ember_gguf_close). */
ember_status ember_gguf_open(const char *path, ember_gguf **out, ember_err *err);
/* The same over bytes already in memory (a fuzzer's input, an embedded file). The bytes
 * are borrowed: they must stay unchanged until ember_gguf_close, since strings and tensor
 * data point into them. name stands for the file in messages (NULL: "<memory>"). Give
 * them at an address aligned as malloc's: tensor data must be aligned to its element
 * (4 bytes for F32, 2 for F16 and Q8_0) in memory, not only in the file. */
ember_status ember_gguf_open_memory(const void *data, size_t size, const char *name, ember_gguf **out,
                                    ember_err *err);
void ember_gguf_close(ember_gguf *g);
/* Tells the system that t's bytes are not needed soon: their pages leave this process's
 * memory (a later read maps them in again from the file), so that loading a model onto a
 * device does not hold the file in memory beside the device's copy. Nothing for a file
 * opened from memory (those bytes are the caller's). */
void ember_gguf_release(const ember_gguf *g, const ember_gguf_tensor *t);

const ember_gguf_kv *ember_gguf_find(const ember_gguf *g, const char *key);
const ember_gguf_tensor *ember_gguf_find_tensor(const ember_gguf *g, const char *name);

/* Typed getters. A missing key gives EMBER_ERR_FORMAT "<file>: missing key <key>";
 * a value of the wrong type or out of range also fails with a message. Integer getters
 * accept any integer type whose value fits. */
ember_status ember_gguf_get_u32(const ember_gguf *g, const char *key, uint32_t *out, ember_err *err);
ember_status ember_gguf_get_f32(const ember_gguf *g, const char *key, float *out, ember_err *err);
ember_status ember_gguf_get_str(const ember_gguf *g, const char *key, ember_gguf_str *out, ember_err *err);
/* The same, but a missing key leaves *out untouched and returns EMBER_OK. */
ember_status ember_gguf_opt_u32(const ember_gguf *g, const char *key, uint32_t *out, ember_err *err);
ember_status ember_gguf_opt_f32(const ember_gguf *g, const char *key, float *out, ember_err *err);

/* A missing key leaves *out untouched; a value that is not BOOL fails. */
ember_status ember_gguf_opt_bool(const ember_gguf *g, const char *key, bool *out, ember_err *err);
/* The key, which must be an ARRAY whose elements have type elem (missing or another
 * type fails with a message). */
ember_status ember_gguf_get_arr(const ember_gguf *g, const char *key, ember_gguf_type elem,
                                const ember_gguf_kv **out, ember_err *err);
/* True when the file string s equals the C string z. */
bool ember_gguf_str_eq(ember_gguf_str s, const char *z);
/* "UINT32", "STRING", ... ("unknown" for a number outside the spec). */
const char *ember_gguf_type_name(ember_gguf_type t);


#endif
