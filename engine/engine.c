/* engine.c — the public ember_engine: requests in, tokens out.
 *
 * A step: finish cancelled requests; let the scheduler choose this step's work (decode
 * tokens first, then prompt chunks, then newly admitted requests); place speculative
 * drafts; run it as one ragged batch through the model's step (step.h: the GPU forward
 * pass or the CPU reference, the same batch either way); sample the requests whose chunk
 * produced logits; hand text to callbacks; finish what is done, freeing its blocks at
 * once. Static batching (static_batch.c) is a hook of the scheduler: its padding comes
 * back as filler items, computed and counted, never delivered.
 *
 * Thread safety: one recursive mutex guards the engine, so ember_submit/ember_cancel may
 * be called from any thread — and from inside callbacks — while a worker thread (or the
 * game loop) steps. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batch.h"
#include "engine_spec.h"
#include "kv_layout.h"
#include "model_handle.h"
#include "sampler.h"
#include "scheduler.h"
#include "static_batch.h"
#include "step.h"
#include "text_out.h"

struct ember_engine {
    ember_err err;
    ember_model *model;
    ember_engine_opts o;
    uint32_t max_blocks_per_seq;
    ember_step *step;             /* the model's step on its backend */
    ember_spec *spec;             /* speculative decoding: draft step, verification */
    ember_kv_cache *kv;
    ember_static *fixed;          /* static batching's scheduler hook, or NULL */
    ember_sched *sched;
    ember_request_id next_id;
    uint32_t n_pending;
    /* step scratch */
    ember_sched_item *items;      /* 2 * max_seqs */
    request **stuck;              /* max_seqs */
    uint32_t *row_of;             /* per item: its first logits row */
    ember_batch_buf buf;          /* max_batch_tokens + STEP_SPARE rows */
    uint64_t steps, tokens_computed;
    uint64_t filler_tokens;       /* rows of no request (static batching's padding) */
    /* threading */
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    pthread_t worker;
    bool worker_running, stop;
};

/* Token rows a step may hold beyond max_batch_tokens: a draft model's catch-up. */
#define STEP_SPARE(max_seqs) (2u * (max_seqs))

static double now_ms(void)
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

/* The pool must fit what a step of model m can hold. */
static void cap_blocks(const ember_model *m, ember_engine_opts *o)
{
    if (!m || !m->llama_loaded) return;
    uint32_t max = ember_step_max_blocks(m, o->kv_block_size, o->kv_type);
    if (o->kv_blocks > max) o->kv_blocks = max;
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
    uint32_t S = e->o.max_seqs;
    e->items = calloc(2 * S, sizeof *e->items);
    e->stuck = calloc(S, sizeof *e->stuck);
    e->row_of = calloc(2 * S, sizeof *e->row_of);
    if (!e->items || !e->stuck || !e->row_of) return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    return ember_batch_buf_init(&e->buf, e->o.max_batch_tokens + STEP_SPARE(S), S, e->max_blocks_per_seq,
                                e->model->llama.hp.n_vocab, &e->err);
}

static ember_step_opts step_opts(const ember_engine *e, uint32_t max_tokens)
{
    return (ember_step_opts){.max_tokens = max_tokens, .max_seqs = e->o.max_seqs, .n_blocks = e->o.kv_blocks,
                             .block_size = e->o.kv_block_size, .max_blocks_per_seq = e->max_blocks_per_seq,
                             .kv_type = e->o.kv_type};
}

/* Static batching: the scheduler's hook. */
static ember_status create_fixed(ember_engine *e)
{
    if (e->o.batching == EMBER_BATCHING_CONTINUOUS) return EMBER_OK;
    ember_static_opts so = {.pad_prompts = e->o.batching == EMBER_BATCHING_STATIC, .max_seqs = e->o.max_seqs,
                            .max_blocks_per_seq = e->max_blocks_per_seq, .ctx_len = e->model->llama.hp.ctx_len};
    return ember_static_create(&so, e->kv, &e->fixed, &e->err);
}

static ember_status create_parts(ember_engine *e)
{
    if ((unsigned)e->o.batching > EMBER_BATCHING_STATIC_RAGGED)
        return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "unknown batching mode %d", (int)e->o.batching);
    if (e->o.kv_type != EMBER_KV_F32 && e->o.kv_type != EMBER_KV_Q8_0)
        return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "unknown KV cache type %d", (int)e->o.kv_type);
    ember_status s = alloc_scratch(e);
    if (s == EMBER_OK) s = ember_kv_create(e->o.kv_blocks, e->o.kv_block_size, &e->kv, &e->err);
    if (s == EMBER_OK) s = create_fixed(e);
    ember_sched_opts so = {.max_seqs = e->o.max_seqs, .max_batch_tokens = e->o.max_batch_tokens,
                           .max_blocks_per_seq = e->max_blocks_per_seq, .prefix_cache = !e->o.no_prefix_cache,
                           .contiguous_kv = e->o.kv_layout == EMBER_KV_CONTIGUOUS, .chunk_ctx = e->o.chunk_ctx,
                           .hook = e->fixed ? ember_static_hook(e->fixed) : NULL};
    if (s == EMBER_OK) s = ember_sched_create(&so, e->kv, &e->sched, &e->err);
    ember_step_opts to = step_opts(e, e->o.max_batch_tokens);
    if (s == EMBER_OK) s = ember_step_create(e->model, &to, &e->step, &e->err);
    ember_spec_opts po = {.target = e->model, .draft = e->o.draft,
                          .draft_step = step_opts(e, e->o.max_batch_tokens + STEP_SPARE(e->o.max_seqs)),
                          .max_batch_tokens = e->o.max_batch_tokens};
    if (s == EMBER_OK) s = ember_spec_create(&po, &e->spec, &e->err);
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
    free(r->q);
    ember_text_free(r->out);
    free(r->blocks);
    free(r->hashes);
    free(r->tokens);
    free(r);
}

