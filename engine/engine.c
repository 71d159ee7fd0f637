/* engine.c — the public ember_engine: requests in, tokens out.
 *
 * A step: finish cancelled requests; let the scheduler choose this step's work (decode
 * tokens first, then prompt chunks, then newly admitted requests); run it as one ragged
 * batch through the forward pass (or the CPU reference, one sequence at a time); sample
 * the requests whose chunk produced logits; hand text to callbacks; finish what is done,
 * freeing its blocks at once.
 *
 * Thread safety: one recursive mutex guards the engine, so ember_submit/ember_cancel may
 * be called from any thread — and from inside callbacks — while a worker thread (or the
 * game loop) steps. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model_handle.h"
#include "scheduler.h"
#include "text_out.h"

struct ember_engine {
    ember_err err;
    ember_model *model;
    ember_engine_opts o;
    uint32_t max_blocks_per_seq;
    ember_forward *fwd;           /* NULL for the CPU backend */
    ember_kv_cache *kv;
    ember_sched *sched;
    ember_request_id next_id;
    uint32_t n_pending;
    /* step scratch */
    ember_sched_item *items;
    request **stuck;
    uint32_t *tokens, *pos, *seq, *rows, *argmax, *block_tables;
    float *logits;                /* max_seqs rows of n_vocab */
    uint64_t steps, tokens_computed;
    /* threading */
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    pthread_t worker;
    bool worker_running, stop;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- creation ---------------------------------------------------------------------- */

static uint64_t block_bytes(const ember_hparams *hp, uint32_t bs)
{
    return 2ull * hp->n_layers * bs * hp->n_kv_heads * hp->head_dim * sizeof(float);
}

static void choose_sizes(ember_engine *e)
{
    const ember_hparams *hp = &e->model->llama.hp;
    ember_engine_opts *o = &e->o;
    if (!o->max_seqs) o->max_seqs = 16;
    if (!o->max_batch_tokens) o->max_batch_tokens = 256;
    if (o->max_batch_tokens < o->max_seqs) o->max_batch_tokens = o->max_seqs;
    if (!o->kv_block_size) o->kv_block_size = 16;
    e->max_blocks_per_seq = (hp->ctx_len + o->kv_block_size - 1) / o->kv_block_size;
    if (!o->kv_blocks && o->kv_mem_mib)
        o->kv_blocks = (uint32_t)(((uint64_t)o->kv_mem_mib << 20) / block_bytes(hp, o->kv_block_size));
    if (!o->kv_blocks) {
        uint32_t per_seq = (hp->ctx_len < 1024 ? hp->ctx_len : 1024) / o->kv_block_size + 1;
        o->kv_blocks = o->max_seqs * per_seq;
    }
    if (e->model->vk) {
        /* One layer's K (or V) pool must fit one storage binding. */
        uint64_t range = ember_vk_get_caps(e->model->vk)->max_storage_range;
        uint64_t max = range / (block_bytes(hp, o->kv_block_size) / (2ull * hp->n_layers));
        if (o->kv_blocks > max) o->kv_blocks = (uint32_t)max;
    }
}

static ember_status alloc_scratch(ember_engine *e)
{
    uint32_t T = e->o.max_batch_tokens, S = e->o.max_seqs, V = e->model->llama.hp.n_vocab;
    e->items = calloc(S, sizeof *e->items);
    e->stuck = calloc(S, sizeof *e->stuck);
    e->tokens = calloc(T, sizeof *e->tokens);
    e->pos = calloc(T, sizeof *e->pos);
    e->seq = calloc(T, sizeof *e->seq);
    e->rows = calloc(S, sizeof *e->rows);
    e->argmax = calloc(S, sizeof *e->argmax);
    e->block_tables = calloc((size_t)S * e->max_blocks_per_seq, sizeof *e->block_tables);
    e->logits = malloc((size_t)S * V * sizeof *e->logits);
    if (!e->items || !e->stuck || !e->tokens || !e->pos || !e->seq || !e->rows || !e->argmax ||
        !e->block_tables || !e->logits)
        return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    return EMBER_OK;
}

