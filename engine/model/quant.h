/* quant.h — rows of any element type on the host (dtype.h's table decodes and encodes
 * their blocks) and the plain mat-vec product the reference forward pass and the tests
 * are built on. The codecs are in floats.c (F32, F16, BF16), quant_legacy.c (Q4_0 ...
 * Q8_0), quant_k.c (the K-quants) and quant_iq.c (IQ4). */
#ifndef EMBER_QUANT_H
#define EMBER_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

/* Converts n values of a row (n a multiple of the type's block) to floats. */
void ember_dequantize_row(ember_dtype type, const void *src, float *dst, size_t n);
/* Converts values first..first+n-1 of a tensor stored flat in the given type to floats.
 * Unlike ember_dequantize_row, first and n need not be multiples of the block: old GGUF
 * files quantized rows whose length is not a multiple of 32 in flat Q8_0 blocks that
 * straddle rows (stories260K's ffn_down), and this reads them. */
void ember_dequantize_span(ember_dtype type, const void *base, uint64_t first, size_t n, float *dst);
/* Encodes n values (a multiple of the block) as ggml's reference quantizer does. The type
 * must have an encoder (dtype.h's from_float). */
void ember_quantize_row(ember_dtype type, const float *src, void *dst, size_t n);
/* dst[i] = dot(row i of W, x) for a weight of `rows` rows of length n in any dtype. */
void ember_matvec_host(ember_dtype type, const void *w, const float *x, float *dst, size_t rows, size_t n);

#endif
