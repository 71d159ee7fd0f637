/* forward.c — one step of the transformer on the GPU, recorded into one command buffer:
 *
 *   embed -> per layer: rmsnorm, QKV, QK-norm+rope+store K/V into blocks, paged attention,
 *            output projection (+residual), rmsnorm, gate/up+SiLU (or GELU), down
 *            (+residual) (each rmsnorm fused into the product after it where the kernels
 *            fuse; a family's post-norms fused into their residual adds: one rmsnorm
 *            dispatch each; the recipe of docs/models.md)
 *         -> final rmsnorm of the rows that need logits -> LM head -> argmax
 *            (-> their best candidates, for samplers that read only those)
 *
 * A layer is 8 dispatches when its weights each fit one binding and attention has one
 * run of rows (decode rows and prompt chunks get a dispatch each; a weight bound in parts
 * a dispatch per part), 6 where the kernels fuse each RMSNorm into the product after it
 * (ember_k_linear_norm: GPUs), plus embed, norm, LM head and argmax per step; a barrier
 * between dependent dispatches. ember_forward_dispatches counts the last step's. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "forward.h"

#include "engine/kv_layout.h"
#include "kernels_attention.h"
#include "kernels_linear.h"
#include "kernels_moe.h"
#include "kernels_rows.h"
#include "kv_pool.h"

/* A mixture's step buffers (device): router logits [T][n_expert], the pairs' weights
 * [T k], each layer's groups (kernels_moe.h) at a stride of its own, the experts' hidden
 * rows [T k][expert_ffn] and their outputs [T k][dim]; picks (host): the groups copied
 * after a step that keeps them (ember_forward_keep_picks, profiling), and prof: the
 * profile with the grouped products' bytes of the experts the step chose. */
typedef struct ember_moe_bufs {
    ember_vk_span logits, w, groups, h, o, picks;
    uint64_t stride;           /* words of a layer's groups */
    bool keep, profiling, kept; /* kept: the step in flight copies its groups */
    uint32_t n_tok;            /* tokens of the step in flight */
    ember_vk_dispatch_time *prof;
} ember_moe_bufs;

typedef struct step_inputs {  /* host-visible, written by the CPU before each submit */
    ember_vk_span tokens, pos, seq, block_tables, logit_rows;
    ember_vk_span local_tables; /* the blocks' local slots, for local layers (kv_pool.h) */
    ember_vk_span hidden_rows; /* the rows whose hidden state is read back (embeddings) */
    ember_vk_span cand_rows;  /* the logits rows whose candidates are wanted */
    ember_vk_span cand_inv_t; /* and 1 / their temperature */
} step_inputs;

struct ember_forward {
    ember_gpu_model *g;
    ember_forward_opts o;
    ember_vk_arena *arena;
    ember_kv_pool *kv;                         /* the K/V pools */
    ember_vk_cmd *cmd;
    step_inputs in;
    ember_vk_span x, xn, qkv, att, ffn, xl;    /* activations (device) */
    ember_moe_bufs moe;                        /* a mixture's (16 bytes each in a dense model) */
    ember_attn_scratch split;                  /* split-K attention's chunk states (device) */
    ember_vk_span logits;                      /* the LM head's output (device) */
    ember_vk_span logits_out;                  /* where rows of it are copied for the host
                                                  when logits is not mapped (discrete GPUs) */
    ember_vk_span argmax, cands;               /* outputs (host-visible) */
    ember_vk_span hidden;                      /* the final norm of hidden_rows (host-visible) */
    uint32_t n_hidden_in_flight;
    ember_vk_cmd *fetch;                       /* copies a row of logits after the step */
    uint32_t max_logits;                       /* logits rows per step */
    uint32_t n_logits_in_flight;               /* rows the submitted step reads back */
    uint32_t n_cands_in_flight;                /* ... of which give candidates (compact in cands) */
    ember_step_out out;                        /* where they go */
    VkSemaphore sync;                          /* the next step's timeline semaphore */
    uint64_t sync_wait, sync_signal;
    ember_attn_shape shape;
};

static ember_status alloc(ember_forward *f, uint64_t bytes, ember_vk_mem kind, ember_vk_span *out,
                          ember_err *err)
{
    return ember_vk_alloc(f->arena, bytes, kind, out, err);
}

/* The step's buffers: inputs and outputs host-visible, activations and logits on the
 * device (logits_out, for rows of logits the host reads, is allocated after them where
 * the device's memory is not mapped). */
typedef struct buffer_plan {
    ember_vk_span *span;
    uint64_t bytes;
    ember_vk_mem kind;
} buffer_plan;

enum { N_BUFFERS = 27 };

/* Chunk states split-K attention can hold: every decode row's heads over the whole context
 * in chunks of the smallest size (tests use it), at most SPLIT_PAIR_CHUNKS (4 MiB for heads
 * of 128): past that a step splits fewer rows, or none (kernels_attention.h). */
#define SPLIT_PAIR_CHUNKS 8192u

/* Words of one layer's groups: whole 256-byte runs (the largest storage offset
 * alignment), so that a layer's groups are a binding of their own. */
static uint64_t groups_stride(const ember_hparams *hp, uint64_t T)
{
    return (ember_moe_groups_words(hp, (uint32_t)T) + 63) / 64 * 64;
}