static ember_status create_parts(ember_engine *e)
{
    ember_status s = alloc_scratch(e);
    if (s == EMBER_OK) s = ember_kv_create(e->o.kv_blocks, e->o.kv_block_size, &e->kv, &e->err);
    ember_sched_opts so = {.max_seqs = e->o.max_seqs, .max_batch_tokens = e->o.max_batch_tokens,
                           .max_blocks_per_seq = e->max_blocks_per_seq,
                           .prefix_cache = !e->o.no_prefix_cache && e->model->backend == EMBER_BACKEND_VULKAN,
                           .static_batching = e->o.batching == EMBER_BATCHING_STATIC,
                           .contiguous_kv = e->o.kv_layout == EMBER_KV_CONTIGUOUS};
    if (s == EMBER_OK) s = ember_sched_create(&so, e->kv, &e->sched, &e->err);
    if (s != EMBER_OK || !e->model->gpu) return s;
    ember_forward_opts fo = {.max_tokens = e->o.max_batch_tokens, .max_seqs = e->o.max_seqs,
                             .n_blocks = e->o.kv_blocks, .block_size = e->o.kv_block_size,
                             .max_blocks_per_seq = e->max_blocks_per_seq};
    return ember_forward_create(e->model->gpu, &fo, &e->fwd, &e->err);
}

ember_status ember_engine_create(ember_model *model, const ember_engine_opts *opts, ember_engine **out)
{
    ember_engine *e = calloc(1, sizeof *e);
    *out = e;
    if (!e) return EMBER_ERR_OUT_OF_MEMORY;
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&e->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    pthread_cond_init(&e->work, NULL);
    pthread_cond_init(&e->idle, NULL);
    if (!model || !model->llama_loaded)
        return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "engine needs a loaded model");
    e->model = model;
    e->o = opts ? *opts : (ember_engine_opts){0};
    e->next_id = 1;
    choose_sizes(e);
    return create_parts(e);
}

const char *ember_engine_error(const ember_engine *e) { return e ? e->err.msg : "out of memory"; }

/* ---- requests ------------------------------------------------------------------------ */

static void free_request(request *r)
{
    ember_sampler_free(r->sampler);
    ember_text_free(&r->out);
    ember_ref_free(r->ref);
    free(r->blocks);
    free(r->hashes);
    free(r->tokens);
    free(r);
}

/* Ends r: releases its blocks at once and reports. */
static void finish(ember_engine *e, request *r, ember_finish why)
{
    ember_sched_remove(e->sched, r);
    r->m.n_prompt = r->n_prompt;
    r->m.e2e_ms = now_ms() - r->t_submit;
    if (r->m.n_gen > 1) r->m.tpot_ms = (r->t_last_token - r->t_first_token) / (r->m.n_gen - 1);
    if (r->on_done) r->on_done(r->user, r->id, why, &r->m);
    free_request(r);
    if (--e->n_pending == 0) pthread_cond_broadcast(&e->idle);
}

static ember_status tokenize_prompt(ember_engine *e, const ember_request_desc *d, request *r)
{
    size_t n = 0;
    const ember_tokenizer *tok = e->model->tok;
    unsigned flags = (d->no_bos || !ember_tokenizer_add_bos(tok) ? 0 : EMBER_TOKENIZE_ADD_BOS) |
                     (d->parse_special ? EMBER_TOKENIZE_PARSE_SPECIAL : 0);
    if (d->prompt) {
        size_t len = strlen(d->prompt);
        ember_status s = ember_tokenizer_encode_ex(tok, d->prompt, len, flags, NULL, 0, &n, &e->err);
        if (s != EMBER_OK) return s;
        if (n == 0) return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "empty prompt (and no BOS)");
        r->cap = (uint32_t)n + r->max_tokens + 1;
        if (!(r->tokens = malloc(r->cap * sizeof *r->tokens))) goto oom;
        s = ember_tokenizer_encode_ex(tok, d->prompt, len, flags, r->tokens, n, &n, &e->err);
        r->n_prompt = (uint32_t)n;
        return s;
    }
    if (!d->tokens || !d->n_tokens)
        return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "request has neither prompt text nor tokens");
    n = d->n_tokens;
    r->cap = (uint32_t)n + r->max_tokens + 1;
    if (!(r->tokens = malloc(r->cap * sizeof *r->tokens))) goto oom;
    memcpy(r->tokens, d->tokens, n * sizeof *r->tokens);
    r->n_prompt = (uint32_t)n;
    for (size_t i = 0; i < n; i++)
        if (r->tokens[i] >= e->model->llama.hp.n_vocab)
            return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "prompt token %u outside the vocabulary", r->tokens[i]);
    return EMBER_OK;
oom:
    return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
}

static ember_status check_fits(ember_engine *e, const request *r)
{
    uint32_t ctx = e->model->llama.hp.ctx_len, bs = e->o.kv_block_size;
    if (r->n_prompt >= ctx)
        return ember_fail(&e->err, EMBER_ERR_CONTEXT_FULL, "prompt of %u tokens does not fit the context of %u",
                          r->n_prompt, ctx);
    if ((r->n_prompt + bs) / bs > e->o.kv_blocks)
        return ember_fail(&e->err, EMBER_ERR_CONTEXT_FULL, "prompt of %u tokens needs more than the %u KV blocks",
                          r->n_prompt, e->o.kv_blocks);
    return EMBER_OK;
}

