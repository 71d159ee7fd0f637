/* gpu_model.c — the model's weights in GPU memory. Q, K and V are stacked into one
 * matrix and gate and up into another (or taken as the file fuses them), so that each
 * pair/triple is one dispatch; their biases, when the layer has any, into one row that
 * rope_store adds, and the QK-norm weights into one span it reads. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "gpu_model.h"

#include "engine/model/quant.h"
#include "kernels_linear.h"
#include "kernels_moe.h"
#include "kernels_rows.h"

static ember_status upload_vector(ember_gpu_model *g, const ember_gguf_tensor *t, ember_vk_span *out,
                                  ember_err *err)
{
    ember_status s = ember_vk_alloc(g->arena, t->nbytes, EMBER_VK_MEM_DEVICE, out, err);
    if (s == EMBER_OK) s = ember_vk_upload(g->vk, out, 0, t->data, t->nbytes, err);
    return s;
}

/* Stacks tensors of one row length by rows into one GPU weight. Their types may differ
 * (llama.cpp's mixes: attn_v in more bits than attn_q and attn_k), except where one
 * dispatch pairs rows of two of them (gate and up: one_type). */
static ember_status upload_stack(ember_gpu_model *g, const ember_gguf_tensor *const *t, uint32_t n, bool one_type,
                                 uint64_t max_part, ember_gpu_weight *out, ember_err *err)
{
    const void *src[3] = {0};
    uint32_t rows[3] = {0};
    ember_dtype types[3] = {0};
    for (uint32_t i = 0; i < n; i++) {
        if (t[i]->ne[0] != t[0]->ne[0] || (one_type && t[i]->type != t[0]->type))
            return ember_fail(err, EMBER_ERR_UNSUPPORTED, "tensors %s (%s) and %s (%s) differ in %s", t[0]->name,
                              ember_dtype_name(t[0]->type), t[i]->name, ember_dtype_name(t[i]->type),
                              t[i]->ne[0] != t[0]->ne[0] ? "row length" : "type");
        src[i] = t[i]->data;
        rows[i] = (uint32_t)t[i]->ne[1];
        types[i] = t[i]->type;
    }
    ember_status s = ember_gpu_weight_upload(g->vk, g->arena, types, (uint32_t)t[0]->ne[0], src, rows, n,
                                             max_part, out, err);
    if (s != EMBER_OK) ember_fail_ctx(err, s, "uploading %s", t[0]->name);
    /* on the device now: the file's copy need not stay in memory (the upload has waited
     * for its copies) */
    for (uint32_t i = 0; i < n; i++) ember_gguf_release(g->uploading, t[i]);
    return s;
}

/* n floats the caller laid out (malloc'ed: freed here) into a span of their own. */
static ember_status upload_floats(ember_gpu_model *g, float *v, size_t n, ember_vk_span *out, ember_err *err)
{
    uint64_t bytes = n * sizeof *v;
    ember_status s = ember_vk_alloc(g->arena, bytes, EMBER_VK_MEM_DEVICE, out, err);
    if (s == EMBER_OK) s = ember_vk_upload(g->vk, out, 0, v, bytes, err);
    ember_free(v);
    return s;
}

/* One f32 row [bq | bk | bv] laid out like a qkv row, zeros for an absent bias: one
 * buffer and one flag instead of three optional ones (a fused attn_qkv.bias is that row
 * already). Nothing when the layer has none. */
static ember_status upload_bias(ember_gpu_model *g, const ember_layer_tensors *lt, ember_vk_span *out,
                                ember_err *err)
{
    if (lt->bqkv) return upload_vector(g, lt->bqkv, out, err);
    if (!lt->bq && !lt->bk && !lt->bv) return EMBER_OK;
    const ember_hparams *hp = &g->hp;
    size_t nq = (size_t)hp->n_heads * hp->head_dim, nkv = (size_t)hp->n_kv_heads * hp->head_dim;
    float *row = ember_calloc(nq + 2 * nkv, sizeof *row);
    if (!row) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    /* ember_llama_load checked each: F32, one value per output row */
    if (lt->bq) memcpy(row, lt->bq->data, nq * sizeof *row);
    if (lt->bk) memcpy(row + nq, lt->bk->data, nkv * sizeof *row);
    if (lt->bv) memcpy(row + nq + nkv, lt->bv->data, nkv * sizeof *row);
    return upload_floats(g, row, nq + 2 * nkv, out, err);
}

