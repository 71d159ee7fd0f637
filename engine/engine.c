/* engine.c — the public ember_engine: a request queue and the step loop.
 *
 * This version serves one request at a time, first come first served: a step is either
 * one prefill chunk of the running request's prompt (up to max_batch_tokens tokens) or
 * one decode token. The batch handed to the forward pass is already the ragged, paged
 * shape (positions, sequence slots, block tables), so serving many requests per step
 * changes only the scheduling here. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kv_cache.h"
#include "model_handle.h"
#include "quant.h"
#include "reference.h"

typedef struct request {
    ember_request_id id;
    ember_request_desc desc;     /* callbacks and limits; prompt pointers not kept */
    uint32_t *tokens;            /* prompt, then generated tokens */
    uint32_t n_prompt, n_tokens, cap;
    uint32_t n_past;             /* tokens whose K/V are stored */
    uint32_t *blocks;            /* block table (max_blocks_per_seq entries) */
    uint32_t n_blocks;
    ember_ref *ref;              /* CPU backend: the reference pass with its own cache */
    double t_submit, t_first;
    ember_request_metrics m;
    struct request *next;
} request;

struct ember_engine {
    ember_err err;
    ember_model *model;
    ember_engine_opts o;
    uint32_t max_blocks_per_seq;
    ember_forward *fwd;          /* NULL for the CPU backend */
    ember_kv_cache *kv;
    request *head, *tail;        /* waiting, in arrival order; head runs */
    ember_request_id next_id;
    uint32_t *pos, *seq;         /* batch scratch, max_batch_tokens each */
    float *logits;               /* CPU backend: one row */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static ember_status create_parts(ember_engine *e)
{
    const ember_hparams *hp = &e->model->llama.hp;
    uint32_t T = e->o.max_batch_tokens;
    e->pos = malloc(T * sizeof *e->pos);
    e->seq = calloc(T, sizeof *e->seq);
    e->logits = malloc(hp->n_vocab * sizeof *e->logits);
    if (!e->pos || !e->seq || !e->logits) return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    ember_status s = ember_kv_create(e->o.kv_blocks, e->o.kv_block_size, &e->kv, &e->err);
    if (s != EMBER_OK || !e->model->gpu) return s;
    ember_forward_opts fo = {.max_tokens = T, .max_seqs = 1, .n_blocks = e->o.kv_blocks,
                             .block_size = e->o.kv_block_size, .max_blocks_per_seq = e->max_blocks_per_seq};
    return ember_forward_create(e->model->gpu, &fo, &e->fwd, &e->err);
}

ember_status ember_engine_create(ember_model *model, const ember_engine_opts *opts, ember_engine **out)
{
    ember_engine *e = calloc(1, sizeof *e);
    *out = e;
    if (!e) return EMBER_ERR_OUT_OF_MEMORY;
    if (!model || !model->llama_loaded)
        return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "engine needs a loaded model");
    e->model = model;
    e->o = opts ? *opts : (ember_engine_opts){0};
    if (!e->o.kv_block_size) e->o.kv_block_size = 16;
    if (!e->o.max_batch_tokens) e->o.max_batch_tokens = 256;
    uint32_t ctx = model->llama.hp.ctx_len;
    e->max_blocks_per_seq = (ctx + e->o.kv_block_size - 1) / e->o.kv_block_size;
    if (!e->o.kv_blocks) e->o.kv_blocks = e->max_blocks_per_seq;
    e->next_id = 1;
    return create_parts(e);
}

static void free_request(ember_engine *e, request *r)
{
    for (uint32_t i = 0; i < r->n_blocks; i++) ember_kv_release(e->kv, r->blocks[i]);
    ember_ref_free(r->ref);
    free(r->blocks);
    free(r->tokens);
    free(r);
}

void ember_engine_destroy(ember_engine *e)
{
    if (!e) return;
    while (e->head) {
        request *r = e->head;
        e->head = r->next;
        free_request(e, r);
    }
    ember_forward_free(e->fwd);
    ember_kv_free(e->kv);
    free(e->pos);
    free(e->seq);
    free(e->logits);
    free(e);
}

