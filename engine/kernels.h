/* kernels.h — the host side of the compute shaders: GPU weight layout and one function
 * per shader job. Each ember_k_* call records its dispatch(es) into c; none inserts a
 * barrier: the caller (engine/forward.c) orders dependent calls with
 * ember_vk_cmd_barrier.
 *
 * Activations are f32, row-major, one row per token, rows tightly packed. */
#ifndef EMBER_KERNELS_H
#define EMBER_KERNELS_H

#include "../platform/vk.h"
#include "gguf.h"

#define EMBER_MAX_WEIGHT_PARTS 32

/* A weight matrix (rows x cols, GGUF row-major) in GPU memory, cut by rows into parts
 * that each fit one storage-buffer binding. */
typedef struct ember_gpu_weight_part {
    ember_vk_span data;     /* F32: floats; F16: halves; Q8_0: int8 quants, cols bytes/row */
    ember_vk_span scales;   /* Q8_0 only: f16 scales, cols/32 per row */
    uint32_t row0, n_rows;
} ember_gpu_weight_part;

typedef struct ember_gpu_weight {
    ember_dtype type;
    uint32_t rows, cols;
    uint32_t n_parts;
    ember_gpu_weight_part parts[EMBER_MAX_WEIGHT_PARTS];
} ember_gpu_weight;

/* Uploads n_src host matrices in GGUF layout (same type and cols), stacked by rows in the
 * given order, as one GPU weight. Parts are at most max_part_bytes each (0 = the device's
 * max_storage_range). Q8_0 is repacked into separate quant and scale arrays, never
 * expanded to floats. */
ember_status ember_gpu_weight_upload(ember_vk *vk, ember_vk_arena *arena, ember_dtype type,
                                     uint32_t cols, const void *const *src,
                                     const uint32_t *src_rows, uint32_t n_src,
                                     uint64_t max_part_bytes, ember_gpu_weight *out,
                                     ember_err *err);

typedef struct ember_kernels ember_kernels;

/* Creates every pipeline once, choosing variants from the device caps. */
ember_status ember_kernels_create(ember_vk *vk, ember_kernels **out, ember_err *err);
void ember_kernels_destroy(ember_kernels *k);

/* Choices that tests and benchmarks override; zero means the default. */
typedef struct ember_kernels_opts {
    bool no_subgroup;         /* use the Vulkan 1.2 core variants even when the device
                                 has subgroup arithmetic */
    uint32_t matvec_max_tok;  /* n_tok up to this uses the mat-vec shader (1..4; default 4) */
} ember_kernels_opts;

ember_status ember_kernels_create_opts(ember_vk *vk, const ember_kernels_opts *opts,
                                       ember_kernels **out, ember_err *err);

typedef enum ember_out_mode {
    EMBER_OUT_STORE = 0,  /* y[t][r] = W[r].x[t] */
    EMBER_OUT_ADD = 1,    /* y[t][r] += W[r].x[t]          (residual folded in) */
    EMBER_OUT_SWIGLU = 2, /* W has 2h rows: gate rows 0..h-1, up rows h..2h-1;
                             y[t][i] = silu(gate_i) * up_i, y has h columns */
} ember_out_mode;

/* y = W x for n_tok rows of x (cols wide). Records the mat-vec shader when n_tok is small
 * and the tiled mat-mat shader otherwise, once per weight part. */
void ember_k_linear(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w,
                    ember_vk_span x, ember_vk_span y, uint32_t n_tok, ember_out_mode mode);

/* y[i] = x[r] / sqrt(mean(x[r]^2) + eps) * w, r = rows ? rows[i] : i (uint32), i < n. */
void ember_k_rmsnorm(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span x, ember_vk_span w,
                     ember_vk_span y, const ember_vk_span *rows, uint32_t n, uint32_t dim,
                     float eps);

/* x[t] = row tokens[t] (uint32) of the embedding table, as f32. */
void ember_k_embed(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *emb,
                   ember_vk_span tokens, ember_vk_span x, uint32_t n_tok);

/* Shape of attention and of the paged KV cache. The cache of one layer is
 * [n_blocks][n_kv_heads][block_size][head_dim] f32 for K and the same for V.
 * block_table is uint32 [n_seq_slots][max_blocks_per_seq]. */
typedef struct ember_attn_shape {
    uint32_t n_heads, n_kv_heads, head_dim, rope_dim;
    float rope_base;
    uint32_t block_size, max_blocks_per_seq;
} ember_attn_shape;

/* Whether the attention kernels handle shape s: n_heads a multiple of n_kv_heads,
 * head_dim a multiple of 4 and at most 256, rope_dim even
 * and <= head_dim. Call once at model load: ember_k_rope_store / ember_k_attention cannot
 * report errors. */
ember_status ember_kernels_check_attn(const ember_kernels *k, const ember_attn_shape *s,
                                      ember_err *err);

/* qkv rows are [q (n_heads*head_dim) | k (n_kv_heads*head_dim) | v (same)].
 * Rotates q (in place) and k by pos[t], then stores k and v of token t into
 * block block_table[seq[t]][pos[t] / block_size], slot pos[t] % block_size. */
void ember_k_rope_store(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                        ember_vk_span qkv, ember_vk_span pos, ember_vk_span seq,
                        ember_vk_span block_table, ember_vk_span kcache, ember_vk_span vcache,
                        uint32_t n_tok);

/* out[t][h] = softmax(q_h . K / sqrt(head_dim)) V over positions 0..pos[t] of sequence
 * seq[t], read through its block table; query head h uses KV head h / (n_heads/n_kv_heads).
 * Online softmax; out is n_tok x (n_heads*head_dim). */
void ember_k_attention(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                       ember_vk_span qkv, ember_vk_span pos, ember_vk_span seq,
                       ember_vk_span block_table, ember_vk_span kcache, ember_vk_span vcache,
                       ember_vk_span out, uint32_t n_tok);

/* out[i] (uint32) = index of the largest of logits[i][0..n_cols) (lowest index on ties). */
void ember_k_argmax(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span logits,
                    ember_vk_span out, uint32_t n_rows, uint32_t n_cols);

#endif
