/* floats.h — the float element types: IEEE half, bfloat16 and f32 values, their
 * conversions (bit-exact with ggml's), and their codecs for dtype.h's table (a block is
 * one value). Also the little-endian field access every block codec uses. */
#ifndef EMBER_FLOATS_H
#define EMBER_FLOATS_H

#include <stddef.h>
#include <stdint.h>

float ember_f16_to_f32(uint16_t h);
uint16_t ember_f32_to_f16(float f); /* round to nearest even; overflow -> inf */
float ember_bf16_to_f32(uint16_t h);
uint16_t ember_f32_to_bf16(float f); /* ggml's: round to nearest even, NaN kept quiet */

/* The float types as dtype.h's codecs (n values). */
void ember_f32_to_float(const void *src, float *dst, size_t n);
void ember_f32_from_float(const float *src, void *dst, size_t n);
void ember_f16_to_float(const void *src, float *dst, size_t n);
void ember_f16_from_float(const float *src, void *dst, size_t n);
void ember_bf16_to_float(const void *src, float *dst, size_t n);
void ember_bf16_from_float(const float *src, void *dst, size_t n);

/* Little-endian 16-bit fields of the blocks (files are little-endian; blocks may sit at
 * any even address, so the codecs read bytes). */
static inline uint16_t ember_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline void ember_put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v & 0xff);
    p[1] = (uint8_t)(v >> 8);
}

#endif