/* The QK-norm weights as one f32 span [q_norm | k_norm], what rope_store reads. */
static ember_status upload_qk_norm(ember_gpu_model *g, const ember_layer_tensors *lt, ember_vk_span *out,
                                   ember_err *err)
{
    if (!lt->q_norm) return EMBER_OK;
    uint64_t nq = lt->q_norm->nbytes, nk = lt->k_norm->nbytes;
    ember_status s = ember_vk_alloc(g->arena, nq + nk, EMBER_VK_MEM_DEVICE, out, err);
    if (s == EMBER_OK) s = ember_vk_upload(g->vk, out, 0, lt->q_norm->data, nq, err);
    if (s == EMBER_OK) s = ember_vk_upload(g->vk, out, nq, lt->k_norm->data, nk, err);
    return s;
}

static uint64_t vector_bytes(const ember_gguf_tensor *t) { return t ? t->nbytes : 0; }

/* The matrices one dispatch reads together: Q/K/V (or the fused attn_qkv) and gate/up (or
 * the fused ffn_up). */
typedef struct layer_stacks {
    const ember_gguf_tensor *qkv[3], *gate_up[2];
    uint32_t n_qkv, n_gate_up;
} layer_stacks;

static layer_stacks stacks_of(const ember_layer_tensors *lt)
{
    layer_stacks st = {.qkv = {lt->wqkv ? lt->wqkv : lt->wq, lt->wk, lt->wv}, .n_qkv = lt->wqkv ? 1 : 3,
                       .gate_up = {lt->w_gate ? lt->w_gate : lt->w_up, lt->w_up}, .n_gate_up = lt->w_gate ? 2 : 1};
    return st;
}

static uint64_t layer_bytes(const ember_layer_tensors *lt)
{
    const ember_gguf_tensor *t[EMBER_MAX_LAYER_TENSORS];
    uint32_t n = ember_layer_tensor_list(lt, t);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++) sum += t[i]->nbytes;
    return sum;
}

static ember_status upload_optional(ember_gpu_model *g, const ember_gguf_tensor *t, ember_vk_span *out, ember_err *err)
{
    return t ? upload_vector(g, t, out, err) : EMBER_OK;
}

/* Expert e's slab of a 3-D expert tensor: its matrix, rows = ne[1]. */
static const void *expert_slab(const ember_gguf_tensor *t, uint32_t e)
{
    return (const uint8_t *)t->data + ember_dtype_size(t->type, (uint64_t)e * t->ne[1] * t->ne[0]);
}

/* A mixture's FFN: the router as a plain weight; gate and up of each expert interleaved
 * (expert e's gate rows, then its up rows: one gated dispatch pairs them), and down as
 * the file stacks it; both cut at whole experts. Gate and up must share a type. */
static ember_status upload_experts(ember_gpu_model *g, const ember_layer_tensors *lt, uint64_t max_part,
                                   ember_gpu_layer *gl, ember_err *err)
{
    const ember_gguf_tensor *gt = lt->gate_exps, *ut = lt->up_exps, *dt = lt->down_exps;
    uint32_t E = (uint32_t)gt->ne[2], F = (uint32_t)gt->ne[1];
    if (gt->type != ut->type)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "tensors %s (%s) and %s (%s) differ in type: the grouped "
                          "gate/up product reads one", gt->name, ember_dtype_name(gt->type), ut->name,
                          ember_dtype_name(ut->type));
    ember_status s = upload_stack(g, &lt->ffn_router, 1, true, max_part, &gl->router, err);
    const void **src = ember_malloc(2 * (size_t)E * sizeof *src);
    uint32_t *rows = ember_malloc(2 * (size_t)E * sizeof *rows);
    if (s == EMBER_OK && (!src || !rows)) s = ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t e = 0; s == EMBER_OK && e < E; e++) {
        src[2 * e] = expert_slab(gt, e), src[2 * e + 1] = expert_slab(ut, e);
        rows[2 * e] = rows[2 * e + 1] = F;
    }
    if (s == EMBER_OK)
        s = ember_gpu_weight_upload_experts(g->vk, g->arena, gt->type, (uint32_t)gt->ne[0], src, rows, 2 * E, 2 * F,
                                            max_part, &gl->gate_up_exps, err);
    if (s == EMBER_OK) {
        src[0] = dt->data, rows[0] = (uint32_t)(dt->ne[1] * dt->ne[2]);
        s = ember_gpu_weight_upload_experts(g->vk, g->arena, dt->type, (uint32_t)dt->ne[0], src, rows, 1,
                                            (uint32_t)dt->ne[1], max_part, &gl->down_exps, err);
    }
    if (s != EMBER_OK) ember_fail_ctx(err, s, "uploading the experts of %s", gt->name);
    ember_free(src);
    ember_free(rows);
    ember_gguf_release(g->uploading, gt);
    ember_gguf_release(g->uploading, ut);
    ember_gguf_release(g->uploading, dt);
    return s;
}

