/* reference.c — the plain-C forward pass of every family of arch.h (llama2.c style),
 * following the recipe of the model's description (docs/models.md): pre- and post-norms,
 * Q/K/V fused or split with optional biases, QK-norm, normal or NeoX RoPE with frequency
 * factors, linear or YaRN scaling, NoPE and sliding-window layers, soft-capped attention
 * and logits, SwiGLU or GeGLU, and the families' scales.
 *
 * This is the oracle the GPU path is tested against, so it is written to be obviously
 * right rather than fast: one token at a time, plain loops, dot products and norms
 * accumulated in double, weights of any type dequantized on the fly (quant.c).
 *
 * K and V live in blocks, as on the GPU: block b holds, per layer, block_size positions
 * of kv_dim values ([n_blocks][n_layers][block_size][kv_dim]), and a token reaches the
 * positions of its sequence through a block table. The single-sequence cache of
 * ember_ref_create is one block of ctx_len positions. */
#include "common/alloc.h"
#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/quant.h"

struct ember_ref {
    const ember_llama *m;
    uint32_t q_dim, kv_dim;  /* n_heads * head_dim, n_kv_heads * head_dim */
    float *x;                /* residual stream (dim) */
    float *xn;               /* normed input of a block (dim) */
    float *qkv;              /* projections of the current token: q | k | v */
    float *q, *k, *v;        /* ... each, inside qkv */
    float *att_out;          /* attention output before wo (q_dim) */
    float *ffn;              /* FFN hidden: gate | up (2 * ffn_dim, or 2 * expert_ffn) */
    float *router;           /* a mixture's router logits, then probabilities (n_expert) */
    float *moe;              /* the weighted sum of the experts' outputs (dim) */
    float *proj;             /* output of wo / w_down before the residual add (dim) */
    float *scores;           /* attention scores over positions (ctx_len) */
    float *row;              /* one row of logits (n_vocab), for argmax */
    uint32_t n_blocks, block_size, max_blocks_per_seq;
    float *key_cache;        /* [n_blocks][n_layers][block_size][kv_dim] */
    float *value_cache;
    const uint32_t *table;   /* the block table of the token being computed */
    uint32_t *picks;         /* ember_ref_keep_picks: [layer][cap rows][k] experts, or NULL */
    uint32_t picks_cap, pick_row; /* its rows a layer; the computed token's row in its call */
};

/* The block table of the single-sequence cache: its one block. */
static const uint32_t ONE_BLOCK[1] = {0};

/* ---- building blocks ------------------------------------------------------------- */

static size_t cache_index(const ember_ref *r, uint32_t layer, uint32_t pos)
{
    size_t block = r->table[pos / r->block_size], slot = pos % r->block_size;
    return ((block * r->m->hp.n_layers + layer) * r->block_size + slot) * r->kv_dim;
}

/* y = W x for a weight tensor with ne = {n, rows}. */
static void matvec(const ember_gguf_tensor *w, const float *x, float *y)
{
    ember_matvec_host(w->type, w->data, x, y, (size_t)w->ne[1], (size_t)w->ne[0]);
}

