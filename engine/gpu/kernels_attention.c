/* kernels_attention.c — ember_k_rope_store and ember_k_attention: biases and RoPE plus the
 * append of K/V into the paged cache, then paged grouped-query attention over it. The
 * shapes they accept are checked once by ember_kernels_check_attn. */
#include <math.h>

#include "kernels_attention.h"

#include "engine/kv_layout.h"
#include "kernels_internal.h"

/* rope_store.comp's FLAG_* */
enum {
    ROPE_BIAS = 1, ROPE_FREQS = 2, ROPE_NEOX = 4, ROPE_NOPE = 8, ROPE_QKNORM_HEAD = 16, ROPE_QKNORM_FULL = 32,
    ROPE_YARN = 64, ROPE_TEMP = 128
};

/* rope_store's flags for shape s and buffers rb. */
static uint32_t rope_flags(const ember_attn_shape *s, const ember_rope_bufs *rb)
{
    bool bias = rb && rb->bias.size, freqs = rb && rb->freqs.size, norm = rb && rb->qk_norm.size;
    return (bias ? ROPE_BIAS : 0) | (freqs ? ROPE_FREQS : 0) | (s->rope_style == EMBER_ROPE_NEOX ? ROPE_NEOX : 0) |
           (s->no_rope ? ROPE_NOPE : 0) | (norm && s->qk_norm == EMBER_QK_NORM_HEAD ? ROPE_QKNORM_HEAD : 0) |
           (norm && s->qk_norm == EMBER_QK_NORM_FULL ? ROPE_QKNORM_FULL : 0) | (s->ext_factor != 0 ? ROPE_YARN : 0) |
           (s->temp_scale > 0 && s->temp_floor > 0 ? ROPE_TEMP : 0);
}

/* The pipelines' cache type (ATT_F32, ATT_Q8, ATT_F16) of a KV type. */
static int att_type(ember_kv_type t) { return t == EMBER_KV_Q8_0 ? ATT_Q8 : t == EMBER_KV_F16 ? ATT_F16 : ATT_F32; }

void ember_k_rope_store(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                        const ember_rope_bufs *rb, ember_vk_span qkv, ember_vk_span pos,
                        ember_vk_span seq, ember_vk_span block_table, ember_vk_span kcache,
                        ember_vk_span vcache, uint32_t n_tok)
{
    if (n_tok == 0) return;
    uint32_t gx, gy;
    ember_k_grid(n_tok, k->caps.max_wg_count[0], &gx, &gy);
    uint32_t flags = rope_flags(s, rb);
    /* log2 in double on the host: the shader computes base^(-2i/d) as one exp2. A scale
     * of exactly 1 keeps the angles bit-identical to an unscaled pass. */
    rope_push pc = {s->n_heads, s->n_kv_heads, s->head_dim, s->rope_dim, s->block_size,
                    s->max_blocks_per_seq, n_tok, gx, (float)log2((double)s->rope_base),
                    s->pos_scale > 0 ? s->pos_scale : 1.0f, flags, ember_kv_q8_group(s->head_dim),
                    s->ext_factor, s->corr_lo, s->corr_hi, s->mscale > 0 ? s->mscale : 1.0f, s->eps,
                    s->temp_scale, s->temp_floor};
    /* An absent input's binding is never read; pos stands in for it (a binding must be
     * valid whether the shader reads it or not). */
    ember_vk_span b[9] = {qkv, pos, seq, block_table, kcache, vcache, flags & ROPE_BIAS ? rb->bias : pos,
                          flags & ROPE_FREQS ? rb->freqs : pos,
                          flags & (ROPE_QKNORM_HEAD | ROPE_QKNORM_FULL) ? rb->qk_norm : pos};
    const ember_vk_pipeline *rope[ATT_KV_TYPES] = {k->rope, k->rope_q8, k->rope_f16};
    ember_vk_cmd_dispatch(c, rope[att_type(s->kv_type)], b, &pc, gx, gy, 1);
}

