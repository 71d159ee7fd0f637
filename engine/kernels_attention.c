/* kernels_attention.c — ember_k_rope_store and ember_k_attention: biases and RoPE plus the
 * append of K/V into the paged cache, then paged grouped-query attention over it. The
 * shapes they accept are checked once by ember_kernels_check_attn. */
#include <math.h>

#include "kernels_internal.h"

enum { ROPE_BIAS = 1, ROPE_FREQS = 2, ROPE_NEOX = 4 }; /* rope_store.comp's FLAG_* */

typedef struct rope_push {
    uint32_t n_heads, n_kv_heads, head_dim, rope_dim;
    uint32_t block_size, max_blocks, n_tok, wgx;
    float log2_base, pos_scale;
    uint32_t flags, group;
} rope_push;

typedef struct attention_push {
    uint32_t n_heads, n_kv_heads, head_dim, block_size;
    uint32_t max_blocks, n_tok, wgx;
    float scale;
    uint32_t group, dim_lanes;
} attention_push;

uint32_t ember_kv_q8_group(uint32_t head_dim)
{
    uint32_t low = head_dim & (~head_dim + 1u); /* lowest set bit */
    return low < 32 ? low : 32;
}

uint64_t ember_kv_row_bytes(uint32_t head_dim, ember_kv_type type)
{
    if (type != EMBER_KV_Q8_0) return (uint64_t)head_dim * sizeof(float);
    uint32_t groups = head_dim / ember_kv_q8_group(head_dim);
    return head_dim + 4ull * ((groups + 1) / 2); /* quants, then f16 scales two per word */
}

void ember_k_rope_store(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                        const ember_rope_bufs *rb, ember_vk_span qkv, ember_vk_span pos,
                        ember_vk_span seq, ember_vk_span block_table, ember_vk_span kcache,
                        ember_vk_span vcache, uint32_t n_tok)
{
    if (n_tok == 0) return;
    uint32_t gx, gy;
    ember_k_grid(n_tok, k->caps.max_wg_count[0], &gx, &gy);
    bool bias = rb && rb->bias.size, freqs = rb && rb->freqs.size;
    uint32_t flags = (bias ? ROPE_BIAS : 0) | (freqs ? ROPE_FREQS : 0) |
                     (s->rope_style == EMBER_ROPE_NEOX ? ROPE_NEOX : 0);
    /* log2 in double on the host: the shader computes base^(-2i/d) as one exp2. A scale
     * of exactly 1 keeps the angles bit-identical to an unscaled pass. */
    rope_push pc = {s->n_heads, s->n_kv_heads, s->head_dim, s->rope_dim, s->block_size,
                    s->max_blocks_per_seq, n_tok, gx, (float)log2((double)s->rope_base),
                    s->pos_scale > 0 ? s->pos_scale : 1.0f, flags, ember_kv_q8_group(s->head_dim)};
    /* An absent input's binding is never read; pos stands in for it (a binding must be
     * valid whether the shader reads it or not). */
    ember_vk_span b[8] = {qkv, pos, seq, block_table, kcache, vcache, bias ? rb->bias : pos,
                          freqs ? rb->freqs : pos};
    ember_vk_cmd_dispatch(c, s->kv_type == EMBER_KV_Q8_0 ? k->rope_q8 : k->rope, b, &pc, gx, gy, 1);
}

/* Lanes that split one position's head_dim: the fewest (a power of two) that keep a
 * lane within attn_cpl vec4 chunks; the rest of the subgroup splits the keys. A function
 * of head_dim alone, so a token's bits never depend on the batch. */
static uint32_t attn_dim_lanes(const ember_kernels *k, uint32_t head_dim)
{
    uint32_t dl = 1;
    while (dl * k->attn_cpl * 4 < head_dim && dl < k->attn_lanes) dl *= 2;
    return dl;
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
                         s->max_blocks_per_seq, n_tok, gx, (float)(1.0 / sqrt((double)s->head_dim)),
                         ember_kv_q8_group(s->head_dim), attn_dim_lanes(k, s->head_dim)};
    ember_vk_span b[7] = {qkv, pos, seq, block_table, kcache, vcache, out};
    ember_vk_cmd_dispatch(c, s->kv_type == EMBER_KV_Q8_0 ? k->attention_q8 : k->attention, b, &pc, gx, gy, 1);
}