static ember_status build_request(ember_engine *e, const ember_request_desc *d, request *r)
{
    r->max_tokens = d->max_tokens ? d->max_tokens : 128;
    r->ignore_eos = d->ignore_eos != 0;
    r->greedy = d->sampling.temperature <= 0.0f;
    r->on_token = d->on_token;
    r->on_done = d->on_done;
    r->user = d->user;
    ember_sampling_params sp = {d->sampling.temperature, d->sampling.top_k, d->sampling.top_p,
                                d->sampling.min_p, d->sampling.repetition_penalty,
                                d->sampling.frequency_penalty, d->sampling.presence_penalty,
                                d->sampling.penalty_last_n, d->sampling.seed};
    uint32_t V = e->model->llama.hp.n_vocab;
    ember_status s = ember_text_init(&r->out, d->stop, &e->err);
    if (s == EMBER_OK) s = ember_sampler_create(&sp, V, &r->sampler, &e->err);
    if (s == EMBER_OK) s = tokenize_prompt(e, d, r);
    if (s == EMBER_OK) s = check_fits(e, r);
    if (s != EMBER_OK) return s;
    r->n_tokens = r->n_prompt;
    r->blocks = malloc(e->max_blocks_per_seq * sizeof *r->blocks);
    r->hashes = malloc(e->max_blocks_per_seq * sizeof *r->hashes);
    if (!r->blocks || !r->hashes) return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < r->n_prompt; i++) ember_sampler_accept(r->sampler, r->tokens[i]);
    return EMBER_OK;
}

ember_status ember_submit(ember_engine *e, const ember_request_desc *desc, ember_request_id *id)
{
    if (!desc) return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "no request");
    request *r = calloc(1, sizeof *r);
    if (!r) return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    pthread_mutex_lock(&e->mu);
    ember_status s = build_request(e, desc, r);
    if (s == EMBER_OK) {
        r->id = e->next_id++;
        r->t_submit = now_ms();
        r->m.n_prompt = r->n_prompt;
        ember_sched_enqueue(e->sched, r);
        e->n_pending++;
        if (id) *id = r->id;
        pthread_cond_signal(&e->work);
    }
    pthread_mutex_unlock(&e->mu);
    if (s != EMBER_OK) free_request(r);
    return s;
}

static request *find(ember_engine *e, ember_request_id id)
{
    uint32_t n;
    request **run = ember_sched_running(e->sched, &n);
    for (uint32_t i = 0; i < n; i++)
        if (run[i]->id == id) return run[i];
    for (request *r = ember_sched_waiting(e->sched); r; r = r->next)
        if (r->id == id) return r;
    return NULL;
}

ember_status ember_cancel(ember_engine *e, ember_request_id id)
{
    pthread_mutex_lock(&e->mu);
    request *r = find(e, id);
    if (r) r->cancelled = true;
    pthread_mutex_unlock(&e->mu);
    return r ? EMBER_OK : ember_fail(&e->err, EMBER_ERR_BUSY, "no pending request %llu", (unsigned long long)id);
}

uint32_t ember_engine_pending(ember_engine *e)
{
    pthread_mutex_lock(&e->mu);
    uint32_t n = e->n_pending;
    pthread_mutex_unlock(&e->mu);
    return n;
}

/* ---- one step ------------------------------------------------------------------------ */

/* Cancelled requests leave first, so their blocks serve this very step. */
static void drop_cancelled(ember_engine *e)
{
    uint32_t n;
    request **run = ember_sched_running(e->sched, &n);
    for (uint32_t i = 0; i < n;) {
        if (run[i]->cancelled) {
            finish(e, run[i], EMBER_FINISH_CANCELLED); /* shifts the running array */
            n--;
        } else {
            i++;
        }
    }
    for (request *r = ember_sched_waiting(e->sched), *next; r; r = next) {
        next = r->next;
        if (r->cancelled) finish(e, r, EMBER_FINISH_CANCELLED);
    }
}