static uint64_t split_pair_chunks(const ember_hparams *hp, const ember_forward_opts *o)
{
    uint64_t rows = o->max_seqs < o->max_tokens ? o->max_seqs : o->max_tokens;
    uint64_t chunks = ((uint64_t)o->block_size * o->max_blocks_per_seq + EMBER_ATTN_CHUNK_MIN - 1) / EMBER_ATTN_CHUNK_MIN;
    uint64_t n = rows * hp->n_heads * chunks;
    return n < SPLIT_PAIR_CHUNKS ? n : SPLIT_PAIR_CHUNKS;
}

/* Logits rows per step: T, or fewer where one binding cannot hold T rows. */
static uint64_t logits_rows(const ember_hparams *hp, uint64_t T, uint64_t max_storage_range)
{
    uint64_t fit = max_storage_range / ((uint64_t)hp->n_vocab * sizeof(float));
    return fit < T ? fit : T;
}

/* What alloc_buffers allocates into f's spans. */
static void plan_buffers(ember_forward *f, const ember_hparams *hp, const ember_forward_opts *o,
                         uint64_t max_logits, buffer_plan want[N_BUFFERS])
{
    uint64_t T = o->max_tokens, hd = hp->head_dim, f4 = sizeof(float), u4 = sizeof(uint32_t);
    uint64_t qkv_w = (hp->n_heads + 2ull * hp->n_kv_heads) * hd, pc = split_pair_chunks(hp, o);
    uint64_t P = T * hp->n_expert_used, moe = hp->n_expert ? 1 : 0; /* pairs of a step; 0: dense */
    ember_vk_mem H = EMBER_VK_MEM_HOST, D = EMBER_VK_MEM_DEVICE;
    buffer_plan plan[N_BUFFERS] = {
        {&f->in.tokens, T * u4, H}, {&f->in.pos, T * u4, H}, {&f->in.seq, T * u4, H},
        {&f->in.block_tables, (uint64_t)o->max_seqs * o->max_blocks_per_seq * u4, H},
        {&f->in.logit_rows, T * u4, H}, {&f->in.cand_rows, max_logits * u4, H},
        {&f->in.cand_inv_t, max_logits * f4, H},
        {&f->x, T * hp->dim * f4, D}, {&f->xn, T * hp->dim * f4, D}, {&f->qkv, T * qkv_w * f4, D},
        {&f->att, T * hp->n_heads * hd * f4, D}, {&f->ffn, T * hp->ffn_dim * f4, D},
        {&f->xl, max_logits * hp->dim * f4, D},
        {&f->logits, max_logits * hp->n_vocab * f4, D}, {&f->argmax, T * u4, H},
        {&f->cands, max_logits * sizeof(ember_cand_row), H},
        {&f->split.ml, pc * 2 * f4, D}, {&f->split.acc, pc * hd * f4, D},
        {&f->in.hidden_rows, T * u4, H}, {&f->hidden, T * hp->dim * f4, H},
        {&f->in.local_tables, (uint64_t)o->max_seqs * o->max_blocks_per_seq * u4, H},
        {&f->moe.logits, moe ? T * hp->n_expert * f4 : 16, D}, {&f->moe.w, moe ? P * f4 : 16, D},
        {&f->moe.groups, moe ? hp->n_layers * groups_stride(hp, T) * u4 : 16, D},
        {&f->moe.picks, moe ? hp->n_layers * groups_stride(hp, T) * u4 : 16, H},
        {&f->moe.h, moe ? P * hp->expert_ffn * f4 : 16, D}, {&f->moe.o, moe ? P * hp->dim * f4 : 16, D},
    };
    memcpy(want, plan, sizeof plan);
}

uint64_t ember_forward_buffer_bytes(const ember_hparams *hp, const ember_forward_opts *o, uint64_t max_storage_range)
{
    ember_forward sizes_only = {0}; /* its spans are named, never filled */
    buffer_plan want[N_BUFFERS];
    plan_buffers(&sizes_only, hp, o, logits_rows(hp, o->max_tokens, max_storage_range), want);
    uint64_t sum = 0;
    for (int i = 0; i < N_BUFFERS; i++) sum += want[i].bytes;
    return sum;
}

/* Host and device chunks of just the buffers' size, before they are allocated. */
static ember_status reserve_buffers(ember_forward *f, const buffer_plan want[N_BUFFERS], ember_err *err)
{
    ember_status s = EMBER_OK;
    const ember_vk_mem kinds[2] = {EMBER_VK_MEM_HOST, EMBER_VK_MEM_DEVICE};
    for (int k = 0; s == EMBER_OK && k < 2; k++) {
        VkDeviceSize sizes[N_BUFFERS];
        uint32_t n = 0;
        for (int i = 0; i < N_BUFFERS; i++)
            if (want[i].kind == kinds[k]) sizes[n++] = want[i].bytes;
        s = ember_vk_arena_reserve(f->arena, sizes, n, kinds[k], err);
    }
    return s;
}