/* out = x / sqrt(mean(x^2) + eps) * w over n values (out may be x). */
static void rmsnorm(float *out, const float *x, const ember_gguf_tensor *w, uint32_t n, float eps)
{
    const float *weight = w->data; /* norm weights are F32 (checked by ember_llama_load) */
    double ss = 0.0;
    for (uint32_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    double scale = 1.0 / sqrt(ss / n + eps);
    for (uint32_t i = 0; i < n; i++)
        out[i] = (float)(x[i] * scale * weight[i]);
}

/* The angle of rotation pair i at position pos for a layer (model.h):
 *   extrap = pos * base^(-2i/rope_dim) / freq_factor[i],  interp = extrap * pos_scale,
 * and with YaRN the two blended by the ramp over pair indices (ggml's rope_yarn). */
static double rope_theta(const ember_llama *m, const ember_layer_attn *at, uint32_t pos, uint32_t i)
{
    const ember_hparams *hp = &m->hp;
    double extrap = pos * pow((double)at->rope_base, -2.0 * i / hp->rope_dim);
    if (m->rope_freqs) /* F32, rope_dim/2 positive values (checked by ember_llama_load) */
        extrap /= ((const float *)m->rope_freqs->data)[i];
    double interp = extrap * at->pos_scale;
    if (at->ext_factor == 0) return interp;
    double y = (i - at->corr_lo) / fmax(0.001, at->corr_hi - at->corr_lo);
    double mix = (1.0 - fmin(1.0, fmax(0.0, y))) * at->ext_factor;
    return interp * (1.0 - mix) + extrap * mix;
}

/* Rotates rope_dim/2 pairs of each head; the rest of each head is left alone. Pair i is
 * (2i, 2i+1) in the normal style, (i, i + rope_dim/2) in the NeoX style: the same
 * rotation applied to a permutation of the head's elements. cos and sin are scaled by the
 * layer's mscale (YaRN, LongRoPE). */
static void rope(float *vec, uint32_t n_heads, const ember_llama *m, const ember_layer_attn *at, uint32_t pos)
{
    const ember_hparams *hp = &m->hp;
    uint32_t half = hp->rope_dim / 2;
    bool neox = hp->rope_style == EMBER_ROPE_NEOX;
    for (uint32_t h = 0; h < n_heads; h++) {
        float *head = vec + (size_t)h * hp->head_dim;
        for (uint32_t i = 0; i < half; i++) {
            double theta = rope_theta(m, at, pos, i);
            double c = cos(theta) * at->mscale, s = sin(theta) * at->mscale;
            float *a = neox ? &head[i] : &head[2 * i];
            float *b = neox ? &head[i + half] : &head[2 * i + 1];
            double x = *a, y = *b;
            *a = (float)(x * c - y * s);
            *b = (float)(x * s + y * c);
        }
    }
}

/* y += b for an optional F32 bias of y's length (checked by ember_llama_load). */
static void add_bias(float *y, const ember_gguf_tensor *b)
{
    if (!b)
        return;
    const float *v = b->data;
    for (uint64_t i = 0; i < b->ne[0]; i++)
        y[i] += v[i];
}

/* Softmax of x[0..n) with one more logit, sink, in the denominator (gpt-oss's attention
 * sinks, as ggml's soft_max takes them; -INFINITY: none, a plain softmax). */
static void softmax_sink(float *x, uint32_t n, float sink)
{
    double max = sink;
    for (uint32_t i = 0; i < n; i++)
        if (x[i] > max)
            max = x[i];
    double sum = exp((double)sink - max);
    for (uint32_t i = 0; i < n; i++)
        sum += exp((double)x[i] - max);
    for (uint32_t i = 0; i < n; i++)
        x[i] = (float)(exp((double)x[i] - max) / sum);
}

static void softmax(float *x, uint32_t n) { softmax_sink(x, n, -INFINITY); }

/* c tanh(x / c): the soft cap of gemma2's attention and final logits (c > 0). */
static double softcap(double x, float c) { return c > 0 ? c * tanh(x / c) : x; }

static float silu(float x) { return (float)(x / (1.0 + exp(-(double)x))); }

/* gpt-oss's clamped SwiGLU of one gate and up value (hyperparams.h). */
static float swiglu_oai(float gate, float up)
{
    double g = fmin(gate, EMBER_SWIGLU_OAI_LIMIT), u = fmax(fmin(up, EMBER_SWIGLU_OAI_LIMIT), -EMBER_SWIGLU_OAI_LIMIT);
    return (float)(g / (1.0 + exp(-(double)EMBER_SWIGLU_OAI_ALPHA * g)) * (u + 1.0));
}

/* GELU by its tanh approximation (ggml_gelu, PyTorch's approximate="tanh"). */
static float gelu_tanh(float x)
{
    double v = x;
    return (float)(0.5 * v * (1.0 + tanh(0.7978845608028654 * v * (1.0 + 0.044715 * v * v))));
}

/* x += s * y over n values (s = the family's residual scale, 1 without). */
static void residual_add(float *x, const float *y, uint32_t n, float s)
{
    for (uint32_t i = 0; i < n; i++)
        x[i] += s > 0 ? s * y[i] : y[i];
}

/* ---- one layer ------------------------------------------------------------------- */

/* Causal attention of the current token (at pos, its K/V already cached) over positions
 * 0..pos, or the last `window` of them on a local layer. Query head h reads KV head
 * h / (n_heads / n_kv_heads). */
static void attention(ember_ref *r, uint32_t layer, uint32_t pos, uint32_t window)
{
    const ember_hparams *hp = &r->m->hp;
    const float *sinks = r->m->layers[layer].sinks ? r->m->layers[layer].sinks->data : NULL;
    uint32_t group = hp->n_heads / hp->n_kv_heads, lo = window && pos + 1 > window ? pos + 1 - window : 0;
    double scale = ember_attn_scale(hp);
    for (uint32_t h = 0; h < hp->n_heads; h++) {
        const float *q = r->q + (size_t)h * hp->head_dim;
        size_t kv_off = (size_t)(h / group) * hp->head_dim;
        for (uint32_t t = lo; t <= pos; t++) {
            const float *k = r->key_cache + cache_index(r, layer, t) + kv_off;
            double dot = 0.0;
            for (uint32_t i = 0; i < hp->head_dim; i++)
                dot += (double)q[i] * k[i];
            r->scores[t - lo] = (float)softcap(dot * scale, hp->attn_softcap);
        }
        softmax_sink(r->scores, pos + 1 - lo, sinks ? sinks[h] : -INFINITY);
        float *out = r->att_out + (size_t)h * hp->head_dim;
        for (uint32_t i = 0; i < hp->head_dim; i++) {
            double acc = 0.0;
            for (uint32_t t = lo; t <= pos; t++)
                acc += (double)r->scores[t - lo] * r->value_cache[cache_index(r, layer, t) + kv_off + i];
            out[i] = (float)acc;
        }
    }
}

/* q, k, v = the projections of the block's input, biases added. */
static void project_qkv(ember_ref *r, const ember_layer_tensors *L, const float *in)
{
    if (L->wqkv) {
        matvec(L->wqkv, in, r->qkv);
        add_bias(r->qkv, L->bqkv);
        return;
    }
    matvec(L->wq, in, r->q);
    matvec(L->wk, in, r->k);
    matvec(L->wv, in, r->v);
    add_bias(r->q, L->bq);
    add_bias(r->k, L->bk);
    add_bias(r->v, L->bv);
}

/* QK-norm: each head of q and k over head_dim, or each projection as a whole. */
static void qk_norm(ember_ref *r, const ember_layer_tensors *L)
{
    const ember_hparams *hp = &r->m->hp;
    if (hp->qk_norm == EMBER_QK_NORM_FULL) {
        rmsnorm(r->q, r->q, L->q_norm, r->q_dim, hp->rms_eps);
        rmsnorm(r->k, r->k, L->k_norm, r->kv_dim, hp->rms_eps);
    } else if (hp->qk_norm == EMBER_QK_NORM_HEAD) {
        for (uint32_t h = 0; h < hp->n_heads; h++)
            rmsnorm(r->q + (size_t)h * hp->head_dim, r->q + (size_t)h * hp->head_dim, L->q_norm, hp->head_dim,
                    hp->rms_eps);
        for (uint32_t h = 0; h < hp->n_kv_heads; h++)
            rmsnorm(r->k + (size_t)h * hp->head_dim, r->k + (size_t)h * hp->head_dim, L->k_norm, hp->head_dim,
                    hp->rms_eps);
    }
}

/* The block's input: x normalised by its pre-norm, or x itself where the family has none. */
static const float *block_input(ember_ref *r, const ember_gguf_tensor *norm)
{
    if (!norm) return r->x;
    rmsnorm(r->xn, r->x, norm, r->m->hp.dim, r->m->hp.rms_eps);
    return r->xn;
}

/* proj through the post-norm where the family has one, then into the residual. */
static void block_output(ember_ref *r, const ember_gguf_tensor *post_norm)
{
    const ember_hparams *hp = &r->m->hp;
    if (post_norm) rmsnorm(r->proj, r->proj, post_norm, hp->dim, hp->rms_eps);
    residual_add(r->x, r->proj, hp->dim, hp->residual_scale);
}

static void attention_block(ember_ref *r, uint32_t layer, uint32_t pos)
{
    const ember_hparams *hp = &r->m->hp;
    const ember_layer_tensors *L = &r->m->layers[layer];
    ember_layer_attn at;
    ember_layer_attn_of(hp, layer, &at);
    project_qkv(r, L, block_input(r, L->attn_norm));
    qk_norm(r, L);
    if (at.rope) {
        rope(r->q, hp->n_heads, r->m, &at, pos);
        rope(r->k, hp->n_kv_heads, r->m, &at, pos);
    }
    float temp = ember_attn_temp(hp, pos);
    for (uint32_t i = 0; temp != 1.0f && i < r->q_dim; i++) r->q[i] *= temp;
    memcpy(r->key_cache + cache_index(r, layer, pos), r->k, r->kv_dim * sizeof(float));
    memcpy(r->value_cache + cache_index(r, layer, pos), r->v, r->kv_dim * sizeof(float));
    attention(r, layer, pos, at.window);
    matvec(L->wo, r->att_out, r->proj);
    add_bias(r->proj, L->bo);
    block_output(r, L->attn_post_norm);
}

static void moe_ffn(ember_ref *r, uint32_t layer, const float *in);

/* The gated FFN's act(gate) * up for the family's activation. */
static float glu(ember_ffn_act act, float gate, float up)
{
    if (act == EMBER_FFN_SWIGLU_OAI) return swiglu_oai(gate, up);
    return (act == EMBER_FFN_GELU_TANH ? gelu_tanh(gate) : silu(gate)) * up;
}

/* x += down(act(gate(xn)) * up(xn)); gate and up from one fused matrix where the family
 * has one (phi3: its first ffn_dim rows are the gate's). */
static void ffn_block(ember_ref *r, uint32_t layer)
{
    const ember_hparams *hp = &r->m->hp;
    const ember_layer_tensors *L = &r->m->layers[layer];
    const float *in = block_input(r, L->ffn_norm);
    float *gate = r->ffn, *up = r->ffn + hp->ffn_dim;
    if (L->ffn_router) {
        moe_ffn(r, layer, in);
        block_output(r, L->ffn_post_norm);
        return;
    }
    if (L->w_gate) {
        matvec(L->w_gate, in, gate);
        matvec(L->w_up, in, up);
    } else {
        matvec(L->w_up, in, r->ffn);
    }
    for (uint32_t i = 0; i < hp->ffn_dim; i++) gate[i] = glu(hp->act, gate[i], up[i]);
    matvec(L->w_down, gate, r->proj);
    block_output(r, L->ffn_post_norm);
}

/* ---- a mixture of experts --------------------------------------------------------- */

/* The top k of v[0..n) into ids, largest first, the lower index first among equal values
 * (the rule both backends keep). */
static void top_k(const float *v, uint32_t n, uint32_t k, uint32_t *ids)
{
    for (uint32_t j = 0; j < k; j++) {
        uint32_t best = UINT32_MAX;
        for (uint32_t e = 0; e < n; e++) {
            bool taken = false;
            for (uint32_t i = 0; i < j; i++) taken |= ids[i] == e;
            if (!taken && (best == UINT32_MAX || v[e] > v[best])) best = e;
        }
        ids[j] = best;
    }
}

/* The k experts token's router logits pick and their weights (hparams.h's gating): the
 * top k logits; SOFTMAX: their probabilities over every expert, divided by their sum
 * (clamped at 2^-14, as llama.cpp) where expert_norm; SOFTMAX_WEIGHT: the top k logits,
 * softmax over those k. Then times expert_scale. */
static void route(const ember_hparams *hp, float *logits, uint32_t *ids, float *w)
{
    uint32_t k = hp->n_expert_used;
    top_k(logits, hp->n_expert, k, ids); /* on the logits: the probabilities' order, without their roundings */
    if (hp->expert_gating == EMBER_GATING_SOFTMAX) softmax(logits, hp->n_expert);
    for (uint32_t j = 0; j < k; j++) w[j] = logits[ids[j]];
    if (hp->expert_gating == EMBER_GATING_SOFTMAX_WEIGHT) softmax(w, k);
    double sum = 0;
    for (uint32_t j = 0; j < k; j++) sum += w[j];
    for (uint32_t j = 0; hp->expert_norm && j < k; j++) w[j] = (float)(w[j] / fmax(sum, 6.103515625e-5));
    for (uint32_t j = 0; hp->expert_scale > 0 && j < k; j++) w[j] *= hp->expert_scale;
}

/* Expert e's matrix of a 3-D expert tensor {cols, rows, n_expert}: y = W_e x. */
static void expert_matvec(const ember_gguf_tensor *t, uint32_t e, const float *x, float *y)
{
    size_t rows = (size_t)t->ne[1], cols = (size_t)t->ne[0];
    const uint8_t *slab = (const uint8_t *)t->data + ember_dtype_size(t->type, (uint64_t)e * rows * cols);
    ember_matvec_host(t->type, slab, x, y, rows, cols);
}

/* Row e of a per-expert bias {n, n_expert} added to y (nothing without one). */
static void add_expert_bias(float *y, const ember_gguf_tensor *b, uint32_t e)
{
    const float *v = b ? (const float *)b->data + (size_t)e * b->ne[0] : NULL;
    for (uint64_t i = 0; v && i < b->ne[0]; i++) y[i] += v[i];
}

/* proj = sum over the token's k experts of weight * down_e(glu(gate_e(in), up_e(in))),
 * in the order the router ranked them (each product plus its expert's bias, where the
 * family has them). */
static void moe_ffn(ember_ref *r, uint32_t layer, const float *in)
{
    const ember_hparams *hp = &r->m->hp;
    const ember_layer_tensors *L = &r->m->layers[layer];
    uint32_t ids[EMBER_MAX_EXPERTS_USED], F = hp->expert_ffn, k = hp->n_expert_used;
    float w[EMBER_MAX_EXPERTS_USED];
    matvec(L->ffn_router, in, r->router);
    add_bias(r->router, L->router_b);
    route(hp, r->router, ids, w);
    if (r->picks && r->pick_row < r->picks_cap)
        memcpy(r->picks + ((size_t)layer * r->picks_cap + r->pick_row) * k, ids, k * sizeof *ids);
    float *gate = r->ffn, *up = r->ffn + F;
    memset(r->moe, 0, hp->dim * sizeof *r->moe);
    for (uint32_t j = 0; j < hp->n_expert_used; j++) {
        expert_matvec(L->gate_exps, ids[j], in, gate);
        expert_matvec(L->up_exps, ids[j], in, up);
        add_expert_bias(gate, L->gate_exps_b, ids[j]);
        add_expert_bias(up, L->up_exps_b, ids[j]);
        for (uint32_t i = 0; i < F; i++) gate[i] = glu(hp->act, gate[i], up[i]);
        expert_matvec(L->down_exps, ids[j], gate, r->proj);
        add_expert_bias(r->proj, L->down_exps_b, ids[j]);
        for (uint32_t i = 0; i < hp->dim; i++) r->moe[i] += w[j] * r->proj[i];
    }
    memcpy(r->proj, r->moe, hp->dim * sizeof *r->proj);
}

/* ---- the whole pass -------------------------------------------------------------- */

static void embed(ember_ref *r, uint32_t token)
{
    const ember_gguf_tensor *e = r->m->tok_embd;
    const ember_hparams *hp = &r->m->hp;
    ember_dequantize_span(e->type, e->data, (uint64_t)token * hp->dim, hp->dim, r->x);
    for (uint32_t i = 0; hp->embed_scale > 0 && i < hp->dim; i++) r->x[i] *= hp->embed_scale;
}

static void lm_head(ember_ref *r, float *logits)
{
    const ember_hparams *hp = &r->m->hp;
    rmsnorm(r->xn, r->x, r->m->output_norm, hp->dim, hp->rms_eps);
    const ember_gguf_tensor *out = r->m->output;
    ember_matvec_host(out->type, out->data, r->xn, logits, hp->n_vocab, hp->dim);
    if (!(hp->logit_scale > 0) && !(hp->final_softcap > 0)) return;
    for (uint32_t j = 0; j < hp->n_vocab; j++) {
        double v = hp->logit_scale > 0 ? (double)logits[j] * hp->logit_scale : logits[j];
        logits[j] = (float)softcap(v, hp->final_softcap);
    }
}

/* One token through every layer, its K/V stored at pos through r->table. */
static void token_pass(ember_ref *r, uint32_t token, uint32_t pos)
{
    embed(r, token);
    for (uint32_t l = 0; l < r->m->hp.n_layers; l++) {
        attention_block(r, l, pos);
        ffn_block(r, l);
    }
}

ember_status ember_ref_forward(ember_ref *r, const uint32_t *tokens, uint32_t n, uint32_t pos0,
                               float *logits, int all_logits, ember_err *err)
{
    const ember_hparams *hp = &r->m->hp;
    if (n == 0)
        return EMBER_OK;
    if (r->n_blocks != 1 || r->block_size != hp->ctx_len)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "reference: a paged cache runs batches (ember_ref_run)");
    if (pos0 > hp->ctx_len || n > hp->ctx_len - pos0)
        return ember_fail(err, EMBER_ERR_CONTEXT_FULL,
                          "positions %u..%u do not fit the context of %u tokens", pos0,
                          pos0 + n - 1, hp->ctx_len);
    for (uint32_t i = 0; i < n; i++)
        if (tokens[i] >= hp->n_vocab)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "token %u is not below the vocabulary "
                              "size %u", tokens[i], hp->n_vocab);
    r->table = ONE_BLOCK;
    for (uint32_t i = 0; i < n; i++) {
        r->pick_row = i;
        token_pass(r, tokens[i], pos0 + i);
        if (logits && all_logits)
            lm_head(r, logits + (size_t)i * hp->n_vocab);
        else if (logits && i == n - 1)
            lm_head(r, logits);
    }
    return EMBER_OK;
}

