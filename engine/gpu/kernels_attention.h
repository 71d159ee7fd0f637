/* kernels_attention.h — RoPE with the append of K/V into the paged cache, and paged
 * grouped-query attention over it (kernels_attention.c). Library-internal. */
#ifndef EMBER_KERNELS_ATTENTION_H
#define EMBER_KERNELS_ATTENTION_H

#include "engine/model/model.h"
#include "kernels.h"

/* Shape of attention and of the paged KV cache. The cache of one layer holds, for K and
 * for V, one row per (block, kv head, slot) in that order ([n_blocks][n_kv_heads]
 * [block_size] rows); a row is one token's head_dim values of one KV head:
 *   EMBER_KV_F32:  head_dim floats;
 *   EMBER_KV_Q8_0: head_dim int8 (four per uint32, lowest byte first), then one f16
 *                  scale per ember_kv_q8_group(head_dim) values, two per uint32 (low
 *                  half first; the last word half empty when the group count is odd).
 * block_table is uint32 [n_seq_slots][max_blocks_per_seq]. Fields after
 * max_blocks_per_seq may be left zero: normal RoPE, unscaled, F32 cache, a global layer
 * without QK-norm, soft-cap or temperature. */
typedef struct ember_attn_shape {
    uint32_t n_heads, n_kv_heads, head_dim, rope_dim;
    float rope_base;
    uint32_t block_size, max_blocks_per_seq;
    ember_rope_style rope_style;  /* which elements RoPE pairs (model.h) */
    float pos_scale;              /* positions are multiplied by it before RoPE; 0 = 1 */
    ember_kv_type kv_type;        /* how the cache stores K and V */
    /* A layer's own (forward.c sets them from ember_layer_attn before recording it). */
    float attn_scale;             /* q.k multiplier; 0 = 1/sqrt(head_dim) */
    float softcap;                /* attention logits s -> c tanh(s / c); 0: none */
    uint32_t window;              /* a local layer attends to the last window positions; 0: all */
    bool no_rope;                 /* a NoPE layer: no rotation */
    float ext_factor, corr_lo, corr_hi; /* YaRN's blend and ramp (ext_factor 0: none) */
    float mscale;                 /* cos and sin times it; 0 = 1 */
    ember_qk_norm qk_norm;        /* rope_store's RMSNorm of q and k (rope bufs' qk_norm) */
    float eps;                    /* ... its epsilon */
    float temp_scale, temp_floor; /* q times log(floor(pos / floor) + 1) * scale + 1; 0: none */
    ember_vk_span sinks;          /* f32 [n_heads]: a logit per query head in every softmax's
                                     denominator (gpt-oss's attention sinks); size 0: none */
} ember_attn_shape;

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
 * RoPE style and cache type, and (on lavapipe) a context its loops can walk; when it
 * does, makes the pipelines rope_store and attention will use for it (the first time its
 * cache type and head size come; thread-safe). Call once per engine, before recording:
 * ember_k_rope_store / ember_k_attention cannot report errors. */
ember_status ember_kernels_check_attn(ember_kernels *k, const ember_attn_shape *s,
                                      ember_err *err);

/* A model's RoPE inputs beyond the shape; a span of size 0 is absent. */
typedef struct ember_rope_bufs {
    ember_vk_span bias;   /* f32, one qkv row [bq | bk | bv]: added to every token's row
                             before RoPE (absent: no biases) */
    ember_vk_span freqs;  /* f32 [rope_dim / 2]: theta_i is divided by freqs[i]
                             (absent: all 1) */
    ember_vk_span qk_norm; /* f32 [q's weights | k's]: head_dim each (QK_NORM_HEAD) or the
                              projections' lengths (QK_NORM_FULL) */
} ember_rope_bufs;

/* qkv rows are [q (n_heads*head_dim) | k (n_kv_heads*head_dim) | v (same)].
 * Adds the biases (rb may be NULL), normalises q and k (s->qk_norm), rotates them by
 * pos[t] (docs/models.md; not on a NoPE layer), scales q by the temperature, writes
 * q, k and v back in place, and stores k and v of token t into block
 * block_table[seq[t]][pos[t] / block_size], slot pos[t] % block_size, in s->kv_type. */
void ember_k_rope_store(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                        const ember_rope_bufs *rb, ember_vk_span qkv, ember_vk_span pos,
                        ember_vk_span seq, ember_vk_span block_table, ember_vk_span kcache,
                        ember_vk_span vcache, uint32_t n_tok);

/* out[t][h] = softmax(q_h . K * s->attn_scale) V (logits soft-capped at s->softcap) over
 * positions 0..pos[t] (the last s->window of them on a local layer) of sequence
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

/* Split-K attention of decode rows row0 .. row0 + n_tok - 1 (one token per sequence, the
 * largest position max_pos): every pair's positions are cut into chunks of the kernels'
 * attention chunk (ember_kernels_opts.attn_chunk), each chunk walked by a workgroup of its
 * own that writes its softmax state to scratch, then a second dispatch merges the states
 * in chunk order (shaders/attn_merge.glsl) into out, with a barrier between the two (the
 * one ember_k_* function that records one). Attention without the split merges the same
 * chunks in the same order as it walks them, so the bits are the same whether a row is
 * split or not. Records nothing and returns false when the kernels do not split
 * (ember_kernels_opts.attn_split), when one chunk holds the context, when the scratch is
 * too small (pair_chunks: n_tok * n_heads * chunks) or when the rows already make enough
 * tiles to fill a GPU: then call ember_k_attention_rows. */
typedef struct ember_attn_scratch {
    ember_vk_span ml;       /* pair_chunks x 2 floats */
    ember_vk_span acc;      /* pair_chunks x head_dim floats */
    uint64_t pair_chunks;
} ember_attn_scratch;
bool ember_k_attention_split(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                             ember_vk_span qkv, ember_vk_span pos, ember_vk_span seq, ember_vk_span block_table,
                             ember_vk_span kcache, ember_vk_span vcache, ember_vk_span out, uint32_t row0,
                             uint32_t n_tok, uint32_t max_pos, const ember_attn_scratch *scratch);

#endif