const char *ember_engine_error(const ember_engine *e) { return e ? e->err.msg : "out of memory"; }

/* ---- submit ---------------------------------------------------------------------- */

static ember_status prompt_tokens(ember_engine *e, const ember_request_desc *d, request *r)
{
    size_t n = 0;
    if (!d->prompt) {
        if (!d->tokens || d->n_tokens == 0)
            return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "request has neither prompt text nor tokens");
        n = d->n_tokens;
    } else {
        ember_status s = ember_tokenize(e->model, d->prompt, strlen(d->prompt), !d->no_bos, NULL, 0, &n);
        if (s != EMBER_OK) return ember_fail(&e->err, s, "%s", ember_model_error(e->model));
        if (n == 0) return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "empty prompt (and no BOS)");
    }
    uint32_t ctx = e->model->llama.hp.ctx_len;
    if (n >= ctx)
        return ember_fail(&e->err, EMBER_ERR_CONTEXT_FULL, "prompt of %zu tokens does not fit the context of %u",
                          n, ctx);
    r->cap = (uint32_t)n + r->desc.max_tokens + 1;
    r->tokens = malloc(r->cap * sizeof *r->tokens);
    if (!r->tokens) return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    if (d->prompt) ember_tokenize(e->model, d->prompt, strlen(d->prompt), !d->no_bos, r->tokens, n, &n);
    else memcpy(r->tokens, d->tokens, n * sizeof *r->tokens);
    for (size_t i = 0; i < n; i++)
        if (r->tokens[i] >= e->model->llama.hp.n_vocab)
            return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "prompt token %u outside the vocabulary", r->tokens[i]);
    r->n_prompt = r->n_tokens = (uint32_t)n;
    return EMBER_OK;
}

ember_status ember_submit(ember_engine *e, const ember_request_desc *desc, ember_request_id *id)
{
    if (!desc) return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "no request");
    if (desc->temperature != 0.0f)
        return ember_fail(&e->err, EMBER_ERR_UNSUPPORTED, "only greedy decoding (temperature 0) is implemented");
    request *r = calloc(1, sizeof *r);
    if (!r) return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    r->desc = *desc;
    r->desc.prompt = NULL;
    r->desc.tokens = NULL;
    if (!r->desc.max_tokens) r->desc.max_tokens = 128;
    ember_status s = prompt_tokens(e, desc, r);
    if (s == EMBER_OK && !(r->blocks = malloc(e->max_blocks_per_seq * sizeof *r->blocks)))
        s = ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    if (s == EMBER_OK && e->model->backend == EMBER_BACKEND_CPU)
        s = ember_ref_create(&e->model->llama, &r->ref, &e->err);
    if (s != EMBER_OK) {
        free_request(e, r);
        return s;
    }
    r->id = e->next_id++;
    r->t_submit = now_ms();
    r->m.n_prompt = r->n_prompt;
    if (e->tail) e->tail->next = r;
    else e->head = r;
    e->tail = r;
    if (id) *id = r->id;
    return EMBER_OK;
}

/* ---- step ------------------------------------------------------------------------ */

static void finish(ember_engine *e, request *r, ember_finish why)
{
    /* r is the head: unlink before the callback so it may submit new work. */
    e->head = r->next;
    if (!e->head) e->tail = NULL;
    if (r->desc.on_done) r->desc.on_done(r->desc.user, r->id, why, &r->m);
    free_request(e, r);
}

/* Makes sure blocks cover positions [0, end). */
static ember_status reserve_blocks(ember_engine *e, request *r, uint32_t end)
{
    uint32_t need = (end + e->o.kv_block_size - 1) / e->o.kv_block_size;
    while (r->n_blocks < need) {
        uint32_t b = ember_kv_alloc(e->kv);
        if (b == EMBER_NO_BLOCK) return ember_fail(&e->err, EMBER_ERR_CONTEXT_FULL, "KV pool exhausted");
        r->blocks[r->n_blocks++] = b;
    }
    return EMBER_OK;
}