/* The gate and up biases of every expert as one f32 span in the gate|up stack's row order:
 * expert e's F gate biases, then its F up biases. Nothing without them. */
static ember_status upload_gate_up_bias(ember_gpu_model *g, const ember_layer_tensors *lt, ember_vk_span *out,
                                        ember_err *err)
{
    if (!lt->gate_exps_b) return EMBER_OK;
    size_t F = (size_t)lt->gate_exps_b->ne[0], E = (size_t)lt->gate_exps_b->ne[1];
    float *rows = ember_malloc(2 * F * E * sizeof *rows);
    if (!rows) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    const float *gb = lt->gate_exps_b->data, *ub = lt->up_exps_b->data;
    for (size_t e = 0; e < E; e++) {
        memcpy(rows + 2 * F * e, gb + F * e, F * sizeof *rows);
        memcpy(rows + 2 * F * e + F, ub + F * e, F * sizeof *rows);
    }
    return upload_floats(g, rows, 2 * F * E, out, err);
}

/* gpt-oss's vectors: wo's bias, the sinks, the router's and the experts' biases. */
static ember_status upload_oai(ember_gpu_model *g, const ember_layer_tensors *lt, ember_gpu_layer *gl,
                               ember_err *err)
{
    ember_status s = upload_optional(g, lt->bo, &gl->bo, err);
    if (s == EMBER_OK) s = upload_optional(g, lt->sinks, &gl->sinks, err);
    if (s == EMBER_OK) s = upload_optional(g, lt->router_b, &gl->router_b, err);
    if (s == EMBER_OK) s = upload_gate_up_bias(g, lt, &gl->gate_up_exps_b, err);
    if (s == EMBER_OK) s = upload_optional(g, lt->down_exps_b, &gl->down_exps_b, err);
    return s;
}

/* In upload_sizes' order. */
static ember_status upload_layer(ember_gpu_model *g, const ember_layer_tensors *lt, uint64_t max_part,
                                 ember_gpu_layer *gl, ember_err *err)
{
    layer_stacks st = stacks_of(lt);
    ember_status s = upload_optional(g, lt->attn_norm, &gl->attn_norm, err);
    if (s == EMBER_OK) s = upload_optional(g, lt->ffn_norm, &gl->ffn_norm, err);
    if (s == EMBER_OK) s = upload_bias(g, lt, &gl->bias_qkv, err);
    if (s == EMBER_OK) s = upload_qk_norm(g, lt, &gl->qk_norm, err);
    if (s == EMBER_OK) s = upload_optional(g, lt->attn_post_norm, &gl->attn_post_norm, err);
    if (s == EMBER_OK) s = upload_optional(g, lt->ffn_post_norm, &gl->ffn_post_norm, err);
    if (s == EMBER_OK) s = upload_oai(g, lt, gl, err);
    if (s == EMBER_OK) s = upload_stack(g, st.qkv, st.n_qkv, false, max_part, &gl->qkv, err);
    if (s == EMBER_OK) s = upload_stack(g, &lt->wo, 1, true, max_part, &gl->wo, err);
    if (lt->ffn_router) return s == EMBER_OK ? upload_experts(g, lt, max_part, gl, err) : s;
    if (s == EMBER_OK) s = upload_stack(g, st.gate_up, st.n_gate_up, true, max_part, &gl->gate_up, err);
    if (s == EMBER_OK) s = upload_stack(g, &lt->w_down, 1, true, max_part, &gl->down, err);
    return s;
}

/* ---- the bytes upload() allocates, known before it does ---- */

static uint64_t stack_bytes(const ember_gguf_tensor *const *t, uint32_t n)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += ember_gpu_weight_bytes(t[i]->type, t[i]->ne[1] * t[i]->ne[2], (uint32_t)t[i]->ne[0]);
    return sum;
}

/* The bytes of upload()'s allocations, in its order (a stack's parts as one): listed into
 * out when it is not NULL, counted and summed. */