/* Lays the items out as one ragged batch; returns the token count. */
static uint32_t build_batch(ember_engine *e, uint32_t n_items, ember_batch *b)
{
    uint32_t T = 0, n_logits = 0, W = e->max_blocks_per_seq;
    for (uint32_t i = 0; i < n_items; i++) {
        const ember_sched_item *it = &e->items[i];
        const request *r = it->r;
        memcpy(e->block_tables + (size_t)r->slot * W, r->blocks, r->n_blocks * sizeof *r->blocks);
        for (uint32_t j = 0; j < it->n; j++) {
            e->tokens[T] = r->tokens[r->n_computed + j];
            e->pos[T] = r->n_computed + j;
            e->seq[T] = r->slot;
            T++;
        }
        if (it->logits) e->rows[n_logits++] = T - 1;
    }
    *b = (ember_batch){T, e->tokens, e->pos, e->seq, e->block_tables, n_logits, e->rows};
    return T;
}

/* CPU backend: each sequence through the reference pass on its own. */
static ember_status run_reference(ember_engine *e, uint32_t n_items)
{
    uint32_t V = e->model->llama.hp.n_vocab, k = 0;
    for (uint32_t i = 0; i < n_items; i++) {
        request *r = e->items[i].r;
        ember_status s = r->ref ? EMBER_OK : ember_ref_create(&e->model->llama, &r->ref, &e->err);
        float *row = e->items[i].logits ? e->logits + (size_t)k * V : NULL;
        if (s == EMBER_OK)
            s = ember_ref_forward(r->ref, r->tokens + r->n_computed, e->items[i].n, r->n_computed, row, 0, &e->err);
        if (s != EMBER_OK) return s;
        if (!row) continue;
        uint32_t best = 0;
        for (uint32_t j = 1; j < V; j++)
            if (row[j] > row[best]) best = j;
        e->argmax[k++] = best;
    }
    return EMBER_OK;
}

static ember_status run_items(ember_engine *e, uint32_t n_items)
{
    if (!e->fwd) return run_reference(e, n_items);
    ember_batch b;
    build_batch(e, n_items, &b);
    bool need_logits = false;
    for (uint32_t i = 0; i < n_items; i++) need_logits |= e->items[i].logits && !e->items[i].r->greedy;
    return ember_forward_run(e->fwd, &b, need_logits ? e->logits : NULL, e->argmax, NULL, &e->err);
}

/* Appends token tok to r, hands out its text and finishes r when it is done. */
static void emit(ember_engine *e, request *r, uint32_t tok, double t)
{
    r->tokens[r->n_tokens++] = tok;
    r->m.n_gen++;
    if (r->m.n_gen == 1) {
        r->t_first_token = t;
        r->m.ttft_ms = t - r->t_submit;
    }
    r->t_last_token = t;
    ember_sampler_accept(r->sampler, tok);
    int stop = ember_text_push(&r->out, e->model->tok, tok);
    int done = -1; /* or an ember_finish */
    if (stop < 0) done = EMBER_FINISH_ERROR;
    else if (stop > 0) done = EMBER_FINISH_STOP;
    else if (!r->ignore_eos && ember_tokenizer_is_eog(e->model->tok, tok)) done = EMBER_FINISH_EOS;
    else if (r->m.n_gen >= r->max_tokens || r->n_tokens >= e->model->llama.hp.ctx_len) done = EMBER_FINISH_LENGTH;
    if (done >= 0) ember_text_finish(&r->out);
    const char *text;
    size_t len = ember_text_take(&r->out, &text);
    if (r->on_token && r->on_token(r->user, r->id, tok, text, len) != 0 && done < 0) done = EMBER_FINISH_CANCELLED;
    if (done >= 0) finish(e, r, (ember_finish)done);
}

static void after_step(ember_engine *e, uint32_t n_items, double t0, double t1)
{
    uint32_t k = 0, V = e->model->llama.hp.n_vocab;
    for (uint32_t i = 0; i < n_items; i++) {
        ember_sched_item *it = &e->items[i];
        request *r = it->r;
        bool prompt = r->n_computed < r->n_prompt;
        if (prompt) r->m.prefill_ms += t1 - t0;
        else r->m.decode_ms += t1 - t0;
        ember_sched_advance(e->sched, r, it->n);
        e->tokens_computed += it->n;
        if (!it->logits) continue;
        uint32_t tok = r->greedy ? e->argmax[k] : ember_sampler_sample(r->sampler, e->logits + (size_t)k * V);
        k++;
        emit(e, r, tok, t1);
    }
}

static void fail_items(ember_engine *e, uint32_t n_items)
{
    for (uint32_t i = 0; i < n_items; i++) finish(e, e->items[i].r, EMBER_FINISH_ERROR);
}

