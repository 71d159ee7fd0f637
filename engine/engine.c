/* engine.c — the public ember_engine: requests in, tokens out.
 *
 * A step: finish cancelled requests; let the scheduler choose this step's work (decode
 * tokens first, then prompt chunks, then newly admitted requests); run it as one ragged
 * batch through the forward pass (or the CPU reference, one sequence at a time); sample
 * the requests whose chunk produced logits; hand text to callbacks; finish what is done,
 * freeing its blocks at once. Under static batching a member that finishes is delivered
 * at once but stays in its batch as a padding row until the batch ends (scheduler.h).
 *
 * Thread safety: one recursive mutex guards the engine, so ember_submit/ember_cancel may
 * be called from any thread — and from inside callbacks — while a worker thread (or the
 * game loop) steps. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_internal.h"
#include "text_out.h"


double ember_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- creation ---------------------------------------------------------------------- */

/* K (or V) of one token in one layer, all KV heads. */
static uint64_t kv_layer_token_bytes(const ember_hparams *hp, ember_kv_type t)
{
    return hp->n_kv_heads * ember_kv_row_bytes(hp->head_dim, t);
}

static uint64_t block_bytes(const ember_hparams *hp, uint32_t bs, ember_kv_type t)
{
    return 2ull * hp->n_layers * bs * kv_layer_token_bytes(hp, t);
}

/* One layer's K (or V) pool of model m must fit one storage binding. */
static void cap_blocks(const ember_model *m, ember_engine_opts *o)
{
    if (!m || !m->vk || !m->llama_loaded) return;
    uint64_t per_block = o->kv_block_size * kv_layer_token_bytes(&m->llama.hp, o->kv_type);
    uint64_t max = per_block ? ember_vk_get_caps(m->vk)->max_storage_range / per_block : 0;
    if (per_block && o->kv_blocks > max) o->kv_blocks = (uint32_t)max;
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
        o->kv_blocks = (uint32_t)(((uint64_t)o->kv_mem_mib << 20) / block_bytes(hp, o->kv_block_size, o->kv_type));
    if (!o->kv_blocks) {
        uint32_t per_seq = (hp->ctx_len < 1024 ? hp->ctx_len : 1024) / o->kv_block_size + 1;
        o->kv_blocks = o->max_seqs * per_seq;
    }
    cap_blocks(e->model, o);
    cap_blocks(o->draft, o); /* the draft's pool has as many blocks */
}

static ember_status alloc_scratch(ember_engine *e)
{
    uint32_t S = e->o.max_seqs, V = e->model->llama.hp.n_vocab;
    uint32_t T = e->o.max_batch_tokens + EMBER_STEP_SPARE(S);
    e->items = calloc(S, sizeof *e->items);
    e->stuck = calloc(S, sizeof *e->stuck);
    e->row_of = calloc(S, sizeof *e->row_of);
    e->tokens = calloc(T, sizeof *e->tokens);
    e->pos = calloc(T, sizeof *e->pos);
    e->seq = calloc(T, sizeof *e->seq);
    e->rows = calloc(T, sizeof *e->rows);
    e->argmax = calloc(T, sizeof *e->argmax);
    e->block_tables = calloc((size_t)S * e->max_blocks_per_seq, sizeof *e->block_tables);
    e->scratch = malloc((size_t)V * sizeof *e->scratch);
    if (!e->items || !e->stuck || !e->row_of || !e->tokens || !e->pos || !e->seq || !e->rows || !e->argmax ||
        !e->block_tables || !e->scratch || !ember_engine_logits_room(e, S))
        return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    return EMBER_OK;
}

bool ember_engine_logits_room(ember_engine *e, uint32_t rows)
{
    if (rows <= e->logits_rows) return true;
    float *l = realloc(e->logits, (size_t)rows * e->model->llama.hp.n_vocab * sizeof *l);
    if (!l) return false;
    e->logits = l;
    e->logits_rows = rows;
    return true;
}