typedef struct size_list {
    uint64_t *out;
    uint32_t n;
    uint64_t sum, experts; /* experts: of sum, a mixture's expert stacks */
} size_list;

static void put(size_list *l, uint64_t bytes)
{
    if (l->out) l->out[l->n] = bytes;
    l->n++;
    l->sum += bytes;
}

/* put() for a vector the layer may not have. */
static void put_optional(size_list *l, uint64_t bytes)
{
    if (bytes) put(l, bytes);
}

static void layer_sizes(const ember_hparams *hp, const ember_layer_tensors *lt, size_list *l)
{
    layer_stacks st = stacks_of(lt);
    bool bias = lt->bq || lt->bk || lt->bv || lt->bqkv;
    put_optional(l, vector_bytes(lt->attn_norm));
    put_optional(l, vector_bytes(lt->ffn_norm));
    put_optional(l, bias ? (uint64_t)(hp->n_heads + 2 * hp->n_kv_heads) * hp->head_dim * 4 : 0);
    put_optional(l, vector_bytes(lt->q_norm) + vector_bytes(lt->k_norm));
    put_optional(l, vector_bytes(lt->attn_post_norm));
    put_optional(l, vector_bytes(lt->ffn_post_norm));
    put_optional(l, vector_bytes(lt->bo));
    put_optional(l, vector_bytes(lt->sinks));
    put_optional(l, vector_bytes(lt->router_b));
    put_optional(l, 2 * vector_bytes(lt->gate_exps_b));
    put_optional(l, vector_bytes(lt->down_exps_b));
    put(l, stack_bytes(st.qkv, st.n_qkv));
    put(l, stack_bytes(&lt->wo, 1));
    if (lt->ffn_router) {
        put(l, stack_bytes(&lt->ffn_router, 1));
        const ember_gguf_tensor *gate_up[2] = {lt->gate_exps, lt->up_exps};
        uint64_t e = l->sum;
        put(l, stack_bytes(gate_up, 2));
        put(l, stack_bytes(&lt->down_exps, 1));
        l->experts += l->sum - e;
        return;
    }
    put(l, stack_bytes(st.gate_up, st.n_gate_up));
    put(l, stack_bytes(&lt->w_down, 1));
}

static void upload_sizes(const ember_llama *m, size_list *l)
{
    put(l, stack_bytes(&m->tok_embd, 1));
    put(l, m->output_norm->nbytes);
    if (m->rope_freqs) put(l, m->rope_freqs->nbytes);
    if (m->output != m->tok_embd) put(l, stack_bytes(&m->output, 1));
    for (uint32_t i = 0; i < m->hp.n_layers; i++) layer_sizes(&m->hp, &m->layers[i], l);
}

uint64_t ember_gpu_model_bytes(const ember_llama *m)
{
    size_list l = {0};
    upload_sizes(m, &l);
    return l.sum;
}

uint64_t ember_gpu_model_expert_bytes(const ember_llama *m)
{
    size_list l = {0};
    upload_sizes(m, &l);
    return l.experts;
}

/* Chunks of just the weights' size before they are uploaded; a stack cut into parts
 * rounds each part to 16 bytes, so a stack is given room for that. */
static ember_status reserve_weights(ember_gpu_model *g, const ember_llama *m, ember_err *err)
{
    size_list l = {0};
    upload_sizes(m, &l);
    l.out = ember_malloc(l.n * sizeof *l.out);
    if (!l.out) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    l.n = 0;
    upload_sizes(m, &l);
    for (uint32_t i = 0; i < l.n; i++) l.out[i] += 16 * EMBER_MAX_WEIGHT_PARTS;
    ember_status s = ember_vk_arena_reserve(g->arena, l.out, l.n, EMBER_VK_MEM_DEVICE, err);
    ember_free(l.out);
    return s;
}

static void report(const ember_progress *p, uint64_t done, uint64_t total)
{
    if (p && p->fn) p->fn(p->user, total ? (float)((double)done / (double)total) : 1.0f);
}

/* The pipelines of every dispatch but attention's, known once the weights (and their
 * views) are on the device. */