/* The pipeline class for head_dim: the first whose lanes hold it. */
static uint32_t attn_class(const ember_kernels *k, uint32_t head_dim)
{
    uint32_t cls = 0;
    while (cls + 1 < k->attn_classes && 4 * k->attn_cpl[cls] * k->attn_lanes < head_dim) cls++;
    return cls;
}

/* lavapipe (gallivm) ends a shader invocation after 65535 loop iterations in all; a
 * tile's runs walk up to max_run sequences one after the other, each up to the longest
 * context plus one iteration per block. The tokens of a tile are capped so that they fit,
 * and a single sequence must fit on its own (ember_kernels_max_positions). */
#define CPU_LOOP_BUDGET 60000u

uint32_t ember_kernels_max_positions(const ember_kernels *k)
{
    /* One run: ctx positions + ctx/16 block steps (blocks of at least 16) + 64 spare. */
    return k->caps.is_cpu ? (CPU_LOOP_BUDGET - 64u) / 17u * 16u : UINT32_MAX;
}

/* Loop iterations one run of a tile walks at most: the whole context, one step per
 * block, and 64 spare. */
static uint64_t run_iterations(const ember_attn_shape *s)
{
    return (uint64_t)s->block_size * s->max_blocks_per_seq + s->max_blocks_per_seq + 64;
}

static uint32_t loop_limited_tokens(const ember_kernels *k, const ember_attn_shape *s, uint32_t tt)
{
    if (!k->caps.is_cpu) return tt;
    uint64_t fit = CPU_LOOP_BUDGET / run_iterations(s);
    return fit < 1 ? 1 : fit < tt ? (uint32_t)fit : tt;
}

/* Split-K only while a decode step has fewer attention tiles than this: past it the tiles
 * alone keep a GPU's compute units busy. */
#define SPLIT_MAX_TILES 512

static uint32_t log2_u32(uint32_t x)
{
    uint32_t n = 0;
    while (x >>= 1) n++;
    return n;
}

void ember_k_attention_runs(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                            ember_vk_span qkv, ember_vk_span pos, ember_vk_span seq,
                            ember_vk_span block_table, ember_vk_span kcache, ember_vk_span vcache,
                            ember_vk_span out, uint32_t n_tok, uint32_t max_run)
{
    ember_k_attention_rows(c, k, s, qkv, pos, seq, block_table, kcache, vcache, out, 0, n_tok, max_run);
}

/* The sinks' binding: the layer's, or another span where it has none (unread, but every
 * binding is filled). */
static ember_vk_span sinks_or(const ember_attn_shape *s, ember_vk_span other) { return s->sinks.size ? s->sinks : other; }

/* One attention launch: the tile shape for max_run, the grid, the push constants. */
typedef struct attn_launch {
    const ember_vk_pipeline *p;
    attention_push pc;
    uint32_t gx, gy;
    uint64_t n_tiles;
} attn_launch;

