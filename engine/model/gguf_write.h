/* gguf_write.h — building a GGUF file: metadata and tensors, written in one go
 * (gguf_write.c). Used by the converter, the quantizer and the test-model maker.
 * Library-internal. */
#ifndef EMBER_GGUF_WRITE_H
#define EMBER_GGUF_WRITE_H

#include "gguf.h"

typedef struct ember_gguf_writer ember_gguf_writer;

/* Version 3 files, alignment 32. Data given to add_* is copied. An add_* failure
 * (out of memory) is sticky: ember_gguf_write then fails with its message. */
ember_status ember_gguf_writer_create(ember_gguf_writer **out, ember_err *err);
void ember_gguf_writer_free(ember_gguf_writer *w);
ember_status ember_gguf_add_u32(ember_gguf_writer *w, const char *key, uint32_t v);
ember_status ember_gguf_add_i32(ember_gguf_writer *w, const char *key, int32_t v);
ember_status ember_gguf_add_f32(ember_gguf_writer *w, const char *key, float v);
ember_status ember_gguf_add_bool(ember_gguf_writer *w, const char *key, bool v);
ember_status ember_gguf_add_str(ember_gguf_writer *w, const char *key, const char *v);
ember_status ember_gguf_add_arr_str(ember_gguf_writer *w, const char *key, const char *const *v, uint64_t n);
ember_status ember_gguf_add_arr_f32(ember_gguf_writer *w, const char *key, const float *v, uint64_t n);
ember_status ember_gguf_add_arr_i32(ember_gguf_writer *w, const char *key, const int32_t *v, uint64_t n);
/* ne[0] is the row length. nbytes must equal ember_dtype_size(type, product of ne). */
ember_status ember_gguf_add_tensor(ember_gguf_writer *w, const char *name, ember_dtype type,
                                   uint32_t n_dims, const uint64_t *ne, const void *data, uint64_t nbytes);
/* A tensor whose bytes are made as the file is written: fill(user, dst, nbytes) writes
 * them into a buffer of nbytes, one tensor at a time, so that a file larger than memory
 * can be written (make-test-model's 8B-shaped models). user must stay valid until
 * ember_gguf_write returns; a fill that fails fails the write with its status. */
typedef ember_status (*ember_gguf_fill_fn)(void *user, void *dst, uint64_t nbytes);
ember_status ember_gguf_add_tensor_lazy(ember_gguf_writer *w, const char *name, ember_dtype type, uint32_t n_dims,
                                        const uint64_t *ne, uint64_t nbytes, ember_gguf_fill_fn fill, void *user);
/* Copies every metadata key of g except those in skip (NULL-terminated list, may be NULL). */
ember_status ember_gguf_copy_kv(ember_gguf_writer *w, const ember_gguf *g, const char *const *skip);
ember_status ember_gguf_write(ember_gguf_writer *w, const char *path, ember_err *err);

#endif