static ember_status create_parts(ember_engine *e)
{
    if ((unsigned)e->o.batching > EMBER_BATCHING_STATIC_RAGGED)
        return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "unknown batching mode %d", (int)e->o.batching);
    if (e->o.kv_type != EMBER_KV_F32 && e->o.kv_type != EMBER_KV_Q8_0)
        return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "unknown KV cache type %d", (int)e->o.kv_type);
    if (e->o.kv_type != EMBER_KV_F32 && !e->model->gpu)
        return ember_fail(&e->err, EMBER_ERR_UNSUPPORTED,
                          "a Q8_0 KV cache needs the Vulkan backend (the CPU reference keeps K and V in F32)");
    ember_status s = alloc_scratch(e);
    if (s == EMBER_OK) s = ember_kv_create(e->o.kv_blocks, e->o.kv_block_size, &e->kv, &e->err);
    ember_sched_opts so = {.max_seqs = e->o.max_seqs, .max_batch_tokens = e->o.max_batch_tokens,
                           .max_blocks_per_seq = e->max_blocks_per_seq,
                           .prefix_cache = !e->o.no_prefix_cache && e->model->backend == EMBER_BACKEND_VULKAN,
                           .static_batching = e->o.batching != EMBER_BATCHING_CONTINUOUS,
                           .pad_prompts = e->o.batching == EMBER_BATCHING_STATIC,
                           .contiguous_kv = e->o.kv_layout == EMBER_KV_CONTIGUOUS,
                           .ctx_len = e->model->llama.hp.ctx_len, .chunk_ctx = e->o.chunk_ctx};
    if (s == EMBER_OK) s = ember_sched_create(&so, e->kv, &e->sched, &e->err);
    if (s == EMBER_OK && e->model->gpu) {
        ember_forward_opts fo = {.max_tokens = e->o.max_batch_tokens, .max_seqs = e->o.max_seqs,
                                 .n_blocks = e->o.kv_blocks, .block_size = e->o.kv_block_size,
                                 .max_blocks_per_seq = e->max_blocks_per_seq, .kv_type = e->o.kv_type};
        s = ember_forward_create(e->model->gpu, &fo, &e->fwd, &e->err);
    }
    if (s == EMBER_OK && e->o.draft) s = ember_spec_init(e);
    return s;
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
    ember_sampler_free(r->draft_sampler);
    ember_ref_free(r->draft_ref);
    free(r->q);
    ember_text_free(&r->out);
    ember_ref_free(r->ref);
    free(r->blocks);
    free(r->hashes);
    free(r->tokens);
    free(r);
}

/* Ends r: releases its blocks at once and reports. Under static batching r may instead
 * stay in its batch as a padding row: it is reported now all the same (a streaming
 * server's view; docs/serving.md), and freed when the scheduler lets it go. */
static void finish(ember_engine *e, request *r, ember_finish why)
{
    bool padding = ember_sched_pad(e->sched, r);
    if (!padding) ember_sched_remove(e->sched, r);
    r->m.n_prompt = r->n_prompt;
    r->m.e2e_ms = ember_now_ms() - r->t_submit;
    if (r->m.n_gen > 1) r->m.tpot_ms = (r->t_last_token - r->t_first_token) / (r->m.n_gen - 1);
    if (r->on_done) r->on_done(r->user, r->id, why, &r->m);
    if (!padding) free_request(r);
    if (--e->n_pending == 0) pthread_cond_broadcast(&e->idle);
}

/* Frees the padding rows the scheduler let go of. Only between steps: a row let go of
 * during a step may still be one of its items. */
static void reap_padding(ember_engine *e)
{
    for (request *r; (r = ember_sched_reap(e->sched));) free_request(r);
}

