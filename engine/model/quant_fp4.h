/* quant_fp4.h — MXFP4, the OCP microscaling 4-bit float type (quant_fp4.c): 32 values a
 * block, one E8M0 scale byte (a power of two) and 16 bytes of E2M1 codes. gpt-oss ships
 * its experts in it. The codecs of dtype.h's table; n counts blocks. */
#ifndef EMBER_QUANT_FP4_H
#define EMBER_QUANT_FP4_H

#include <stddef.h>
#include <stdint.h>

void ember_mxfp4_to_float(const void *src, float *dst, size_t n);
void ember_mxfp4_from_float(const float *src, void *dst, size_t n);

/* The block's scale: half of 2^(e - 127) (ggml's GGML_E8M0_TO_FP32_HALF: the codes' levels
 * are kept doubled, so that they are integers). */
float ember_e8m0_half(uint8_t e);

#endif