ember_status ember_engine_step(ember_engine *e)
{
    pthread_mutex_lock(&e->mu);
    drop_cancelled(e);
    uint32_t n_stuck = 0;
    uint32_t n_items = ember_sched_plan(e->sched, e->items, e->stuck, &n_stuck);
    for (uint32_t i = 0; i < n_stuck; i++) {
        ember_text_finish(&e->stuck[i]->out);
        finish(e, e->stuck[i], EMBER_FINISH_LENGTH);
    }
    ember_status s = n_items ? EMBER_OK : EMBER_ERR_BUSY;
    double t0 = now_ms();
    for (uint32_t i = 0; i < n_items; i++) {
        request *r = e->items[i].r;
        if (r->t_first_sched == 0) {
            r->t_first_sched = t0;
            r->m.queue_ms = t0 - r->t_submit;
        }
    }
    if (n_items) s = run_items(e, n_items);
    if (s == EMBER_OK) {
        e->steps++;
        after_step(e, n_items, t0, now_ms());
        ember_sched_end_step(e->sched);
    } else if (s != EMBER_ERR_BUSY) {
        fail_items(e, n_items);
    }
    pthread_mutex_unlock(&e->mu);
    return s;
}

/* ---- worker thread -------------------------------------------------------------------- */

static void *worker_main(void *arg)
{
    ember_engine *e = arg;
    pthread_mutex_lock(&e->mu);
    while (!e->stop) {
        if (e->n_pending == 0) {
            pthread_cond_wait(&e->work, &e->mu);
            continue;
        }
        ember_status s = ember_engine_step(e);
        if (s == EMBER_ERR_BUSY) {
            /* Pending work that cannot run yet: wait for a submit or a cancel. */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 10 * 1000 * 1000;
            if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
            pthread_cond_timedwait(&e->work, &e->mu, &ts);
        }
        /* Let submitters and cancellers in between steps. */
        pthread_mutex_unlock(&e->mu);
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

ember_status ember_engine_start(ember_engine *e)
{
    pthread_mutex_lock(&e->mu);
    ember_status s = EMBER_OK;
    if (!e->worker_running) {
        e->stop = false;
        if (pthread_create(&e->worker, NULL, worker_main, e) != 0)
            s = ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "cannot start the worker thread");
        else e->worker_running = true;
    }
    pthread_mutex_unlock(&e->mu);
    return s;
}

void ember_engine_stop(ember_engine *e)
{
    pthread_mutex_lock(&e->mu);
    bool running = e->worker_running;
    e->stop = true;
    pthread_cond_broadcast(&e->work);
    pthread_mutex_unlock(&e->mu);
    if (running) pthread_join(e->worker, NULL);
    e->worker_running = false;
}

void ember_engine_wait_idle(ember_engine *e)
{
    pthread_mutex_lock(&e->mu);
    while (e->n_pending > 0 && e->worker_running) pthread_cond_wait(&e->idle, &e->mu);
    pthread_mutex_unlock(&e->mu);
}

/* ---- stats and teardown ----------------------------------------------------------------- */

void ember_engine_get_stats(ember_engine *e, ember_engine_stats *st)
{
    pthread_mutex_lock(&e->mu);
    const ember_sched_stats *ss = ember_sched_get_stats(e->sched);
    *st = (ember_engine_stats){
        .kv_block_size = e->o.kv_block_size, .kv_blocks_total = e->o.kv_blocks,
        .kv_blocks_used = ember_kv_n_used(e->kv), .kv_peak_blocks_used = ss->peak_blocks,
        .kv_peak_tokens = (uint64_t)llround(ss->peak_fill * ss->peak_blocks * e->o.kv_block_size),
        .prefix_hit_tokens = ss->prefix_hit_tokens, .preemptions = ss->preemptions,
        .steps = e->steps, .tokens_computed = e->tokens_computed};
    pthread_mutex_unlock(&e->mu);
}

void ember_engine_destroy(ember_engine *e)
{
    if (!e) return;
    ember_engine_stop(e);
    for (uint32_t n = 1; e->sched && n;) {
        request **run = ember_sched_running(e->sched, &n);
        if (n) finish(e, run[0], EMBER_FINISH_CANCELLED);
    }
    while (e->sched && ember_sched_waiting(e->sched)) finish(e, ember_sched_waiting(e->sched), EMBER_FINISH_CANCELLED);
    ember_forward_free(e->fwd);
    ember_sched_free(e->sched);
    ember_kv_free(e->kv);
    free(e->items);
    free(e->stuck);
    free(e->tokens);
    free(e->pos);
    free(e->seq);
    free(e->rows);
    free(e->argmax);
    free(e->block_tables);
    free(e->logits);
    pthread_cond_destroy(&e->work);
    pthread_cond_destroy(&e->idle);
    pthread_mutex_destroy(&e->mu);
    free(e);
}