static ember_status tokenize_prompt(ember_engine *e, const ember_request_desc *d, request *r)
{
    size_t n = 0;
    const ember_tokenizer *tok = e->model->tok;
    unsigned flags = (d->no_bos || !ember_tokenizer_add_bos(tok) ? 0 : EMBER_TOKENIZE_ADD_BOS) |
                     (d->parse_special ? EMBER_TOKENIZE_PARSE_SPECIAL : 0);
    if (d->prompt) {
        /* A text gives at most one token per byte plus BOS and a dummy prefix, so one
         * pass fills the buffer; the second pass is only a safety net. */
        size_t len = strlen(d->prompt), room = len + 4;
        ember_status s = EMBER_OK;
        for (int pass = 0; pass < 2 && s == EMBER_OK; pass++) {
            uint32_t *t = realloc(r->tokens, (room + r->max_tokens + 1) * sizeof *t);
            if (!t) goto oom;
            r->tokens = t;
            s = ember_tokenizer_encode_ex(tok, d->prompt, len, flags, r->tokens, room, &n, &e->err);
            if (n <= room) break;
            room = n;
        }
        if (s != EMBER_OK) return s;
        if (n == 0) return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "empty prompt (and no BOS)");
        r->cap = (uint32_t)(room + r->max_tokens + 1);
        r->n_prompt = (uint32_t)n;
        return EMBER_OK;
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

/* Drafts from a model share the target's block ids but keep their own K/V; blocks they
 * publish carry a different hash chain, so a request only reuses blocks whose draft K/V
 * is as complete as its own. */
#define DRAFT_HASH_SEED 0xD4AF7000D4AF7001ull

static ember_status setup_speculation(ember_engine *e, const ember_request_desc *d, request *r,
                                      const ember_sampling_params *sp)
{
    const ember_speculation *x = &d->spec;
    if (!x->draft_k) return EMBER_OK;
    if (x->draft_k > EMBER_MAX_DRAFT)
        return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "draft_k %u exceeds %d", x->draft_k, EMBER_MAX_DRAFT);
    if (!x->ngram && !e->draft)
        return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "speculation asks for a draft model but the engine has none");
    r->spec_k = r->spec_k_max = x->draft_k;
    if (x->adaptive) r->spec_k_max = EMBER_MAX_DRAFT;
    r->spec_ngram = x->ngram;
    r->spec_adaptive = x->adaptive != 0;
    r->spec_draft = !x->ngram;
    r->cap += EMBER_MAX_DRAFT; /* drafts sit after the tokens while they are checked */
    uint32_t *t = realloc(r->tokens, r->cap * sizeof *t);
    if (!t) return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    r->tokens = t;
    if (!r->spec_draft) return EMBER_OK;
    r->hash_seed = DRAFT_HASH_SEED;
    uint32_t V = e->model->llama.hp.n_vocab;
    ember_sampling_params dp = *sp;
    dp.seed = sp->seed ^ 0x5EEDD4AF75EEDull; /* the draft draws its own random numbers */
    ember_status s = ember_sampler_create(&dp, V, &r->draft_sampler, &e->err);
    if (s == EMBER_OK && !r->greedy && !(r->q = malloc((size_t)r->spec_k_max * V * sizeof *r->q)))
        s = ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; s == EMBER_OK && i < r->n_prompt; i++) ember_sampler_accept(r->draft_sampler, r->tokens[i]);
    return s;
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
    if ((s = setup_speculation(e, d, r, &sp)) != EMBER_OK) return s;
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
        r->t_submit = ember_now_ms();
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
        if (run[i]->id == id && !run[i]->padding) return run[i]; /* padding: already done */
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
        if (!run[i]->cancelled || run[i]->padding) {
            i++;
            continue;
        }
        ember_request_id id = run[i]->id;
        finish(e, run[i], EMBER_FINISH_CANCELLED); /* shifts the running array ... */
        run = ember_sched_running(e->sched, &n);
        if (i < n && run[i]->id == id) i++;        /* ... unless it stayed on as padding */
    }
    for (request *r = ember_sched_waiting(e->sched), *next; r; r = next) {
        next = r->next;
        if (r->cancelled) finish(e, r, EMBER_FINISH_CANCELLED);
    }
}

/* Rows of logits an item needs: every token of a speculative item (each scores the next
 * draft), else the last token when its chunk ends the known tokens. */
static uint32_t logits_rows(const ember_sched_item *it)
{
    return it->r->n_draft ? it->n : it->logits ? 1 : 0;
}

/* Lays the items out as one ragged batch. */
static void build_batch(ember_engine *e, uint32_t n_items, ember_batch *b)
{
    uint32_t T = 0, n_logits = 0, W = e->max_blocks_per_seq;
    for (uint32_t i = 0; i < n_items; i++) {
        const ember_sched_item *it = &e->items[i];
        const request *r = it->r;
        memcpy(e->block_tables + (size_t)r->slot * W, r->blocks, r->n_blocks * sizeof *r->blocks);
        e->row_of[i] = n_logits;
        for (uint32_t j = 0; j < it->n; j++) {
            e->tokens[T] = r->padding ? r->pad_token : r->tokens[r->n_computed + j];
            e->pos[T] = r->n_computed + j;
            e->seq[T] = r->slot;
            T++;
        }
        for (uint32_t j = logits_rows(it); j > 0; j--) e->rows[n_logits++] = T - j;
        /* Prompt padding: the prompt's last token again, at positions past the prompt
         * that the request's own tokens overwrite before anything reads them. */
        for (uint32_t j = 0; j < it->n_pad; j++) {
            e->tokens[T] = r->tokens[r->n_prefill - 1];
            e->pos[T] = r->n_prefill + r->n_pad_rows + j;
            e->seq[T] = r->slot;
            T++;
        }
    }
    *b = (ember_batch){T, e->tokens, e->pos, e->seq, e->block_tables, n_logits, e->rows};
}

static uint32_t argmax_row(const float *row, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t j = 1; j < n; j++)
        if (row[j] > row[best]) best = j;
    return best;
}

