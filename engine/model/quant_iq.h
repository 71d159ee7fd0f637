/* quant_iq.h — ggml's 4-bit non-linear types (quant_iq.c): codes index a fixed table of
 * 16 levels spaced closer near zero. IQ4_NL has 32 values and one f16 scale per block;
 * IQ4_XS has 256 values, one f16 scale and a 6-bit scale per 32. The codecs of dtype.h's
 * table; n counts blocks. */
#ifndef EMBER_QUANT_IQ_H
#define EMBER_QUANT_IQ_H

#include <stddef.h>

void ember_iq4_nl_to_float(const void *src, float *dst, size_t n);
void ember_iq4_nl_from_float(const float *src, void *dst, size_t n);
void ember_iq4_xs_to_float(const void *src, float *dst, size_t n);
void ember_iq4_xs_from_float(const float *src, void *dst, size_t n);

#endif
