/* dtype.h — the tensor element types of GGUF files: ggml's ids and block layouts, and
 * what reads and writes each in Ember. The table in dtype.c is the one place a type's
 * facts live; everything else asks it (docs/quantization.md). */
#ifndef EMBER_DTYPE_H
#define EMBER_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Tensor element types, numbered as ggml's (ggml.h, enum ggml_type). */
typedef enum ember_dtype {
    EMBER_DTYPE_F32 = 0,
    EMBER_DTYPE_F16 = 1,
    EMBER_DTYPE_Q4_0 = 2,
    EMBER_DTYPE_Q4_1 = 3,
    EMBER_DTYPE_Q5_0 = 6,
    EMBER_DTYPE_Q5_1 = 7,
    EMBER_DTYPE_Q8_0 = 8,
    EMBER_DTYPE_Q2_K = 10,
    EMBER_DTYPE_Q3_K = 11,
    EMBER_DTYPE_Q4_K = 12,
    EMBER_DTYPE_Q5_K = 13,
    EMBER_DTYPE_Q6_K = 14,
    EMBER_DTYPE_IQ4_NL = 20,
    EMBER_DTYPE_IQ4_XS = 23,
    EMBER_DTYPE_BF16 = 30,
    EMBER_DTYPE_MXFP4 = 39,
    EMBER_DTYPE_NONE = -1, /* no type (a table's "none") */
} ember_dtype;

/* The largest number of values in one block of any type (the K-quants' super-block). */
#define EMBER_DTYPE_MAX_BLOCK 256

typedef struct ember_dtype_info {
    ember_dtype type;
    const char *name;  /* ggml's name: "Q4_K" */
    uint32_t block;    /* values per block (1 for F32, F16, BF16) */
    uint32_t bytes;    /* bytes per block */
    bool gpu;          /* the Vulkan kernels read it (else only the CPU backend) */
    /* What a row that is not whole blocks is written as instead (llama.cpp's
     * tensor_type_fallback): a 32-value type for a K or IQ4_XS type; NONE for a 32-value
     * type, whose rows then go F16 as llama.cpp's do. */
    ember_dtype fallback;
    uint32_t ftype;    /* llama.cpp's general.file_type of a model mostly of this type */
    /* Decodes n_blocks whole blocks into n_blocks * block floats, as ggml's
     * dequantize_row_* does, bit for bit. */
    void (*to_float)(const void *src, float *dst, size_t n_blocks);
    /* Encodes n_blocks * block floats byte for byte as llama.cpp writes them without an
     * importance matrix (ggml_quantize_chunk: the reference quantizers quantize_row_*_ref,
     * and quantize_iq4_nl/xs); NULL when Ember does not write the type. */
    void (*from_float)(const float *src, void *dst, size_t n_blocks);
} ember_dtype_info;

/* The facts of the type with ggml id `id`; NULL for a type Ember does not know. */
const ember_dtype_info *ember_dtype_find(uint64_t id);
/* ggml's name of any of its type ids (also those Ember does not read: "IQ2_XXS"), for
 * messages; "unknown" past ggml's list. */
const char *ember_dtype_ggml_name(uint64_t id);

/* Bytes of n values of type t (n a multiple of its block). */
uint64_t ember_dtype_size(ember_dtype t, uint64_t n);
/* "Q4_K"; "unknown" for a value that is no ember_dtype. */
const char *ember_dtype_name(ember_dtype t);
/* Values per block of t (1 for the float types). */
uint32_t ember_dtype_block(ember_dtype t);
/* The type Ember writes, by its lower-case name as llama-quantize takes it ("q4_k",
 * "f16"); NULL when no type of that name has an encoder. */
const ember_dtype_info *ember_dtype_writable(const char *name);
/* Those names, comma-separated, in buf (cap bytes); returns buf. */
const char *ember_dtype_writable_names(char *buf, size_t cap);
/* What a matrix with rows of cols values becomes when want is asked: want, its fallback,
 * or F16, as llama.cpp's quantizer decides. */
ember_dtype ember_dtype_for_rows(ember_dtype want, uint64_t cols);

#endif