/* CPU backend: each sequence through the reference pass on its own, reading the rows
 * build_batch laid out (item i's tokens, then its prompt padding rows). */
static ember_status run_reference(ember_engine *e, uint32_t n_items, uint32_t n_logits)
{
    uint32_t V = e->model->llama.hp.n_vocab, T = 0;
    if (!ember_engine_logits_room(e, n_logits)) return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < n_items; i++) {
        const ember_sched_item *it = &e->items[i];
        request *r = it->r;
        uint32_t rows = logits_rows(it), n_lead = it->n - rows;
        ember_status s = r->ref ? EMBER_OK : ember_ref_create(&e->model->llama, &r->ref, &e->err);
        const uint32_t *t = e->tokens + T, *pos = e->pos + T;
        if (s == EMBER_OK && n_lead) s = ember_ref_forward(r->ref, t, n_lead, pos[0], NULL, 0, &e->err);
        float *out = e->logits + (size_t)e->row_of[i] * V;
        if (s == EMBER_OK && rows) s = ember_ref_forward(r->ref, t + n_lead, rows, pos[n_lead], out, 1, &e->err);
        if (s == EMBER_OK && it->n_pad)
            s = ember_ref_forward(r->ref, t + it->n, it->n_pad, pos[it->n], NULL, 0, &e->err);
        if (s != EMBER_OK) return s;
        for (uint32_t j = 0; j < rows; j++) e->argmax[e->row_of[i] + j] = argmax_row(out + (size_t)j * V, V);
        T += it->n + it->n_pad;
    }
    return EMBER_OK;
}

static ember_status run_items(ember_engine *e, uint32_t n_items)
{
    ember_batch b;
    build_batch(e, n_items, &b);
    if (!e->fwd) return run_reference(e, n_items, b.n_logits);
    bool need_logits = false;
    for (uint32_t i = 0; i < n_items; i++) {
        const request *r = e->items[i].r;
        need_logits |= logits_rows(&e->items[i]) && !r->greedy && !r->padding; /* padding: argmax */
    }
    if (need_logits && !ember_engine_logits_room(e, b.n_logits))
        return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    return ember_forward_run(e->fwd, &b, need_logits ? e->logits : NULL, e->argmax, NULL, &e->err);
}

bool ember_engine_emit(ember_engine *e, request *r, uint32_t tok, double t)
{
    r->tokens[r->n_tokens++] = tok;
    r->m.n_gen++;
    if (r->m.n_gen == 1) {
        r->t_first_token = t;
        r->m.ttft_ms = t - r->t_submit;
    }
    r->t_last_token = t;
    ember_sampler_accept(r->sampler, tok);
    if (r->draft_sampler) ember_sampler_accept(r->draft_sampler, tok);
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
    if (done < 0) return false;
    finish(e, r, (ember_finish)done);
    return true;
}

/* Rows computed only for static batching's fixed shape: counted, never delivered. */
static void count_padding(ember_engine *e, uint32_t n)
{
    e->tokens_computed += n;
    e->padding_tokens += n;
}

/* A padding row computed one token nobody sees: it feeds its greedy choice back next
 * step, so that it keeps computing an ordinary continuation; only its cost is counted. */
static void pad_step(ember_engine *e, const ember_sched_item *it, uint32_t row)
{
    count_padding(e, it->n);
    ember_sched_advance(e->sched, it->r, it->n);
    it->r->pad_token = e->argmax[row];
}

static void after_step(ember_engine *e, uint32_t n_items, double t0, double t1)
{
    uint32_t V = e->model->llama.hp.n_vocab;
    for (uint32_t i = 0; i < n_items; i++) {
        ember_sched_item *it = &e->items[i];
        request *r = it->r;
        if (r->padding) {
            pad_step(e, it, e->row_of[i]);
            continue;
        }
        if (it->n_pad) { /* counted first: the tokens below may finish (and free) r */
            count_padding(e, it->n_pad);
            ember_sched_advance_padding(e->sched, r, it->n_pad);
        }
        if (!it->n) continue;
        if (r->n_computed < r->n_prompt) r->m.prefill_ms += t1 - t0;
        else r->m.decode_ms += t1 - t0;
        e->tokens_computed += it->n;
        if (r->m.n_gen) r->m.n_decode_steps++;
        if (r->n_draft) {
            ember_spec_finish(e, it, e->row_of[i], t1);
            continue;
        }
        ember_sched_advance(e->sched, r, it->n);
        if (!it->logits) continue;
        uint32_t row = e->row_of[i];
        uint32_t tok = r->greedy ? e->argmax[row] : ember_sampler_sample(r->sampler, e->logits + (size_t)row * V);
        ember_engine_emit(e, r, tok, t1);
    }
}