static ember_status alloc_buffers(ember_forward *f, ember_err *err)
{
    const ember_hparams *hp = &f->g->hp;
    const ember_vk_caps *caps = ember_vk_get_caps(f->g->vk);
    uint64_t rows = logits_rows(hp, f->o.max_tokens, caps->max_storage_range);
    if (rows == 0)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "a logits row (%u floats) exceeds one storage binding",
                          hp->n_vocab);
    f->max_logits = (uint32_t)rows;
    f->split.pair_chunks = split_pair_chunks(hp, &f->o);
    buffer_plan want[N_BUFFERS];
    plan_buffers(f, hp, &f->o, rows, want);
    ember_status s = reserve_buffers(f, want, err);
    for (int i = 0; s == EMBER_OK && i < N_BUFFERS; i++) {
        if (want[i].bytes > caps->max_storage_range)
            return ember_fail(err, EMBER_ERR_UNSUPPORTED,
                              "an activation buffer of %llu bytes exceeds one storage binding; lower max tokens",
                              (unsigned long long)want[i].bytes);
        s = alloc(f, want[i].bytes, want[i].kind, want[i].span, err);
    }
    return s;
}

/* Texel views of the linear inputs: the kernels read x through them where they can. */
static ember_status input_views(ember_forward *f, ember_err *err)
{
    ember_vk_span *in[] = {&f->x, &f->xn, &f->att, &f->ffn, &f->xl, &f->moe.h};
    ember_status s = EMBER_OK;
    for (size_t i = 0; s == EMBER_OK && i < sizeof in / sizeof in[0]; i++)
        s = ember_kernels_input_view(f->g->kernels, f->arena, in[i], err);
    return s;
}

/* The K/V pools (kv_pool.h): the global layers' of n_blocks, the local layers' of the
 * pool's local slots. */
static ember_status create_kv(ember_forward *f, ember_err *err)
{
    ember_kv_pool_opts po = {.n_blocks = f->o.n_blocks, .block_size = f->o.block_size, .n_local = f->o.n_local,
                             .window = f->o.window, .kv_type = f->o.kv_type};
    return ember_kv_pool_create(f->g, &po, &f->kv, err);
}

ember_status ember_forward_create(ember_gpu_model *g, const ember_forward_opts *o, ember_forward **out,
                                  ember_err *err)
{
    *out = NULL;
    if (!o->max_tokens || !o->max_seqs || !o->n_blocks || !o->block_size || !o->max_blocks_per_seq)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "forward pass options must all be non-zero");
    ember_forward *f = ember_calloc(1, sizeof *f);
    if (!f) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    f->g = g;
    f->o = *o;
    const ember_hparams *hp = &g->hp;
    f->moe.stride = groups_stride(hp, o->max_tokens);
    f->shape = (ember_attn_shape){hp->n_heads, hp->n_kv_heads, hp->head_dim, hp->rope_dim, hp->rope_base,
                                  o->block_size, o->max_blocks_per_seq, hp->rope_style, ember_rope_pos_scale(hp),
                                  o->kv_type, .attn_scale = ember_attn_scale(hp), .softcap = hp->attn_softcap,
                                  .qk_norm = hp->qk_norm, .eps = hp->rms_eps, .temp_scale = hp->attn_temp_scale,
                                  .temp_floor = (float)(hp->rope_orig_ctx ? hp->rope_orig_ctx : hp->ctx_len)};
    ember_status s = ember_kernels_check_attn(g->kernels, &f->shape, err);
    if (s == EMBER_OK) s = ember_vk_arena_create(g->vk, &f->arena, err);
    if (s == EMBER_OK && (s = alloc_buffers(f, err)) != EMBER_OK)
        ember_fail_ctx(err, s, "activations for %u tokens", o->max_tokens);
    if (s == EMBER_OK && !f->logits.host) s = alloc(f, f->logits.size, EMBER_VK_MEM_HOST, &f->logits_out, err);
    if (s == EMBER_OK) s = input_views(f, err);
    if (s == EMBER_OK && (s = create_kv(f, err)) != EMBER_OK)
        ember_fail_ctx(err, s, "KV pool of %u blocks", o->n_blocks);
    if (s == EMBER_OK) s = ember_vk_cmd_create(g->vk, &f->cmd, err);
    if (s == EMBER_OK) s = ember_vk_cmd_create(g->vk, &f->fetch, err);
    if (s == EMBER_OK && hp->n_expert && !(f->moe.prof = ember_calloc(EMBER_VK_PROFILE_MAX, sizeof *f->moe.prof)))
        s = ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    if (s != EMBER_OK) {
        ember_forward_free(f);
        return s;
    }
    *out = f;
    return EMBER_OK;
}

void ember_forward_free(ember_forward *f)
{
    if (!f) return;
    ember_vk_cmd_destroy(f->cmd);
    ember_vk_cmd_destroy(f->fetch);
    ember_kv_pool_free(f->kv);
    ember_vk_arena_destroy(f->arena);
    ember_free(f->moe.prof);
    ember_free(f);
}

/* ---- one step -------------------------------------------------------------------- */

