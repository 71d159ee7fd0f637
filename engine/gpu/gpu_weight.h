/* gpu_weight.h — a weight matrix in GPU memory and its upload (gpu_weight.c).
 * Library-internal. */
#ifndef EMBER_GPU_WEIGHT_H
#define EMBER_GPU_WEIGHT_H

#include "engine/model/gguf.h"
#include "platform/vk.h"

#define EMBER_MAX_WEIGHT_PARTS 32

/* A weight matrix (rows x cols, GGUF row-major) in GPU memory, cut by rows into parts
 * that each fit one storage-buffer binding (and one texel view). Where the device can,
 * the spans carry uniform texel views (data: RGBA32F for F32, RGBA32UI for the others;
 * scales: R16F), which the kernels prefer. Tensors stacked into one weight may differ in
 * type (llama.cpp's mixes give attn_v more bits than attn_q and attn_k): each part has
 * one type, and the kernels run a part at a time. */
typedef struct ember_gpu_weight_part {
    ember_dtype type;
    ember_vk_span data;     /* F32: floats; F16: halves; Q8_0: int8 quants, cols bytes/row;
                               the other block types: the rows' blocks, laid out as
                               gpu_block.c says */
    ember_vk_span scales;   /* Q8_0 only: f16 scales, cols/32 per row */
    uint32_t row0, n_rows;
} ember_gpu_weight_part;

typedef struct ember_gpu_weight {
    ember_dtype type;       /* the first part's */
    bool mixed;             /* parts of more than one type */
    uint32_t rows, cols;
    uint32_t n_parts;
    ember_gpu_weight_part parts[EMBER_MAX_WEIGHT_PARTS];
    uint32_t expert_rows;   /* a mixture's experts stacked: rows of one expert, every part
                               whole experts (ember_gpu_weight_upload_experts); 0: not */
} ember_gpu_weight;

/* Uploads n_src host matrices in GGUF layout (the same cols; source i of type types[i]),
 * stacked by rows in the given order, as one GPU weight. Parts are at most max_part_bytes
 * each (0 = the device's max_storage_range) and never hold two types. Q8_0 is repacked
 * into separate quant and scale arrays; nothing is ever expanded to floats. */
ember_status ember_gpu_weight_upload(ember_vk *vk, ember_vk_arena *arena, const ember_dtype *types,
                                     uint32_t cols, const void *const *src,
                                     const uint32_t *src_rows, uint32_t n_src,
                                     uint64_t max_part_bytes, ember_gpu_weight *out,
                                     ember_err *err);

/* The same for a mixture's experts, each expert_rows rows of the stack (a 3-D expert tensor
 * is its experts' matrices one after another; gate and up of each expert interleaved are
 * 2 n_expert sources), all of one type: parts hold whole experts, which the grouped
 * product (ember_k_moe_linear) needs. */
ember_status ember_gpu_weight_upload_experts(ember_vk *vk, ember_vk_arena *arena, ember_dtype type, uint32_t cols,
                                             const void *const *src, const uint32_t *src_rows, uint32_t n_src,
                                             uint32_t expert_rows, uint64_t max_part_bytes, ember_gpu_weight *out,
                                             ember_err *err);

/* Device bytes of a matrix of rows x cols of one type as ember_gpu_weight_upload stores
 * it (bar each part's rounding to 16 bytes): what a model needs before it is loaded. */
uint64_t ember_gpu_weight_bytes(ember_dtype type, uint64_t rows, uint32_t cols);

#endif
