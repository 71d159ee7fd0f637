/* quant_k.h — ggml's K-quants (quant_k.c): super-blocks of 256 values cut into
 * sub-blocks of 16 or 32, each with its own 4-, 6- or 8-bit scale (and minimum, for
 * Q2_K, Q4_K, Q5_K) relative to the super-block's f16 scales. The codecs of dtype.h's
 * table; n counts super-blocks. */
#ifndef EMBER_QUANT_K_H
#define EMBER_QUANT_K_H

#include <stddef.h>

void ember_q2_k_to_float(const void *src, float *dst, size_t n);
void ember_q2_k_from_float(const float *src, void *dst, size_t n);
void ember_q3_k_to_float(const void *src, float *dst, size_t n);
void ember_q3_k_from_float(const float *src, void *dst, size_t n);
void ember_q4_k_to_float(const void *src, float *dst, size_t n);
void ember_q4_k_from_float(const float *src, void *dst, size_t n);
void ember_q5_k_to_float(const void *src, float *dst, size_t n);
void ember_q5_k_from_float(const float *src, void *dst, size_t n);
void ember_q6_k_to_float(const void *src, float *dst, size_t n);
void ember_q6_k_from_float(const float *src, void *dst, size_t n);

#endif