static ember_status check_batch(const ember_forward *f, const ember_batch *b, ember_err *err)
{
    if (b->n_tokens == 0 || b->n_tokens > f->o.max_tokens)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "batch of %u tokens (limit %u)", b->n_tokens, f->o.max_tokens);
    if (b->n_logits > f->max_logits)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "%u logits rows requested (limit %u)", b->n_logits,
                          f->max_logits);
    uint64_t max_pos = (uint64_t)f->o.block_size * f->o.max_blocks_per_seq;
    for (uint32_t i = 0; i < b->n_tokens; i++) {
        if (b->tokens[i] >= f->g->hp.n_vocab)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "token id %u outside the vocabulary", b->tokens[i]);
        if (b->seq[i] >= f->o.max_seqs || b->pos[i] >= max_pos)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "token %u: sequence slot %u / position %u out of range",
                              i, b->seq[i], b->pos[i]);
        size_t at = (size_t)b->seq[i] * f->o.max_blocks_per_seq + b->pos[i] / f->o.block_size;
        uint32_t blk = b->block_tables[at], loc = b->local_tables ? b->local_tables[at] : blk;
        if (blk >= f->o.n_blocks || loc >= ember_kv_pool_n_local(f->kv))
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "token %u maps to KV block %u of %u (local slot %u of %u)",
                              i, blk, f->o.n_blocks, loc, ember_kv_pool_n_local(f->kv));
    }
    for (uint32_t i = 0; i < b->n_logits; i++)
        if (b->logit_rows[i] >= b->n_tokens)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "logits row %u outside the batch", b->logit_rows[i]);
    if (b->n_hidden > b->n_tokens)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "%u hidden rows of %u", b->n_hidden, b->n_tokens);
    for (uint32_t i = 0; i < b->n_hidden; i++)
        if (b->hidden_rows[i] >= b->n_tokens)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "hidden row %u outside the batch", b->hidden_rows[i]);
    return EMBER_OK;
}

/* The logits rows whose candidates out wants, listed for topk (their candidates come back
 * in this order). */
static uint32_t list_cand_rows(ember_forward *f, const ember_batch *b, const ember_step_out *out)
{
    uint32_t n = 0, *rows = f->in.cand_rows.host;
    float *inv_t = f->in.cand_inv_t.host;
    for (uint32_t i = 0; i < b->n_logits; i++)
        if (ember_out_cands(out, i)) {
            float t = out->temp ? out->temp[i] : 1;
            inv_t[n] = !(t > 0) ? 1 : 1 / t <= FLT_MAX ? 1 / t : FLT_MAX; /* as the sampler's softmax */
            rows[n++] = i;
        }
    return n;
}

static ember_status write_inputs(ember_forward *f, const ember_batch *b, ember_err *err)
{
    size_t n = b->n_tokens * sizeof(uint32_t);
    memcpy(f->in.tokens.host, b->tokens, n);
    memcpy(f->in.pos.host, b->pos, n);
    memcpy(f->in.seq.host, b->seq, n);
    memcpy(f->in.block_tables.host, b->block_tables, f->in.block_tables.size);
    memcpy(f->in.local_tables.host, b->local_tables ? b->local_tables : b->block_tables, f->in.local_tables.size);
    if (b->n_logits) memcpy(f->in.logit_rows.host, b->logit_rows, b->n_logits * sizeof(uint32_t));
    if (b->n_hidden) memcpy(f->in.hidden_rows.host, b->hidden_rows, b->n_hidden * sizeof(uint32_t));
    ember_vk_span w[] = {f->in.tokens,     f->in.pos,       f->in.seq,        f->in.block_tables,
                         f->in.logit_rows, f->in.cand_rows, f->in.cand_inv_t, f->in.hidden_rows,
                         f->in.local_tables};
    return ember_vk_flush(f->g->vk, w, 9, err); /* where host memory is not coherent */
}

/* Attention's dispatches: batch rows cut where runs of one token (decodes) meet longer
 * runs of one sequence (prompt chunks, verifications), each segment with its longest run,
 * so that decode rows get the small tile instead of paying for a large tile's pair slots
 * (the tile never changes a bit). Past MAX_SEGS segments, one segment. */
#define MAX_SEGS 4

typedef struct att_seg {
    uint32_t row0, n, max_run;
    uint32_t max_pos;  /* the largest position of its rows */
} att_seg;

static uint32_t attention_segments(const ember_batch *b, att_seg *seg)
{
    uint32_t n_seg = 0, longest = 1, top = 0;
    bool many = false;
    for (uint32_t i = 0, j; i < b->n_tokens; i = j) {
        uint32_t pmax = b->pos[i];
        for (j = i + 1; j < b->n_tokens && b->seq[j] == b->seq[i]; j++)
            if (b->pos[j] > pmax) pmax = b->pos[j];
        uint32_t run = j - i;
        if (run > longest) longest = run;
        if (pmax > top) top = pmax;
        att_seg *last = n_seg ? &seg[n_seg - 1] : NULL;
        if (last && (last->max_run > 1) == (run > 1)) {
            last->n += run;
            if (run > last->max_run) last->max_run = run;
            if (pmax > last->max_pos) last->max_pos = pmax;
        } else if (n_seg < MAX_SEGS) {
            seg[n_seg++] = (att_seg){i, run, run, pmax};
        } else {
            many = true;
        }
    }
    if (many || n_seg == 0) {
        seg[0] = (att_seg){0, b->n_tokens, longest, top};
        n_seg = 1;
    }
    return n_seg;
}

/* The block table layer l reads: the blocks' local slots for a local layer whose K/V live
 * in the local pools. */
static ember_vk_span layer_table(const ember_forward *f, uint32_t l)
{
    return ember_kv_pool_is_local(f->kv, l) ? f->in.local_tables : f->in.block_tables;
}

/* A segment's attention: decode rows split over workgroups where the kernels split
 * (ember_k_attention_split), else one dispatch of tiles. */