static attn_launch attn_plan(const ember_kernels *k, const ember_attn_shape *s, ember_vk_span kcache,
                             ember_vk_span vcache, uint32_t row0, uint32_t n_tok, uint32_t max_run, bool split)
{
    uint32_t cls = attn_class(k, s->head_dim);
    bool texel = k->texel && kcache.view && vcache.view; /* never for F16 (kv_view) */
    /* A tile: as many query heads of one KV head as fit, times as many tokens (at most a
     * run of one sequence); the small tile when tokens come one per sequence. */
    int tile = max_run > 1 ? ATT_LARGE : ATT_SMALL;
    if (k->attn_slots[cls][ATT_LARGE] == k->attn_slots[cls][ATT_SMALL]) tile = ATT_SMALL; /* one size only */
    uint32_t slots = k->attn_slots[cls][tile], gq = s->n_heads / s->n_kv_heads, th = gq < slots ? gq : slots;
    uint32_t tt = slots / th;
    if (tt > max_run) tt = max_run ? max_run : 1;
    tt = loop_limited_tokens(k, s, tt);
    attn_launch l = {.n_tiles = (uint64_t)ember_k_ceil(n_tok, tt) * s->n_kv_heads * ember_k_ceil(gq, th)};
    ember_k_grid(ember_k_ceil(l.n_tiles, k->attn_tpw), k->caps.max_wg_count[0], &l.gx, &l.gy);
    l.pc = (attention_push){s->n_heads, s->n_kv_heads, s->head_dim, s->block_size, s->max_blocks_per_seq, n_tok, l.gx,
                            s->attn_scale > 0 ? s->attn_scale : (float)(1.0 / sqrt((double)s->head_dim)),
                            log2_u32(ember_kv_q8_group(s->head_dim)), tt, th, row0, k->attn_chunk_log2, 0, s->window,
                            s->softcap > 0 ? s->softcap : 0.0f, s->sinks.size != 0};
    l.p = k->attention[att_type(s->kv_type)][texel ? ATT_TEXEL : ATT_STORAGE][cls][split ? ATT_SPLIT : tile];
    return l;
}

void ember_k_attention_rows(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                            ember_vk_span qkv, ember_vk_span pos, ember_vk_span seq,
                            ember_vk_span block_table, ember_vk_span kcache, ember_vk_span vcache,
                            ember_vk_span out, uint32_t row0, uint32_t n_tok, uint32_t max_run)
{
    if (n_tok == 0) return;
    attn_launch l = attn_plan(k, s, kcache, vcache, row0, n_tok, max_run, false);
    /* The scratch bindings are not read without the split; out stands in for them. */
    ember_vk_span b[10] = {qkv, pos, seq, block_table, kcache, vcache, out, out, out, sinks_or(s, out)};
    ember_vk_cmd_dispatch(c, l.p, b, &l.pc, l.gx, l.gy, 1);
}

bool ember_k_attention_split(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                             ember_vk_span qkv, ember_vk_span pos, ember_vk_span seq, ember_vk_span block_table,
                             ember_vk_span kcache, ember_vk_span vcache, ember_vk_span out, uint32_t row0,
                             uint32_t n_tok, uint32_t max_pos, const ember_attn_scratch *scratch)
{
    uint32_t n_chunks = (max_pos >> k->attn_chunk_log2) + 1, d4 = s->head_dim / 4;
    uint64_t pairs = (uint64_t)n_tok * s->n_heads;
    if (!k->attn_split || n_tok == 0 || n_chunks < 2 || pairs * n_chunks > scratch->pair_chunks ||
        n_chunks > k->caps.max_wg_count[2])
        return false;
    attn_launch l = attn_plan(k, s, kcache, vcache, row0, n_tok, 1, true);
    if (l.n_tiles >= SPLIT_MAX_TILES) return false; /* enough tiles to fill the device without it */
    l.pc.n_chunks = n_chunks;
    /* the split kind writes chunk states: the sinks are merged in by attention_merge */
    ember_vk_span b[10] = {qkv, pos, seq, block_table, kcache, vcache, out, scratch->ml, scratch->acc, out};
    l.pc.sinks = 0;
    ember_vk_cmd_dispatch(c, l.p, b, &l.pc, l.gx, l.gy, n_chunks);
    ember_vk_cmd_barrier(c);
    uint32_t n = (uint32_t)(pairs * d4), gx, gy;
    ember_k_grid(ember_k_ceil(n, 64), k->caps.max_wg_count[0], &gx, &gy);
    attn_merge_push mp = {(uint32_t)pairs, d4, n_chunks, row0 * s->n_heads * d4, gx, s->n_heads, s->sinks.size != 0};
    ember_vk_span mb[4] = {scratch->ml, scratch->acc, out, sinks_or(s, out)};
    ember_vk_cmd_dispatch(c, k->attn_merge, mb, &mp, gx, gy, 1);
    return true;
}