/* The copies on write the scheduler planned, in the target's and the draft's KV pools
 * (they share block ids), before anything of the step writes. */
static ember_status apply_copies(ember_engine *e)
{
    const uint32_t *src, *dst;
    uint32_t n = ember_sched_copies(e->sched, &src, &dst);
    ember_status s = EMBER_OK;
    if (n && e->fwd) s = ember_forward_copy_blocks(e->fwd, src, dst, n, &e->err);
    if (n && s == EMBER_OK && e->draft_fwd) s = ember_forward_copy_blocks(e->draft_fwd, src, dst, n, &e->err);
    return s;
}

static void fail_items(ember_engine *e, uint32_t n_items)
{
    for (uint32_t i = 0; i < n_items; i++) {
        request *r = e->items[i].r;
        if (r->padding) ember_sched_drop_padding(e->sched, r); /* nothing to report */
        else finish(e, r, EMBER_FINISH_ERROR);
    }
}

ember_status ember_engine_step(ember_engine *e)
{
    pthread_mutex_lock(&e->mu);
    drop_cancelled(e);
    uint32_t n_stuck = 0;
    ember_sched_set_reserve(e->sched, ember_spec_reserve(e));
    uint32_t n_items = ember_sched_plan(e->sched, e->items, e->stuck, &n_stuck);
    for (uint32_t i = 0; i < n_stuck; i++) {
        ember_text_finish(&e->stuck[i]->out);
        finish(e, e->stuck[i], EMBER_FINISH_LENGTH);
    }
    ember_status s = n_items ? EMBER_OK : EMBER_ERR_BUSY;
    double t0 = ember_now_ms();
    for (uint32_t i = 0; i < n_items; i++) {
        request *r = e->items[i].r;
        if (r->t_first_sched == 0) {
            r->t_first_sched = t0;
            r->m.queue_ms = t0 - r->t_submit;
        }
    }
    if (n_items) s = apply_copies(e);
    if (n_items && s == EMBER_OK) s = ember_spec_propose(e, n_items);
    if (n_items && s == EMBER_OK) s = run_items(e, n_items);
    if (s == EMBER_OK) {
        e->steps++;
        after_step(e, n_items, t0, ember_now_ms());
        ember_sched_end_step(e->sched);
    } else if (s != EMBER_ERR_BUSY) {
        fail_items(e, n_items);
    }
    reap_padding(e);
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
    const ember_hparams *hp = &e->model->llama.hp;
    *st = (ember_engine_stats){
        .kv_block_size = e->o.kv_block_size, .kv_blocks_total = e->o.kv_blocks,
        .kv_blocks_used = ember_kv_n_used(e->kv), .kv_peak_blocks_used = ss->peak_blocks,
        .kv_peak_tokens = (uint64_t)llround(ss->peak_fill * ss->peak_blocks * e->o.kv_block_size),
        .prefix_hit_tokens = ss->prefix_hit_tokens, .preemptions = ss->preemptions,
        .steps = e->steps, .tokens_computed = e->tokens_computed, .padding_tokens = e->padding_tokens,
        .cow_copies = ss->cow_copies,
        .kv_type = e->o.kv_type,
        .kv_bytes_per_token = 2ull * hp->n_layers * kv_layer_token_bytes(hp, e->o.kv_type)};
    pthread_mutex_unlock(&e->mu);
}

/* The first running request that is not padding, or NULL. */
static request *first_member(ember_engine *e)
{
    uint32_t n;
    request **run = ember_sched_running(e->sched, &n);
    for (uint32_t i = 0; i < n; i++)
        if (!run[i]->padding) return run[i];
    return NULL;
}

void ember_engine_destroy(ember_engine *e)
{
    if (!e) return;
    ember_engine_stop(e);
    for (request *r; e->sched && (r = first_member(e));) finish(e, r, EMBER_FINISH_CANCELLED);
    while (e->sched && ember_sched_waiting(e->sched)) finish(e, ember_sched_waiting(e->sched), EMBER_FINISH_CANCELLED);
    if (e->sched) reap_padding(e); /* the last member's finish let its batch's padding go */
    ember_forward_free(e->fwd);
    ember_forward_free(e->draft_fwd);
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
    free(e->row_of);
    free(e->probs);
    free(e->scratch);
    pthread_cond_destroy(&e->work);
    pthread_cond_destroy(&e->idle);
    pthread_mutex_destroy(&e->mu);
    free(e);
}