static void record_attention(ember_forward *f, const ember_attn_shape *s, uint32_t l, const att_seg *g)
{
    ember_vk_cmd *c = f->cmd;
    const ember_kernels *k = f->g->kernels;
    ember_vk_span kc = ember_kv_pool_k(f->kv, l), vc = ember_kv_pool_v(f->kv, l), bt = layer_table(f, l);
    if (g->max_run == 1 && ember_k_attention_split(c, k, s, f->qkv, f->in.pos, f->in.seq, bt, kc, vc, f->att, g->row0,
                                                   g->n, g->max_pos, &f->split))
        return;
    ember_k_attention_rows(c, k, s, f->qkv, f->in.pos, f->in.seq, bt, kc, vc, f->att, g->row0, g->n, g->max_run);
}

/* y = W rmsnorm(x): one fused dispatch where the kernels fuse it (ember_k_linear_norm),
 * else the norm into xn and the product; y = W x where the family has no pre-norm (norm_w
 * of size 0); then the barrier before y's readers. */
static void normed_linear(ember_forward *f, const ember_gpu_weight *w, ember_vk_span norm_w, ember_vk_span y,
                          uint32_t T, ember_out_mode mode)
{
    ember_vk_cmd *c = f->cmd;
    const ember_kernels *k = f->g->kernels;
    const ember_hparams *hp = &f->g->hp;
    if (!norm_w.size) {
        ember_k_linear(c, k, w, f->x, y, T, mode);
    } else if (ember_k_linear_can_norm(k, w)) {
        ember_linear_norm n = {norm_w, hp->rms_eps};
        ember_k_linear_norm(c, k, w, f->x, &n, y, T, mode);
    } else {
        ember_k_rmsnorm(c, k, f->x, norm_w, f->xn, NULL, T, hp->dim, hp->rms_eps);
        ember_vk_cmd_barrier(c);
        ember_k_linear(c, k, w, f->xn, y, T, mode);
    }
    ember_vk_cmd_barrier(c);
}

/* x += residual_scale * (W in + bias), through the post-norm where the family has one
 * (post, bias of size 0: none): the product into xn, then its norm added to x in one
 * dispatch. */
static void residual_linear(ember_forward *f, const ember_gpu_weight *w, ember_vk_span in, ember_vk_span post,
                            ember_vk_span bias, uint32_t T)
{
    ember_vk_cmd *c = f->cmd;
    const ember_kernels *k = f->g->kernels;
    const ember_hparams *hp = &f->g->hp;
    if (!post.size) {
        ember_k_linear_bias(c, k, w, in, f->x, T, EMBER_OUT_ADD, hp->residual_scale, bias);
    } else {
        ember_k_linear_bias(c, k, w, in, f->xn, T, EMBER_OUT_STORE, 0, bias);
        ember_vk_cmd_barrier(c);
        ember_k_rmsnorm_add(c, k, f->xn, post, f->x, T, hp->dim, hp->rms_eps, hp->residual_scale);
    }
    ember_vk_cmd_barrier(c);
}

/* The attention shape of layer l: the model's, with the layer's window, RoPE base and
 * scale, YaRN ramp (model.h's ember_layer_attn). */
static ember_attn_shape layer_shape(const ember_forward *f, uint32_t l)
{
    ember_attn_shape s = f->shape;
    ember_layer_attn at;
    ember_layer_attn_of(&f->g->hp, l, &at);
    s.rope_base = at.rope_base, s.pos_scale = at.pos_scale, s.window = at.window, s.no_rope = !at.rope;
    s.ext_factor = at.ext_factor, s.corr_lo = at.corr_lo, s.corr_hi = at.corr_hi, s.mscale = at.mscale;
    s.sinks = f->g->layers[l].sinks;
    return s;
}

/* A mixture's FFN: the normed input, the router's logits, the routing, the grouped
 * gate/up and down products over the pairs, their weighted sum into x (kernels_moe.h). */
static void record_moe(ember_forward *f, uint32_t l, uint32_t T)
{
    const ember_gpu_layer *L = &f->g->layers[l];
    ember_vk_span groups = ember_vk_span_sub(f->moe.groups, l * f->moe.stride * 4, f->moe.stride * 4);
    ember_vk_cmd *c = f->cmd;
    const ember_kernels *k = f->g->kernels;
    const ember_hparams *hp = &f->g->hp;
    ember_k_rmsnorm(c, k, f->x, L->ffn_norm, f->xn, NULL, T, hp->dim, hp->rms_eps);
    ember_vk_cmd_barrier(c);
    ember_k_linear(c, k, &L->router, f->xn, f->moe.logits, T, EMBER_OUT_STORE);
    ember_vk_cmd_barrier(c);
    ember_moe_products pr = {{&L->gate_up_exps, &L->down_exps}, {ember_k_glu_mode(hp->act), EMBER_OUT_STORE}, 2};
    ember_k_moe_route(c, k, hp, f->moe.logits, L->router_b, f->moe.w, groups, T, &pr);
    ember_vk_cmd_barrier(c);
    ember_k_moe_linear(c, k, hp, &pr, 0, f->xn, hp->n_expert_used, groups, f->moe.h, T, L->gate_up_exps_b);
    ember_vk_cmd_barrier(c);
    ember_k_moe_linear(c, k, hp, &pr, 1, f->moe.h, 1, groups, f->moe.o, T, L->down_exps_b);
    ember_vk_cmd_barrier(c);
    ember_k_moe_combine(c, k, f->moe.o, f->moe.w, f->x, T, hp->dim, hp->n_expert_used, hp->residual_scale);
    ember_vk_cmd_barrier(c);
}

