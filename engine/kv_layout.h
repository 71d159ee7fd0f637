/* kv_layout.h — how the KV cache stores one token's K (or V) of one KV head: the bytes
 * of a cache row, which the engine sizes its pool by and the kernels address
 * (kv_layout.c; the row format is described at ember_attn_shape in
 * gpu/kernels_attention.h). Library-internal. */
#ifndef EMBER_KV_LAYOUT_H
#define EMBER_KV_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "ember.h"

/* Whether t is a KV type the engine stores (F32, Q8_0, F16). */
bool ember_kv_type_known(ember_kv_type t);

/* Values per scale of an EMBER_KV_Q8_0 row: 32, or the largest power of two dividing
 * head_dim when that is smaller (head_dim is a multiple of 4). */
uint32_t ember_kv_q8_group(uint32_t head_dim);
/* Bytes of one cache row (one token, one KV head, K or V) of the given type. */
uint64_t ember_kv_row_bytes(uint32_t head_dim, ember_kv_type type);

/* K and V of one token, all layers and KV heads: the cache's bytes per token. */
uint64_t ember_kv_token_bytes(uint32_t n_layers, uint32_t n_kv_heads, uint32_t head_dim, ember_kv_type type);

/* One row's values as floats (out: head_dim), and floats as a row of the type (the
 * rule the kernels store by: Q8_0's scale is max|x| / 127 of its group, rounded to f16,
 * each value rounded to the nearest step; F16 rounds to nearest even). Rows are read
 * and written as bytes, little-endian, in the layout kernels_attention.h gives. */
void ember_kv_row_decode(ember_kv_type type, const uint8_t *row, uint32_t head_dim, float *out);
void ember_kv_row_encode(ember_kv_type type, const float *in, uint32_t head_dim, uint8_t *row);

#endif
