/* kernels_attention.c — ember_k_rope_store and ember_k_attention: RoPE plus the append of
 * K/V into the paged cache, then paged grouped-query attention over it. The shapes they
 * accept are checked once by ember_kernels_check_attn. */
#include <math.h>

#include "kernels_internal.h"

typedef struct rope_push {
    uint32_t n_heads, n_kv_heads, head_dim, rope_dim;
    uint32_t block_size, max_blocks, n_tok, wgx;
    float log2_base;
} rope_push;

typedef struct attention_push {
    uint32_t n_heads, n_kv_heads, head_dim, block_size;
    uint32_t max_blocks, n_tok, wgx;
    float scale;
} attention_push;

void ember_k_rope_store(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                        ember_vk_span qkv, ember_vk_span pos, ember_vk_span seq,
                        ember_vk_span block_table, ember_vk_span kcache, ember_vk_span vcache,
                        uint32_t n_tok)
{
    if (n_tok == 0) return;
    uint32_t gx, gy;
    ember_k_grid(n_tok, k->caps.max_wg_count[0], &gx, &gy);
    /* log2 in double on the host: the shader computes base^(-2i/d) as one exp2. */
    rope_push pc = {s->n_heads, s->n_kv_heads, s->head_dim, s->rope_dim, s->block_size,
                    s->max_blocks_per_seq, n_tok, gx, (float)log2((double)s->rope_base)};
    ember_vk_span b[6] = {qkv, pos, seq, block_table, kcache, vcache};
    ember_vk_cmd_dispatch(c, k->rope, b, &pc, gx, gy, 1);
}

void ember_k_attention(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                       ember_vk_span qkv, ember_vk_span pos, ember_vk_span seq,
                       ember_vk_span block_table, ember_vk_span kcache, ember_vk_span vcache,
                       ember_vk_span out, uint32_t n_tok)
{
    if (n_tok == 0) return;
    uint32_t n_wg = ember_k_ceil((uint64_t)n_tok * s->n_heads, k->attn_ppw);
    uint32_t gx, gy;
    ember_k_grid(n_wg, k->caps.max_wg_count[0], &gx, &gy);
    attention_push pc = {s->n_heads, s->n_kv_heads, s->head_dim, s->block_size,
                         s->max_blocks_per_seq, n_tok, gx, (float)(1.0 / sqrt((double)s->head_dim))};
    ember_vk_span b[7] = {qkv, pos, seq, block_table, kcache, vcache, out};
    ember_vk_cmd_dispatch(c, k->attention, b, &pc, gx, gy, 1);
}