static void record_layer(ember_forward *f, uint32_t l, uint32_t T, const att_seg *seg, uint32_t n_seg)
{
    ember_vk_cmd *c = f->cmd;
    const ember_kernels *k = f->g->kernels;
    const ember_gpu_layer *L = &f->g->layers[l];
    ember_attn_shape s = layer_shape(f, l);

    normed_linear(f, &L->qkv, L->attn_norm, f->qkv, T, EMBER_OUT_STORE);
    ember_rope_bufs rb = {L->bias_qkv, f->g->rope_freqs, L->qk_norm};
    ember_k_rope_store(c, k, &s, &rb, f->qkv, f->in.pos, f->in.seq, layer_table(f, l), ember_kv_pool_k(f->kv, l),
                       ember_kv_pool_v(f->kv, l), T);
    ember_vk_cmd_barrier(c);
    for (uint32_t i = 0; i < n_seg; i++) record_attention(f, &s, l, &seg[i]);
    ember_vk_cmd_barrier(c);
    residual_linear(f, &L->wo, f->att, L->attn_post_norm, L->bo, T);
    if (L->router.n_parts) {
        record_moe(f, l, T);
        return;
    }
    normed_linear(f, &L->gate_up, L->ffn_norm, f->ffn, T, ember_k_glu_mode(f->g->hp.act));
    residual_linear(f, &L->down, f->ffn, L->ffn_post_norm, (ember_vk_span){0}, T);
}

/* Where the host reads logits: the device buffer where it is mapped, else logits_out. */
static ember_vk_span host_logits(const ember_forward *f)
{
    return f->logits.host ? f->logits : f->logits_out;
}

/* Row i of the logits to row i of the host's copy, for the rows out wants whole: each run
 * of them is one copy. Nothing to copy where the device's buffer is mapped. */
static void record_logits_copy(ember_forward *f, uint32_t n, const ember_step_out *out)
{
    if (f->logits.host) return;
    VkDeviceSize row = (VkDeviceSize)f->g->hp.n_vocab * sizeof(float);
    for (uint32_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && ember_out_row(out, j) == ember_out_row(out, i); j++) {}
        if (!ember_out_row(out, i)) continue;
        ember_vk_span a = ember_vk_span_sub(f->logits, i * row, (j - i) * row);
        ember_vk_span b = ember_vk_span_sub(f->logits_out, i * row, (j - i) * row);
        ember_vk_cmd_copy(f->cmd, &a, &b, (j - i) * row);
    }
}

/* What the step delivers beside the logits themselves: argmax, candidates, copies. */
static void record_outputs(ember_forward *f, const ember_batch *b, const ember_step_out *out)
{
    ember_vk_cmd *c = f->cmd;
    const ember_kernels *k = f->g->kernels;
    uint32_t V = f->g->hp.n_vocab;
    ember_k_argmax(c, k, f->logits, f->argmax, b->n_logits, V);
    ember_k_topk(c, k, f->logits, f->in.cand_rows, f->in.cand_inv_t, f->cands, f->n_cands_in_flight, V);
    if (out->logits) record_logits_copy(f, b->n_logits, out);
}

static void record_step(ember_forward *f, const ember_batch *b, const ember_step_out *out)
{
    ember_vk_cmd *c = f->cmd;
    const ember_kernels *k = f->g->kernels;
    const ember_hparams *hp = &f->g->hp;
    uint32_t T = b->n_tokens;

    ember_vk_cmd_timestamp(c, 0);
    ember_k_embed_scaled(c, k, &f->g->tok_embd, f->in.tokens, f->x, T, hp->embed_scale);
    ember_vk_cmd_barrier(c);
    att_seg seg[MAX_SEGS];
    uint32_t n_seg = attention_segments(b, seg);
    for (uint32_t l = 0; l < hp->n_layers; l++) record_layer(f, l, T, seg, n_seg);
    f->moe.kept = hp->n_expert && (f->moe.keep || f->moe.profiling);
    f->moe.n_tok = T;
    if (f->moe.kept) ember_vk_cmd_copy(c, &f->moe.groups, &f->moe.picks, f->moe.groups.size);
    if (b->n_hidden) { /* read by the host after the step: no barrier for the rest */
        ember_k_rmsnorm(c, k, f->x, f->g->output_norm, f->hidden, &f->in.hidden_rows, b->n_hidden, hp->dim,
                        hp->rms_eps);
    }
    if (b->n_logits) {
        ember_k_rmsnorm(c, k, f->x, f->g->output_norm, f->xl, &f->in.logit_rows, b->n_logits, hp->dim,
                        hp->rms_eps);
        ember_vk_cmd_barrier(c);
        ember_k_linear_out(c, k, &f->g->output, f->xl, f->logits, b->n_logits, EMBER_OUT_STORE, hp->logit_scale,
                           hp->final_softcap);
        ember_vk_cmd_barrier(c);
        record_outputs(f, b, out);
    }
    ember_vk_cmd_timestamp(c, 1);
}

