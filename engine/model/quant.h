/* quant.h — element formats on the host: IEEE half floats and Q8_0 blocks. */
#ifndef EMBER_QUANT_H
#define EMBER_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

float ember_f16_to_f32(uint16_t h);
uint16_t ember_f32_to_f16(float f); /* round to nearest even; overflow -> inf */

/* Converts n elements of a row (n a multiple of 32 for Q8_0) to floats. */
void ember_dequantize_row(ember_dtype type, const void *src, float *dst, size_t n);
/* Converts elements first..first+n-1 of a tensor stored flat in the given type to floats.
 * Unlike ember_dequantize_row, first and n need not be multiples of 32 for Q8_0: old
 * GGUF files quantized rows whose length is not a multiple of 32 in flat blocks that
 * straddle rows (stories260K's ffn_down), and this reads them. */
void ember_dequantize_span(ember_dtype type, const void *base, uint64_t first, size_t n,
                           float *dst);
/* Q8_0 as ggml does it: per block d = max|x|/127, q = round(x/d), scale stored as f16. */
void ember_quantize_row_q8_0(const float *src, void *dst, size_t n);
/* dst[i] = dot(row i of W, x) for a weight of `rows` rows of length n in any dtype. */
void ember_matvec_host(ember_dtype type, const void *w, const float *x, float *dst,
                       size_t rows, size_t n);

#endif