/* ---- a ragged batch over the paged cache ------------------------------------------ */

static uint32_t argmax_of(const float *row, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t j = 1; j < n; j++)
        if (row[j] > row[best])
            best = j;
    return best;
}

/* Token i's place in the batch is valid: a known token, inside the context, and every
 * block its positions reach is in the pool. */
static ember_status check_row(const ember_ref *r, const ember_batch *b, uint32_t i, ember_err *err)
{
    const ember_hparams *hp = &r->m->hp;
    uint32_t pos = b->pos[i], last_block = pos / r->block_size;
    if (b->tokens[i] >= hp->n_vocab)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "token %u is not below the vocabulary size %u",
                          b->tokens[i], hp->n_vocab);
    if (pos >= hp->ctx_len || last_block >= r->max_blocks_per_seq)
        return ember_fail(err, EMBER_ERR_CONTEXT_FULL, "position %u is past the context of %u tokens",
                          pos, hp->ctx_len);
    const uint32_t *table = b->block_tables + (size_t)b->seq[i] * r->max_blocks_per_seq;
    for (uint32_t j = 0; j <= last_block; j++)
        if (table[j] >= r->n_blocks)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "block %u is outside the pool of %u", table[j],
                              r->n_blocks);
    return EMBER_OK;
}

/* The rows of b->hidden_rows equal to i get row i's final norm (r->x is its state). */
static void give_hidden(ember_ref *r, const ember_batch *b, uint32_t i, float *hidden)
{
    const ember_hparams *hp = &r->m->hp;
    for (uint32_t j = 0; hidden && j < b->n_hidden; j++)
        if (b->hidden_rows[j] == i) rmsnorm(hidden + (size_t)j * hp->dim, r->x, r->m->output_norm, hp->dim, hp->rms_eps);
}