ember_status ember_forward_submit(ember_forward *f, const ember_batch *b, const ember_step_out *out, ember_err *err)
{
    ember_status s = check_batch(f, b, err);
    if (s != EMBER_OK) return s;
    if (out->cands && f->g->hp.n_vocab >= (1u << 24)) /* topk.comp's id passes */
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "candidates need a vocabulary under 2^24 tokens");
    if ((s = ember_vk_cmd_begin(f->cmd, err)) != EMBER_OK) return s;
    f->n_cands_in_flight = list_cand_rows(f, b, out);
    if ((s = write_inputs(f, b, err)) != EMBER_OK) return s;
    record_step(f, b, out);
    f->n_logits_in_flight = b->n_logits;
    f->n_hidden_in_flight = out->hidden ? b->n_hidden : 0;
    f->out = *out;
    /* Only the step itself is ordered against the application (not block copies). */
    if (f->sync) ember_vk_cmd_sync_next(f->cmd, f->sync, f->sync_wait, f->sync_signal, err);
    f->sync = VK_NULL_HANDLE;
    return ember_vk_cmd_submit_nowait(f->cmd, err);
}

ember_status ember_forward_collect(ember_forward *f, uint64_t timeout_ns, ember_err *err)
{
    ember_status s = ember_vk_cmd_wait(f->cmd, timeout_ns, err);
    if (s != EMBER_OK) return s;
    const ember_step_out *o = &f->out;
    uint32_t n = f->n_logits_in_flight;
    size_t row = (size_t)f->g->hp.n_vocab * sizeof(float);
    ember_vk_span l = host_logits(f);
    size_t hidden = (size_t)f->n_hidden_in_flight * f->g->hp.dim * sizeof(float);
    ember_vk_span r[] = {ember_vk_span_sub(l, 0, o->logits ? n * row : 0),
                         ember_vk_span_sub(f->argmax, 0, o->argmax ? n * sizeof(uint32_t) : 0),
                         ember_vk_span_sub(f->cands, 0, f->n_cands_in_flight * sizeof(ember_cand_row)),
                         ember_vk_span_sub(f->hidden, 0, hidden)};
    if ((s = ember_vk_invalidate(f->g->vk, r, 4, err)) != EMBER_OK) return s; /* where not coherent */
    if (hidden) memcpy(o->hidden, f->hidden.host, hidden);
    const ember_cand_row *cands = f->cands.host; /* compact, in the order of cand_rows */
    for (uint32_t i = 0; i < n; i++) {
        if (ember_out_row(o, i)) memcpy((char *)o->logits + i * row, (const char *)l.host + i * row, row);
        if (ember_out_cands(o, i)) o->cands[i] = *cands++;
    }
    if (o->argmax) memcpy(o->argmax, f->argmax.host, n * sizeof(uint32_t));
    return EMBER_OK;
}

ember_status ember_forward_fetch_logits(ember_forward *f, const uint32_t *rows, uint32_t n, float *out,
                                        ember_err *err)
{
    for (uint32_t i = 0; i < n; i++)
        if (rows[i] >= f->n_logits_in_flight)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "logits row %u of %u", rows[i], f->n_logits_in_flight);
    VkDeviceSize row = (VkDeviceSize)f->g->hp.n_vocab * sizeof(float);
    ember_status s = EMBER_OK;
    if (n && !f->logits.host) { /* the copies the step did not make: one submission */
        s = ember_vk_cmd_begin(f->fetch, err);
        for (uint32_t i = 0; i < n; i++) {
            ember_vk_span d = ember_vk_span_sub(f->logits, rows[i] * row, row);
            ember_vk_span h = ember_vk_span_sub(f->logits_out, rows[i] * row, row);
            ember_vk_cmd_copy(f->fetch, &d, &h, row);
        }
        if (s == EMBER_OK) s = ember_vk_cmd_submit(f->fetch, err);
    }
    for (uint32_t i = 0; s == EMBER_OK && i < n; i++) {
        ember_vk_span l = ember_vk_span_sub(host_logits(f), rows[i] * row, row);
        if ((s = ember_vk_invalidate(f->g->vk, &l, 1, err)) == EMBER_OK)
            memcpy((char *)out + rows[i] * row, l.host, row);
    }
    return s;
}

ember_status ember_forward_run(ember_forward *f, const ember_batch *b, float *logits, uint32_t *argmax,
                               double *gpu_ms, ember_err *err)
{
    ember_step_out out = {.logits = logits, .argmax = argmax};
    ember_status s = ember_forward_submit(f, b, &out, err);
    if (s == EMBER_OK) s = ember_forward_collect(f, UINT64_MAX, err);
    if (s == EMBER_OK && gpu_ms) {
        double ns = ember_vk_cmd_elapsed_ns(f->cmd, 0, 1);
        *gpu_ms = ns < 0 ? -1 : ns / 1e6;
    }
    return s;
}

uint32_t ember_forward_dispatches(const ember_forward *f) { return ember_vk_cmd_dispatch_count(f->cmd); }

ember_status ember_forward_set_profiling(ember_forward *f, bool on, ember_err *err)
{
    ember_status s = ember_vk_cmd_set_profiling(f->cmd, on, err);
    if (s == EMBER_OK) f->moe.profiling = on;
    return s;
}

/* ---- a mixture's routing, read back --------------------------------------------------- */