/* Runs tokens [n_past, n_past+n) of r; *next receives the greedy next token. */
static ember_status run_tokens(ember_engine *e, request *r, uint32_t n, uint32_t *next)
{
    const uint32_t *toks = r->tokens + r->n_past;
    if (r->ref) {
        ember_status s = ember_ref_forward(r->ref, toks, n, r->n_past, e->logits, 0, &e->err);
        if (s != EMBER_OK) return s;
        uint32_t best = 0;
        for (uint32_t i = 1; i < e->model->llama.hp.n_vocab; i++)
            if (e->logits[i] > e->logits[best]) best = i;
        *next = best;
        return EMBER_OK;
    }
    ember_status s = reserve_blocks(e, r, r->n_past + n);
    if (s != EMBER_OK) return s;
    for (uint32_t i = 0; i < n; i++) e->pos[i] = r->n_past + i;
    uint32_t last = n - 1;
    ember_batch b = {.n_tokens = n, .tokens = toks, .pos = e->pos, .seq = e->seq, .block_tables = r->blocks,
                     .n_logits = 1, .logit_rows = &last};
    return ember_forward_run(e->fwd, &b, NULL, next, NULL, &e->err);
}

/* Appends a generated token, calls back, and says whether the request is over. */
static bool emit(ember_engine *e, request *r, uint32_t tok, ember_finish *why)
{
    r->tokens[r->n_tokens++] = tok;
    r->m.n_gen++;
    char piece[256];
    size_t n = ember_token_to_text(e->model, tok, piece, sizeof piece);
    if (n >= sizeof piece) n = sizeof piece - 1;
    bool stop = r->desc.on_token && r->desc.on_token(r->desc.user, r->id, tok, piece, n) != 0;
    *why = EMBER_FINISH_CANCELLED;
    if (stop) return true;
    *why = EMBER_FINISH_EOS;
    if (!r->desc.ignore_eos && tok == ember_tokenizer_eos(e->model->tok)) return true;
    *why = EMBER_FINISH_LENGTH;
    return r->m.n_gen >= r->desc.max_tokens || r->n_tokens >= e->model->llama.hp.ctx_len;
}

ember_status ember_engine_step(ember_engine *e)
{
    request *r = e->head;
    if (!r) return EMBER_ERR_BUSY;
    bool prefill = r->n_past < r->n_prompt;
    uint32_t n = prefill ? r->n_prompt - r->n_past : 1;
    if (n > e->o.max_batch_tokens) n = e->o.max_batch_tokens;
    uint32_t next = 0;
    double t0 = now_ms();
    ember_status s = run_tokens(e, r, n, &next);
    double t1 = now_ms();
    if (s != EMBER_OK) {
        finish(e, r, EMBER_FINISH_ERROR);
        return s;
    }
    r->n_past += n;
    if (prefill) r->m.prefill_ms += t1 - t0;
    else r->m.decode_ms += t1 - t0;
    if (r->n_past < r->n_prompt) return EMBER_OK; /* more prompt chunks to go */
    if (r->m.n_gen == 0) r->m.ttft_ms = t1 - r->t_submit;
    ember_finish why;
    if (emit(e, r, next, &why)) finish(e, r, why);
    return EMBER_OK;
}

ember_status ember_cancel(ember_engine *e, ember_request_id id)
{
    for (request **p = &e->head, *prev = NULL; *p; prev = *p, p = &(*p)->next) {
        request *r = *p;
        if (r->id != id) continue;
        *p = r->next;
        if (e->tail == r) e->tail = prev;
        if (r->desc.on_done) r->desc.on_done(r->desc.user, r->id, EMBER_FINISH_CANCELLED, &r->m);
        free_request(e, r);
        return EMBER_OK;
    }
    return ember_fail(&e->err, EMBER_ERR_BUSY, "no request %llu", (unsigned long long)id);
}

uint32_t ember_engine_pending(const ember_engine *e)
{
    uint32_t n = 0;
    for (const request *r = e->head; r; r = r->next) n++;
    return n;
}