/* Ends r: out of the scheduler (its blocks released at once, or kept by static batching
 * as a padding row), reported and freed. */
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
    if (!x->ngram && !ember_spec_has_draft(e->spec))
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
    ember_status s = ember_text_create(d->stop, &r->out, &e->err);
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
    return r ? EMBER_OK : ember_fail(&e->err, EMBER_ERR_NOT_FOUND, "no pending request %llu", (unsigned long long)id);
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
        if (!run[i]->cancelled) {
            i++;
            continue;
        }
        finish(e, run[i], EMBER_FINISH_CANCELLED); /* shifts the running array */
        run = ember_sched_running(e->sched, &n);
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
    return it->r && it->r->n_draft ? it->n : it->logits ? 1 : 0;
}

/* Lays the items out as one ragged batch: a request's rows are its tokens from
 * n_computed on, filler rows repeat their token. */
static ember_batch build_batch(ember_engine *e, uint32_t n_items)
{
    ember_batch_buf *b = &e->buf;
    uint32_t T = 0, n_logits = 0, W = e->max_blocks_per_seq;
    for (uint32_t i = 0; i < n_items; i++) {
        const ember_sched_item *it = &e->items[i];
        const request *r = it->r;
        uint32_t slot = r ? r->slot : it->fill.slot, pos0 = r ? r->n_computed : it->fill.pos0;
        const uint32_t *blocks = r ? r->blocks : it->fill.blocks;
        memcpy(b->block_tables + (size_t)slot * W, blocks, (r ? r->n_blocks : it->fill.n_blocks) * sizeof *blocks);
        e->row_of[i] = n_logits;
        for (uint32_t j = 0; j < it->n; j++, T++) {
            b->tokens[T] = r ? r->tokens[pos0 + j] : it->fill.token;
            b->pos[T] = pos0 + j;
            b->seq[T] = slot;
        }
        for (uint32_t j = logits_rows(it); j > 0; j--) b->rows[n_logits++] = T - j;
    }
    return ember_batch_of(b, T, n_logits);
}

static ember_status run_items(ember_engine *e, uint32_t n_items)
{
    ember_batch b = build_batch(e, n_items);
    bool need_logits = false; /* greedy requests and filler rows take the argmax */
    for (uint32_t i = 0; i < n_items; i++)
        need_logits |= e->items[i].r && logits_rows(&e->items[i]) && !e->items[i].r->greedy;
    if (need_logits && !ember_batch_buf_logits(&e->buf, b.n_logits))
        return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    return ember_step_run(e->step, &b, need_logits ? e->buf.logits : NULL, e->buf.argmax, &e->err);
}

/* Appends token tok to r and hands out its text; returns true when r finished (and was
 * freed). */
static bool emit(ember_engine *e, request *r, uint32_t tok, double t)
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
    int stop = ember_text_push(r->out, e->model->tok, tok);
    int done = -1; /* or an ember_finish */
    if (stop < 0) done = EMBER_FINISH_ERROR;
    else if (stop > 0) done = EMBER_FINISH_STOP;
    else if (!r->ignore_eos && ember_tokenizer_is_eog(e->model->tok, tok)) done = EMBER_FINISH_EOS;
    else if (r->m.n_gen >= r->max_tokens || r->n_tokens >= e->model->llama.hp.ctx_len) done = EMBER_FINISH_LENGTH;
    if (done >= 0) ember_text_finish(r->out);
    const char *text;
    size_t len = ember_text_take(r->out, &text);
    if (r->on_token && r->on_token(r->user, r->id, tok, text, len) != 0 && done < 0) done = EMBER_FINISH_CANCELLED;
    if (done < 0) return false;
    finish(e, r, (ember_finish)done);
    return true;
}

/* Verifies a speculative item and delivers what was kept. */
static void finish_speculation(ember_engine *e, request *r, uint32_t row, double t)
{
    uint32_t out[EMBER_MAX_DRAFT + 1];
    uint32_t n_out = ember_spec_verify(e->spec, e->sched, r, &e->buf, row, out);
    for (uint32_t j = 0; j < n_out; j++)
        if (emit(e, r, out[j], t)) return; /* finished: r is gone */
}

