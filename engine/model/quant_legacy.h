/* quant_legacy.h — ggml's first block types (quant_legacy.c): 32 values per block, one
 * f16 scale (and, for the _1 types, an f16 minimum), 4, 5 or 8 bits a value. The codecs
 * of dtype.h's table; n counts blocks. */
#ifndef EMBER_QUANT_LEGACY_H
#define EMBER_QUANT_LEGACY_H

#include <stddef.h>

/* Q8_0's block, which the Vulkan kernels repack (gpu_weight.c) and the Q8_0 KV cache
 * shares (kv_layout.c): { uint16 f16 scale; int8 q[32]; }. */
#define EMBER_Q8_0_BLOCK 32
#define EMBER_Q8_0_BYTES 34

void ember_q4_0_to_float(const void *src, float *dst, size_t n);
void ember_q4_0_from_float(const float *src, void *dst, size_t n);
void ember_q4_1_to_float(const void *src, float *dst, size_t n);
void ember_q4_1_from_float(const float *src, void *dst, size_t n);
void ember_q5_0_to_float(const void *src, float *dst, size_t n);
void ember_q5_0_from_float(const float *src, void *dst, size_t n);
void ember_q5_1_to_float(const void *src, float *dst, size_t n);
void ember_q5_1_from_float(const float *src, void *dst, size_t n);
void ember_q8_0_to_float(const void *src, float *dst, size_t n);
void ember_q8_0_from_float(const float *src, void *dst, size_t n);

#endif