ember_status ember_ref_run(ember_ref *r, const ember_batch *b, float *logits, uint32_t *argmax, float *hidden,
                           ember_err *err)
{
    uint32_t V = r->m->hp.n_vocab;
    for (uint32_t i = 0; i < b->n_tokens; i++) {
        ember_status s = check_row(r, b, i, err);
        if (s != EMBER_OK)
            return s;
        r->table = b->block_tables + (size_t)b->seq[i] * r->max_blocks_per_seq;
        r->pick_row = i;
        token_pass(r, b->tokens[i], b->pos[i]);
        give_hidden(r, b, i, hidden);
        for (uint32_t j = 0; j < b->n_logits; j++) {
            if (b->logit_rows[j] != i)
                continue;
            lm_head(r, r->row);
            if (logits)
                memcpy(logits + (size_t)j * V, r->row, V * sizeof *r->row);
            if (argmax)
                argmax[j] = argmax_of(r->row, V);
        }
    }
    return EMBER_OK;
}

ember_status ember_ref_transfer_kv(ember_ref *r, const uint32_t *blocks, uint32_t p0, uint32_t p1, uint8_t *rows,
                                   uint32_t rows_pos, bool write, ember_err *err)
{
    const ember_hparams *hp = &r->m->hp;
    size_t rb = hp->head_dim * sizeof(float);
    if (p1 > rows_pos) return ember_fail(err, EMBER_ERR_INVALID_ARG, "K/V positions %u..%u of %u", p0, p1, rows_pos);
    for (uint32_t p = p0; p < p1; p++)
        if (blocks[p / r->block_size] >= r->n_blocks)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "KV block %u of %u", blocks[p / r->block_size], r->n_blocks);
    r->table = blocks;
    for (uint32_t l = 0; l < hp->n_layers; l++)
        for (int v = 0; v < 2; v++)
            for (uint32_t p = p0; p < p1; p++)
                for (uint32_t h = 0; h < hp->n_kv_heads; h++) {
                    float *c = (v ? r->value_cache : r->key_cache) + cache_index(r, l, p) + h * hp->head_dim;
                    uint8_t *row = rows + (((size_t)l * 2 + v) * rows_pos + p) * hp->n_kv_heads * rb + h * rb;
                    if (write) memcpy(c, row, rb);
                    else memcpy(row, c, rb);
                }
    return EMBER_OK;
}

