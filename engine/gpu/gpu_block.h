/* gpu_block.h — how a block type lies in GPU memory (gpu_block.c): the bytes of a block
 * there and how one is written from the file's. Library-internal. */
#ifndef EMBER_GPU_BLOCK_H
#define EMBER_GPU_BLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/model/dtype.h"

/* Bytes of one block of a block type on the GPU (Q8_0: as in the file; gpu_weight.c
 * splits its rows into quants and scales instead). */
uint32_t ember_gpu_block_bytes(ember_dtype t);

/* Whether blocks of t are stored as they lie in the file (then copied as they are). */
bool ember_gpu_block_as_file(ember_dtype t);

/* Writes the file's block src of type t as the GPU's: ember_gpu_block_bytes(t) bytes at
 * dst. */
void ember_gpu_block_put(ember_dtype t, const uint8_t *src, uint8_t *dst);

#endif
