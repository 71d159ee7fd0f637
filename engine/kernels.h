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
#include "model.h"

#define EMBER_MAX_WEIGHT_PARTS 32

/* A weight matrix (rows x cols, GGUF row-major) in GPU memory, cut by rows into parts
 * that each fit one storage-buffer binding (and one texel view). Where the device can,
 * the spans carry uniform texel views (data: RGBA32F for F32, RGBA32UI for F16 and Q8_0;
 * scales: R16F), which the kernels prefer. */
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

/* Choices that tests and benchmarks override; zero means the default. None of them
 * changes a result of ember_k_linear by a single bit. */
typedef struct ember_kernels_opts {
    bool no_subgroup;         /* use the Vulkan 1.2 core variants even when the device
                                 has subgroup operations */
    bool no_texel;            /* read weights and x (attention: K and V) from storage
                                 buffers even when the device has uniform texel buffers */
    uint32_t linear_tm;       /* tokens per linear tile: 1, 2, 3, 4 or 8 (default: by n_tok) */
    uint32_t linear_tpw;      /* tokens per linear workgroup, rounded up to the tile
                                 (default: by n_tok) */
} ember_kernels_opts;

ember_status ember_kernels_create_opts(ember_vk *vk, const ember_kernels_opts *opts,
                                       ember_kernels **out, ember_err *err);

typedef enum ember_out_mode {
    EMBER_OUT_STORE = 0,  /* y[t][r] = W[r].x[t] */
    EMBER_OUT_ADD = 1,    /* y[t][r] += W[r].x[t]          (residual folded in) */
    EMBER_OUT_SWIGLU = 2, /* W has 2h rows: gate rows 0..h-1, up rows h..2h-1;
                             y[t][i] = silu(gate_i) * up_i, y has h columns */
} ember_out_mode;

/* y = W x for n_tok rows of x (cols wide), one dispatch per weight part. The tile shape
 * follows n_tok (mat-vec for decode batches, where a batch costs about one weight read;
 * mat-mat for prefill), but every output is bit-identical whatever n_tok, the token's
 * row in the batch and the shape: its reduction order is a fixed function of cols
 * (docs/kernels.md). The weights and x are read through texel views when the kernels use
 * them and both have views (ember_kernels_input_view), else from storage buffers. */
void ember_k_linear(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w,
                    ember_vk_span x, ember_vk_span y, uint32_t n_tok, ember_out_mode mode);

/* The same for tokens whose x rows start at row x_row0 of x and whose y rows start at row
 * y_row0 of y (row offsets are push constants: sub-spans could break the binding offset
 * alignment). Bit-identical to the rows ember_k_linear computes. */
void ember_k_linear_rows(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w,
                         ember_vk_span x, uint32_t x_row0, ember_vk_span y, uint32_t y_row0,
                         uint32_t n_tok, ember_out_mode mode);

/* Gives an activation buffer that will be a linear input (f32 rows) the texel view the
 * kernels read it through, when they read through texel views and the buffer fits one;
 * otherwise leaves it as is (the linear then reads it as a storage buffer). Create once:
 * the view lives as long as arena a. */
ember_status ember_kernels_input_view(const ember_kernels *k, ember_vk_arena *a, ember_vk_span *x,
                                      ember_err *err);

/* Whether the linear reads weights and x through texel views (when both have them). */
bool ember_kernels_texel(const ember_kernels *k);

/* y[i] = x[r] / sqrt(mean(x[r]^2) + eps) * w, r = rows ? rows[i] : i (uint32), i < n. */
void ember_k_rmsnorm(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span x, ember_vk_span w,
                     ember_vk_span y, const ember_vk_span *rows, uint32_t n, uint32_t dim,
                     float eps);

/* x[t] = row tokens[t] (uint32) of the embedding table, as f32. */
void ember_k_embed(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *emb,
                   ember_vk_span tokens, ember_vk_span x, uint32_t n_tok);

/* Shape of attention and of the paged KV cache. The cache of one layer holds, for K and
 * for V, one row per (block, kv head, slot) in that order ([n_blocks][n_kv_heads]
 * [block_size] rows); a row is one token's head_dim values of one KV head:
 *   EMBER_KV_F32:  head_dim floats;
 *   EMBER_KV_Q8_0: head_dim int8 (four per uint32, lowest byte first), then one f16
 *                  scale per ember_kv_q8_group(head_dim) values, two per uint32 (low
 *                  half first; the last word half empty when the group count is odd).
 * block_table is uint32 [n_seq_slots][max_blocks_per_seq]. Fields after
 * max_blocks_per_seq may be left zero: normal RoPE, unscaled, F32 cache. */
typedef struct ember_attn_shape {
    uint32_t n_heads, n_kv_heads, head_dim, rope_dim;
    float rope_base;
    uint32_t block_size, max_blocks_per_seq;
    ember_rope_style rope_style;  /* which elements RoPE pairs (model.h) */
    float pos_scale;              /* positions are multiplied by it before RoPE; 0 = 1 */
    ember_kv_type kv_type;        /* how the cache stores K and V */
} ember_attn_shape;