void ember_forward_keep_picks(ember_forward *f, bool keep) { f->moe.keep = keep; }

/* Layer l's groups as the last collected step left them (moe_route.comp's layout). */
static const uint32_t *kept_groups(const ember_forward *f, uint32_t l)
{
    return (const uint32_t *)f->moe.picks.host + l * f->moe.stride;
}

ember_status ember_forward_expert_picks(ember_forward *f, uint32_t layer, uint32_t *experts, uint32_t *counts,
                                        ember_err *err)
{
    const ember_hparams *hp = &f->g->hp;
    if (!hp->n_expert || !f->moe.kept || layer >= hp->n_layers)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "no routing of layer %u was kept (%s)", layer,
                          hp->n_expert ? "ember_forward_keep_picks" : "a dense model");
    ember_status s = ember_vk_invalidate(f->g->vk, &f->moe.picks, 1, err);
    if (s != EMBER_OK) return s;
    const uint32_t *g = kept_groups(f, layer), n_pairs = f->moe.n_tok * hp->n_expert_used;
    if (experts) memcpy(experts, g + 2 * hp->n_expert + n_pairs, n_pairs * sizeof *experts);
    if (counts) memcpy(counts, g, hp->n_expert * sizeof *counts);
    return EMBER_OK;
}

/* The bytes of the experts of ew's part that some token of the step chose. */
static uint64_t chosen_bytes(const ember_gpu_weight *ew, uint32_t part, const uint32_t *counts)
{
    const ember_gpu_weight_part *p = &ew->parts[part];
    uint32_t e0 = p->row0 / ew->expert_rows, n = p->n_rows / ew->expert_rows, chosen = 0;
    for (uint32_t e = e0; e < e0 + n; e++) chosen += counts[e] > 0;
    return chosen * ember_gpu_weight_bytes(p->type, ew->expert_rows, ew->cols);
}

/* The profile with each grouped product's bytes those of the experts the step chose, not
 * of every expert its part holds (what it noted when recorded): its linear_moe dispatches
 * come layer by layer, gate|up's parts then down's (record_moe). */
static uint32_t profile_chosen(ember_forward *f, const ember_vk_dispatch_time *d, uint32_t n)
{
    memcpy(f->moe.prof, d, n * sizeof *d);
    uint32_t l = 0, w = 0, part = 0;
    for (uint32_t i = 0; i < n && l < f->g->hp.n_layers; i++) {
        if (strncmp(d[i].name, "linear_moe", 10) != 0) continue;
        const ember_gpu_weight *ew = w ? &f->g->layers[l].down_exps : &f->g->layers[l].gate_up_exps;
        f->moe.prof[i].bytes = chosen_bytes(ew, part, kept_groups(f, l));
        if (++part == ew->n_parts) part = 0, l += w, w ^= 1;
    }
    return n;
}

uint32_t ember_forward_profile(ember_forward *f, const ember_vk_dispatch_time **d, uint32_t *n_barriers,
                               double *gpu_ns)
{
    uint32_t n = ember_vk_cmd_profile(f->cmd, d, n_barriers, gpu_ns);
    ember_err err = {{0}};
    if (!n || !f->moe.kept || ember_vk_invalidate(f->g->vk, &f->moe.picks, 1, &err) != EMBER_OK) return n;
    n = profile_chosen(f, *d, n);
    *d = f->moe.prof;
    return n;
}

ember_status ember_forward_copy_blocks(ember_forward *f, const uint32_t *src, const uint32_t *dst, const uint32_t *lsrc,
                                       const uint32_t *ldst, uint32_t n, ember_err *err)
{
    if (!n) return EMBER_OK;
    ember_status s = ember_vk_cmd_begin(f->cmd, err);
    if (s == EMBER_OK) s = ember_kv_pool_copies(f->kv, f->cmd, src, dst, lsrc, ldst, n, err);
    return s == EMBER_OK ? ember_vk_cmd_submit(f->cmd, err) : s;
}

/* ---- K/V to and from the host ------------------------------------------------------ */

ember_status ember_forward_transfer_kv(ember_forward *f, const uint32_t *blocks, const uint32_t *local, uint32_t p0,
                                       uint32_t p1, uint8_t *rows, uint32_t rows_pos, bool write, ember_err *err)
{
    /* the step's own command buffer stays for its profile */
    return ember_kv_pool_transfer(f->kv, f->fetch, blocks, local, p0, p1, rows, rows_pos, write, err);
}

ember_status ember_forward_sync_next(ember_forward *f, VkSemaphore timeline, uint64_t wait_value,
                                     uint64_t signal_value, ember_err *err)
{
    if (timeline && !ember_vk_get_caps(f->g->vk)->timeline_semaphore)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "the device was created without timelineSemaphore");
    f->sync = timeline;
    f->sync_wait = wait_value;
    f->sync_signal = signal_value;
    return EMBER_OK;
}

uint64_t ember_forward_kv_bytes(const ember_forward *f) { return ember_kv_pool_bytes(f->kv); }

ember_status ember_forward_resize_kv(ember_forward *f, uint32_t n, uint32_t keep, ember_err *err)
{
    ember_status s = ember_kv_pool_resize(f->kv, f->cmd, n, keep, err);
    if (s == EMBER_OK) f->o.n_blocks = n;
    return s;
}