static void after_step(ember_engine *e, uint32_t n_items, double t0, double t1)
{
    uint32_t V = e->model->llama.hp.n_vocab;
    for (uint32_t i = 0; i < n_items; i++) {
        ember_sched_item *it = &e->items[i];
        request *r = it->r;
        uint32_t row = e->row_of[i];
        e->tokens_computed += it->n;
        if (!r) { /* filler: counted, its argmax fed back */
            e->filler_tokens += it->n;
            if (it->logits) *it->fill.next = e->buf.argmax[row];
            continue;
        }
        if (r->n_computed < r->n_prompt) r->m.prefill_ms += t1 - t0;
        else r->m.decode_ms += t1 - t0;
        if (r->m.n_gen) r->m.n_decode_steps++;
        if (r->n_draft) {
            finish_speculation(e, r, row, t1);
            continue;
        }
        ember_sched_advance(e->sched, r, it->n);
        if (!it->logits) continue;
        uint32_t tok = r->greedy ? e->buf.argmax[row] : ember_sampler_sample(r->sampler, e->buf.logits + (size_t)row * V);
        emit(e, r, tok, t1);
    }
}

/* The copies on write the scheduler planned, in the target's and the draft's KV pools
 * (they share block ids), before anything of the step writes. */
static ember_status apply_copies(ember_engine *e)
{
    const uint32_t *src, *dst;
    uint32_t n = ember_sched_copies(e->sched, &src, &dst);
    ember_status s = n ? ember_step_copy_blocks(e->step, src, dst, n, &e->err) : EMBER_OK;
    if (s == EMBER_OK) s = ember_spec_copy_blocks(e->spec, src, dst, n, &e->err);
    return s;
}

static void fail_items(ember_engine *e, uint32_t n_items)
{
    for (uint32_t i = 0; i < n_items; i++)
        if (e->items[i].r) finish(e, e->items[i].r, EMBER_FINISH_ERROR);
}

ember_status ember_engine_step(ember_engine *e)
{
    pthread_mutex_lock(&e->mu);
    drop_cancelled(e);
    uint32_t n_stuck = 0;
    ember_sched_set_reserve(e->sched, ember_spec_reserve(e->sched));
    uint32_t n_items = ember_sched_plan(e->sched, e->items, e->stuck, &n_stuck);
    for (uint32_t i = 0; i < n_stuck; i++) {
        ember_text_finish(e->stuck[i]->out);
        finish(e, e->stuck[i], EMBER_FINISH_LENGTH);
    }
    ember_status s = n_items ? EMBER_OK : EMBER_IDLE;
    double t0 = now_ms();
    for (uint32_t i = 0; i < n_items; i++) {
        request *r = e->items[i].r;
        if (r && r->t_first_sched == 0) {
            r->t_first_sched = t0;
            r->m.queue_ms = t0 - r->t_submit;
        }
    }
    if (n_items) s = apply_copies(e);
    if (n_items && s == EMBER_OK) s = ember_spec_propose(e->spec, e->sched, e->items, n_items, &e->buf, &e->err);
    if (n_items && s == EMBER_OK) s = run_items(e, n_items);
    if (s == EMBER_OK) {
        e->steps++;
        after_step(e, n_items, t0, now_ms());
        ember_sched_end_step(e->sched);
    } else if (s != EMBER_IDLE) {
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
        if (s == EMBER_IDLE) {
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
        .steps = e->steps, .tokens_computed = e->tokens_computed, .padding_tokens = e->filler_tokens,
        .cow_copies = ss->cow_copies,
        .kv_type = e->o.kv_type,
        .kv_bytes_per_token = 2ull * hp->n_layers * kv_layer_token_bytes(hp, e->o.kv_type)};
    pthread_mutex_unlock(&e->mu);
}

static request *first_running(ember_engine *e)
{
    uint32_t n;
    request **run = ember_sched_running(e->sched, &n);
    return n ? run[0] : NULL;
}

void ember_engine_destroy(ember_engine *e)
{
    if (!e) return;
    ember_engine_stop(e);
    for (request *r; e->sched && (r = first_running(e));) finish(e, r, EMBER_FINISH_CANCELLED);
    for (request *r; e->sched && (r = ember_sched_waiting(e->sched));) finish(e, r, EMBER_FINISH_CANCELLED);
    ember_step_free(e->step);
    ember_spec_free(e->spec);
    ember_sched_free(e->sched);
    ember_static_free(e->fixed); /* its padding rows' blocks go back to the pool */
    ember_kv_free(e->kv);
    free(e->items);
    free(e->stuck);
    free(e->row_of);
    ember_batch_buf_free(&e->buf);
    pthread_cond_destroy(&e->work);
    pthread_cond_destroy(&e->idle);
    pthread_mutex_destroy(&e->mu);
    free(e);
}