void ember_k_attention(ember_vk_cmd *c, const ember_kernels *k, const ember_attn_shape *s,
                       ember_vk_span qkv, ember_vk_span pos, ember_vk_span seq,
                       ember_vk_span block_table, ember_vk_span kcache, ember_vk_span vcache,
                       ember_vk_span out, uint32_t n_tok)
{
    ember_k_attention_runs(c, k, s, qkv, pos, seq, block_table, kcache, vcache, out, n_tok, n_tok);
}

ember_status ember_kernels_kv_view(const ember_kernels *k, ember_vk_arena *a, ember_kv_type type, ember_vk_span *cache,
                                   ember_err *err)
{
    /* F32 rows are whole RGBA32F texels; Q8_0 rows (head_dim + scale bytes) are whole
     * 32-bit words only, so R32UI. F16 rows are read from storage (no texel variant). */
    const ember_vk_caps *c = &k->caps;
    bool q8 = type == EMBER_KV_Q8_0;
    uint32_t tb = q8 ? 4 : 16;
    if (type == EMBER_KV_F16 || !k->texel || (q8 && !c->texel_r32ui) || cache->view || cache->size < tb || cache->size % tb != 0 ||
        cache->size / tb > c->max_texel_elements || (c->min_texel_align && cache->offset % c->min_texel_align != 0))
        return EMBER_OK;
    return ember_vk_texel_view(a, cache, q8 ? VK_FORMAT_R32_UINT : VK_FORMAT_R32G32B32A32_SFLOAT, err);
}

ember_status ember_kernels_check_attn(ember_kernels *k, const ember_attn_shape *s, ember_err *err)
{
    uint32_t max_dim = 4 * k->attn_cpl[k->attn_classes - 1] * k->attn_lanes;
    if (max_dim > EMBER_ATT_MAX_HEAD) max_dim = EMBER_ATT_MAX_HEAD; /* the same limit on every device */
    if (s->n_heads == 0 || s->n_kv_heads == 0 || s->n_heads % s->n_kv_heads != 0)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "%u query heads cannot share %u KV heads", s->n_heads,
                          s->n_kv_heads);
    if (s->head_dim == 0 || s->head_dim % 4 != 0 || s->head_dim > max_dim)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "head_dim %u: must be a multiple of 4 and at most %u",
                          s->head_dim, max_dim);
    if (s->rope_dim % 2 != 0 || s->rope_dim > s->head_dim)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "rope_dim %u: must be even and at most head_dim",
                          s->rope_dim);
    if (s->qk_norm == EMBER_QK_NORM_HEAD && s->n_heads + s->n_kv_heads > 256)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "QK-norm per head of %u query and %u KV heads: at most 256 in all",
                          s->n_heads, s->n_kv_heads);
    if (s->rope_style != EMBER_ROPE_NORM && s->rope_style != EMBER_ROPE_NEOX)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "unknown RoPE style %d", (int)s->rope_style);
    if (!ember_kv_type_known(s->kv_type))
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "unknown KV cache type %d", (int)s->kv_type);
    if (s->block_size == 0 || s->max_blocks_per_seq == 0)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "KV block size and table width must be non-zero");
    if (k->caps.is_cpu && run_iterations(s) > CPU_LOOP_BUDGET)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED,
                          "a context of %llu positions in blocks of %u is more than this CPU device's shader "
                          "loops can walk (at most %u positions in blocks of 16)",
                          (unsigned long long)s->block_size * s->max_blocks_per_seq, s->block_size,
                          ember_kernels_max_positions(k));
    /* A shape served: its KV type's pipelines are made now, on first use of that type. */
    return ember_kernels_prepare_attn(k, att_type(s->kv_type), attn_class(k, s->head_dim),
                                      err);
}