/* Values per scale of an EMBER_KV_Q8_0 row: 32, or the largest power of two dividing
 * head_dim when that is smaller (head_dim is a multiple of 4). */
uint32_t ember_kv_q8_group(uint32_t head_dim);
/* Bytes of one cache row (one token, one KV head, K or V) of the given type. */
uint64_t ember_kv_row_bytes(uint32_t head_dim, ember_kv_type type);

/* Gives one layer's K or V cache (of the given type) the texel view attention reads it
 * through (RGBA32F for F32, R32UI for Q8_0), when the kernels read through texel views,
 * the device has the format and the span fits one (whole texels, at most
 * maxTexelBufferElements, offset aligned); otherwise leaves it as is (attention then
 * reads it as a storage buffer). Create once: the view lives as long as arena a. */
ember_status ember_kernels_kv_view(const ember_kernels *k, ember_vk_arena *a, ember_kv_type type,
                                   ember_vk_span *cache, ember_err *err);

/* Positions one sequence may hold on this device: unlimited (UINT32_MAX) on GPUs; on
 * lavapipe, which ends a shader invocation after 65535 loop iterations, what attention
 * can walk in one invocation (56400 with blocks of 16). Model loading caps the context to
 * it. */
uint32_t ember_kernels_max_positions(const ember_kernels *k);

/* Whether the attention kernels handle shape s: n_heads a multiple of n_kv_heads,
 * head_dim a multiple of 4 and at most 256, rope_dim even and <= head_dim, a known
 * RoPE style and cache type, and (on lavapipe) a context its loops can walk. Call once
 * at model load: ember_k_rope_store / ember_k_attention cannot report errors. */
ember_status ember_kernels_check_attn(const ember_kernels *k, const ember_attn_shape *s,
                                      ember_err *err);

/* A model's RoPE inputs beyond the shape; a span of size 0 is absent. */
typedef struct ember_rope_bufs {
    ember_vk_span bias;   /* f32, one qkv row [bq | bk | bv]: added to every token's row
                             before RoPE (absent: no biases) */
    ember_vk_span freqs;  /* f32 [rope_dim / 2]: theta_i is divided by freqs[i]
                             (absent: all 1) */
} ember_rope_bufs;

/* qkv rows are [q (n_heads*head_dim) | k (n_kv_heads*head_dim) | v (same)].
 * Adds the biases (rb may be NULL), rotates q and k by pos[t] (docs/models.md), writes
 * q, k and v back in place, and stores k and v of token t into block
 * block_table[seq[t]][pos[t] / block_size], slot pos[t] % block_size, in s->kv_type. */
void ember_k_rope_store(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                        const ember_rope_bufs *rb, ember_vk_span qkv, ember_vk_span pos,
                        ember_vk_span seq, ember_vk_span block_table, ember_vk_span kcache,
                        ember_vk_span vcache, uint32_t n_tok);

/* out[t][h] = softmax(q_h . K / sqrt(head_dim)) V over positions 0..pos[t] of sequence
 * seq[t], read through its block table (K/V in s->kv_type, dequantized as read); query
 * head h uses KV head h / (n_heads/n_kv_heads). Online softmax; out is n_tok x
 * (n_heads*head_dim). K and V are read through their texel views when both have one
 * (ember_kernels_kv_view), else as storage buffers. The query heads of one KV head, and
 * consecutive tokens of one sequence, share their K/V reads; every output is
 * bit-identical whatever n_tok, the token's row in the batch and its neighbours
 * (docs/kernels.md). */
void ember_k_attention(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                       ember_vk_span qkv, ember_vk_span pos, ember_vk_span seq,
                       ember_vk_span block_table, ember_vk_span kcache, ember_vk_span vcache,
                       ember_vk_span out, uint32_t n_tok);

/* The same for a batch whose tokens of one sequence sit in runs of at most max_run
 * consecutive rows (1 or 0: every row is its own sequence's only token, as in a decode
 * step; ember_k_attention passes n_tok). A tile then groups at most max_run tokens, and
 * decode steps use a tile of as few pairs as a KV head's query heads need (every pair
 * slot of a tile costs its arithmetic on lavapipe, used or not); any max_run gives the
 * same bits. */
void ember_k_attention_runs(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                            ember_vk_span qkv, ember_vk_span pos, ember_vk_span seq,
                            ember_vk_span block_table, ember_vk_span kcache, ember_vk_span vcache,
                            ember_vk_span out, uint32_t n_tok, uint32_t max_run);
/* The same for batch rows row0 .. row0 + n_tok - 1 only (the other rows are neither read
 * nor written): a batch can give its decode rows and its prompt chunks each their own
 * tile. */
void ember_k_attention_rows(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                            ember_vk_span qkv, ember_vk_span pos, ember_vk_span seq,
                            ember_vk_span block_table, ember_vk_span kcache, ember_vk_span vcache,
                            ember_vk_span out, uint32_t row0, uint32_t n_tok, uint32_t max_run);

/* out[i] (uint32) = index of the largest of logits[i][0..n_cols) (lowest index on ties). */
void ember_k_argmax(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span logits,
                    ember_vk_span out, uint32_t n_rows, uint32_t n_cols);

#endif