static ember_status make_pipelines(ember_gpu_model *g, ember_err *err)
{
    ember_kernels_set want = {{0}};
    ember_kernels_want_rows(g->kernels, &want);
    ember_kernels_want_linear(g->kernels, &g->output, false, &want);
    for (uint32_t l = 0; l < g->hp.n_layers; l++) {
        const ember_gpu_layer *L = &g->layers[l];
        /* QKV and gate/up follow an RMSNorm: fused where the kernels can (forward.c);
         * without pre-norms they read x as it is. */
        const ember_gpu_weight *w[] = {&L->qkv, &L->wo, &L->gate_up, &L->down};
        bool pre = L->attn_norm.size != 0;
        for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
            ember_kernels_want_linear(g->kernels, w[i],
                                      pre && i % 2 == 0 && ember_k_linear_can_norm(g->kernels, w[i]), &want);
        if (!L->router.n_parts) continue;
        ember_kernels_want_linear(g->kernels, &L->router, false, &want);
        ember_kernels_want_moe(g->kernels, &L->gate_up_exps, &want);
        ember_kernels_want_moe(g->kernels, &L->down_exps, &want);
    }
    return ember_kernels_make(g->kernels, &want, err);
}

static ember_status upload(ember_gpu_model *g, const ember_llama *m, const ember_gpu_model_opts *o, ember_err *err)
{
    uint64_t max_part_bytes = o->max_part_bytes;
    ember_status s = upload_stack(g, &m->tok_embd, 1, true, max_part_bytes, &g->tok_embd, err);
    if (s == EMBER_OK) s = upload_vector(g, m->output_norm, &g->output_norm, err);
    if (s == EMBER_OK && m->rope_freqs) s = upload_vector(g, m->rope_freqs, &g->rope_freqs, err);
    if (s == EMBER_OK) {
        if (m->output == m->tok_embd) g->output = g->tok_embd;
        else s = upload_stack(g, &m->output, 1, true, max_part_bytes, &g->output, err);
    }
    uint64_t total = m->tok_embd->nbytes + (m->output != m->tok_embd ? m->output->nbytes : 0), done = total;
    for (uint32_t l = 0; l < m->hp.n_layers; l++) total += layer_bytes(&m->layers[l]);
    report(&o->progress, done, total);
    for (uint32_t l = 0; s == EMBER_OK && l < m->hp.n_layers; l++) {
        s = upload_layer(g, &m->layers[l], max_part_bytes, &g->layers[l], err);
        done += layer_bytes(&m->layers[l]);
        report(&o->progress, done, total);
    }
    return s;
}

ember_status ember_gpu_model_create_opts(ember_vk *vk, const ember_llama *m, const ember_gpu_model_opts *o,
                                         ember_gpu_model **out, ember_err *err)
{
    *out = NULL;
    ember_gpu_model *g = ember_calloc(1, sizeof *g);
    if (!g) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    g->vk = vk;
    g->hp = m->hp;
    g->layers = ember_calloc(m->hp.n_layers, sizeof *g->layers);
    ember_kernels_opts ko = {.on_demand = true, .pipeline_cache_dir = o->pipeline_cache_dir,
                             .norm_fusion = o->norm_fusion, .attn_split = o->attn_split, .attn_chunk = o->attn_chunk,
                             .linear_lanes = o->linear_lanes, .int_dot = o->int_dot, .fp16_dot = o->fp16_dot,
                             .linear_stage = o->linear_stage, .matrix = o->matrix,
                             .coop = o->coop};
    ember_status s = g->layers ? EMBER_OK : ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    if (s == EMBER_OK) s = ember_kernels_create_opts(vk, &ko, &g->kernels, err);
    if (s == EMBER_OK) s = ember_vk_arena_create(vk, &g->arena, err);
    g->uploading = o->file;
    if (s == EMBER_OK) s = reserve_weights(g, m, err);
    if (s == EMBER_OK) s = upload(g, m, o, err);
    g->uploading = NULL;
    if (s == EMBER_OK) s = make_pipelines(g, err);
    if (s != EMBER_OK) {
        ember_gpu_model_free(g);
        return s;
    }
    *out = g;
    return EMBER_OK;
}

ember_status ember_gpu_model_create(ember_vk *vk, const ember_llama *m, uint64_t max_part_bytes,
                                    const ember_progress *progress, ember_gpu_model **out, ember_err *err)
{
    ember_gpu_model_opts o = {.max_part_bytes = max_part_bytes};
    if (progress) o.progress = *progress;
    return ember_gpu_model_create_opts(vk, m, &o, out, err);
}

void ember_gpu_model_free(ember_gpu_model *g)
{
    if (!g) return;
    ember_vk_arena_destroy(g->arena);
    ember_kernels_destroy(g->kernels);
    ember_free(g->layers);
    ember_free(g);
}