ember_status ember_ref_copy_blocks(ember_ref *r, const uint32_t *src, const uint32_t *dst, uint32_t n,
                                   ember_err *err)
{
    size_t per_block = (size_t)r->m->hp.n_layers * r->block_size * r->kv_dim;
    for (uint32_t i = 0; i < n; i++) {
        if (src[i] >= r->n_blocks || dst[i] >= r->n_blocks || src[i] == dst[i])
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "copy of block %u to %u in a pool of %u", src[i],
                              dst[i], r->n_blocks);
        memcpy(r->key_cache + dst[i] * per_block, r->key_cache + src[i] * per_block, per_block * sizeof(float));
        memcpy(r->value_cache + dst[i] * per_block, r->value_cache + src[i] * per_block,
               per_block * sizeof(float));
    }
    return EMBER_OK;
}

/* ---- lifetime -------------------------------------------------------------------- */

static float *alloc_floats(size_t n, bool *ok)
{
    float *p = ember_calloc(n ? n : 1, sizeof(float));
    if (!p)
        *ok = false;
    return p;
}

ember_status ember_ref_create_paged(const ember_llama *m, uint32_t n_blocks, uint32_t block_size,
                                    uint32_t max_blocks_per_seq, ember_ref **out, ember_err *err)
{
    const ember_hparams *hp = &m->hp;
    *out = NULL;
    if (hp->n_heads == 0 || hp->n_kv_heads == 0 || hp->n_heads % hp->n_kv_heads != 0 ||
        hp->ctx_len == 0 || hp->head_dim == 0 || n_blocks == 0 || block_size == 0)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "reference: bad hyper-parameters");
    ember_ref *r = ember_calloc(1, sizeof *r);
    if (!r)
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "reference: out of memory");
    r->m = m;
    r->q_dim = hp->n_heads * hp->head_dim;
    r->kv_dim = hp->n_kv_heads * hp->head_dim;
    r->n_blocks = n_blocks;
    r->block_size = block_size;
    r->max_blocks_per_seq = max_blocks_per_seq;
    size_t per_block = (size_t)hp->n_layers * block_size * r->kv_dim;
    size_t cache = per_block * n_blocks;
    bool ok = per_block == 0 || cache / per_block == n_blocks;
    r->x = alloc_floats(hp->dim, &ok);
    r->xn = alloc_floats(hp->dim, &ok);
    r->qkv = alloc_floats(r->q_dim + 2 * (size_t)r->kv_dim, &ok);
    if (r->qkv) r->q = r->qkv, r->k = r->q + r->q_dim, r->v = r->k + r->kv_dim;
    r->att_out = alloc_floats(r->q_dim, &ok);
    r->ffn = alloc_floats(2 * (size_t)(hp->ffn_dim > hp->expert_ffn ? hp->ffn_dim : hp->expert_ffn), &ok);
    r->router = alloc_floats(hp->n_expert, &ok);
    r->moe = alloc_floats(hp->dim, &ok);
    r->proj = alloc_floats(hp->dim, &ok);
    r->scores = alloc_floats(hp->ctx_len, &ok);
    r->row = alloc_floats(hp->n_vocab, &ok);
    if (ok) {
        r->key_cache = alloc_floats(cache, &ok);
        r->value_cache = alloc_floats(cache, &ok);
    }
    if (!ok) {
        ember_ref_free(r);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "reference: out of memory for a KV "
                          "cache of %u layers x %u blocks of %u positions", hp->n_layers, n_blocks,
                          block_size);
    }
    *out = r;
    return EMBER_OK;
}

ember_status ember_ref_create(const ember_llama *m, ember_ref **out, ember_err *err)
{
    return ember_ref_create_paged(m, 1, m->hp.ctx_len, 1, out, err);
}

void ember_ref_free(ember_ref *r)
{
    if (!r)
        return;
    ember_free(r->x), ember_free(r->xn), ember_free(r->qkv), ember_free(r->att_out);
    ember_free(r->ffn), ember_free(r->router), ember_free(r->moe), ember_free(r->proj), ember_free(r->scores), ember_free(r->row);
    ember_free(r->key_cache), ember_free(r->value_cache);
    ember_free(r);
}

void ember_ref_keep_picks(ember_ref *r, uint32_t *picks, uint32_t cap)
{
    r->picks = picks;
    r->picks_cap = picks ? cap : 0;
}
