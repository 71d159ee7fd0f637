/* engine.c — the public ember_engine: requests in, tokens out. This file: creation, the
 * memory budget, submit and cancel, the worker thread, stats and teardown; one step is
 * engine_step.c's, the KV budget engine_budget.c's, how requests end engine_finish.c's; the state they share is engine_state.h.
 *
 * Threads: the inbox (inbox.c) is the only state other threads touch: ember_submit
 * builds its request outside any lock and pushes it, ember_cancel flags an id, pending
 * and stats read counters and a snapshot. Everything else belongs to whoever steps the
 * engine (step_mu keeps two steppers apart); the stepping thread takes new requests and
 * cancel flags from the inbox at the start of a step, so callbacks run with no lock that
 * another thread calling Ember could need. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "engine_budget.h"
#include "engine_finish.h"
#include "engine_step.h"
#include "engine_opts.h"
#include "kv_layout.h"

/* ---- creation ---------------------------------------------------------------------- */

static uint64_t kv_token_bytes(const ember_hparams *hp, ember_kv_type t)
{
    return ember_kv_token_bytes(hp->n_layers, hp->n_kv_heads, hp->head_dim, t);
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
    ember_engine_opts_defaults(o);
    e->max_blocks_per_seq = (hp->ctx_len + o->kv_block_size - 1) / o->kv_block_size;
    if (!o->kv_blocks && o->kv_mem_mib)
        o->kv_blocks = (uint32_t)(((uint64_t)o->kv_mem_mib << 20) / (o->kv_block_size * kv_token_bytes(hp, o->kv_type)));
    if (!o->kv_blocks) {
        /* Enough for max_seqs sequences of 1024 tokens, and always for one sequence of the
         * whole context: a lone request can use the model's context. */
        uint32_t per_seq = (hp->ctx_len < 1024 ? hp->ctx_len : 1024) / o->kv_block_size + 1;
        o->kv_blocks = o->max_seqs * per_seq;
        if (o->kv_blocks < e->max_blocks_per_seq + 1) o->kv_blocks = e->max_blocks_per_seq + 1;
    }
    cap_blocks(e->model, o);
    cap_blocks(o->draft, o); /* the draft's pool has as many blocks */
}

static ember_status alloc_scratch(ember_engine *e)
{
    uint32_t S = e->o.max_seqs, B = e->o.kv_blocks;
    e->items = ember_calloc(2 * S, sizeof *e->items);
    e->stuck = ember_calloc(S, sizeof *e->stuck);
    e->row_of = ember_calloc(2 * S, sizeof *e->row_of);
    e->fetch = ember_calloc(2 * S, sizeof *e->fetch);
    e->kv_map = ember_calloc(B, sizeof *e->kv_map);
    e->kv_src = ember_calloc(B, sizeof *e->kv_src);
    e->kv_dst = ember_calloc(B, sizeof *e->kv_dst);
    e->local_row = ember_calloc(e->max_blocks_per_seq, sizeof *e->local_row);
    e->copy_local = ember_calloc(2 * S, sizeof *e->copy_local);
    if (!e->items || !e->stuck || !e->row_of || !e->fetch || !e->kv_map || !e->kv_src || !e->kv_dst || !e->local_row ||
        !e->copy_local)
        return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    return ember_batch_buf_init(&e->buf, e->o.max_batch_tokens + STEP_SPARE(S), S, e->max_blocks_per_seq,
                                e->model->llama.hp.n_vocab, &e->err);
}

static ember_step_opts step_opts(const ember_engine *e, uint32_t max_tokens)
{
    return (ember_step_opts){.max_tokens = max_tokens, .max_seqs = e->o.max_seqs, .n_blocks = e->kv_now,
                             .block_size = e->o.kv_block_size, .max_blocks_per_seq = e->max_blocks_per_seq,
                             .kv_type = e->o.kv_type, .n_local = e->n_local, .window = e->window};
}

/* Static batching: the scheduler's hook. */
static ember_status create_fixed(ember_engine *e)
{
    if (e->o.batching == EMBER_BATCHING_CONTINUOUS) return EMBER_OK;
    ember_static_opts so = {.pad_prompts = e->o.batching == EMBER_BATCHING_STATIC, .max_seqs = e->o.max_seqs,
                            .max_blocks_per_seq = e->max_blocks_per_seq, .ctx_len = e->model->llama.hp.ctx_len};
    return ember_static_create(&so, e->kv, &e->fixed, &e->err);
}

/* Dispatches are timed where the step's device has timestamps; elsewhere the profile has
 * counts and host time only. */
static ember_status create_profiler(ember_engine *e)
{
    ember_err ignored;
    ember_status s = ember_step_set_profiling(e->step, true, &ignored);
    if (s != EMBER_OK && s != EMBER_ERR_UNSUPPORTED) return ember_fail(&e->err, s, "%s", ignored.msg);
    return ember_profiler_create(s == EMBER_OK, &e->prof, &e->err);
}

/* Candidates where the step makes them: by default on GPUs only, since on a CPU device
 * the selection runs on the cores that would sample the row, which is in host memory
 * already (docs/sampling.md, "On the GPU"). */
static bool use_candidates(const ember_engine *e)
{
    if (!ember_step_has_candidates(e->step) || e->o.sample_from == EMBER_SAMPLE_ROWS) return false;
    return e->o.sample_from == EMBER_SAMPLE_CANDIDATES || !ember_vk_get_caps(e->model->vk)->is_cpu;
}

static ember_status create_parts(ember_engine *e)
{
    if ((unsigned)e->o.batching > EMBER_BATCHING_STATIC_RAGGED)
        return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "unknown batching mode %d", (int)e->o.batching);
    if (!ember_kv_type_known(e->o.kv_type))
        return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "unknown KV cache type %d", (int)e->o.kv_type);
    if ((unsigned)e->o.sample_from > EMBER_SAMPLE_ROWS)
        return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "unknown sample_from %d", (int)e->o.sample_from);
    ember_status s = alloc_scratch(e);
    /* a sliding-window model's local layers keep a window of each sequence (kv_cache.h) */
    e->n_local = ember_engine_local_slots(&e->model->llama.hp, &e->o, e->o.kv_blocks);
    e->window = e->n_local ? ember_model_window(&e->model->llama.hp) : 0;
    if (s == EMBER_OK) s = ember_kv_create_local(e->kv_now, e->o.kv_block_size, e->n_local, &e->kv, &e->err);
    if (s == EMBER_OK) s = create_fixed(e);
    ember_sched_opts so = {.max_seqs = e->o.max_seqs, .max_batch_tokens = e->o.max_batch_tokens,
                           .max_blocks_per_seq = e->max_blocks_per_seq, .prefix_cache = !e->o.no_prefix_cache,
                           .contiguous_kv = e->o.kv_layout == EMBER_KV_CONTIGUOUS, .chunk_ctx = e->o.chunk_ctx,
                           .hook = e->fixed ? ember_static_hook(e->fixed) : NULL, .window = e->window};
    if (s == EMBER_OK) s = ember_sched_create(&so, e->kv, &e->sched, &e->err);
    ember_step_opts to = step_opts(e, e->o.max_batch_tokens);
    if (s == EMBER_OK) s = ember_step_create(e->model, &to, &e->step, &e->err);
    if (s == EMBER_OK) e->cands = use_candidates(e);
    if (s == EMBER_OK) s = ember_grammars_create(e->model->tok, &e->grammars, &e->err);
    ember_spec_opts po = {.target = e->model, .draft = e->o.draft,
                          .draft_step = step_opts(e, e->o.max_batch_tokens + STEP_SPARE(e->o.max_seqs)),
                          .max_batch_tokens = e->o.max_batch_tokens, .grammars = e->grammars};
    if (s == EMBER_OK) s = ember_spec_create(&po, &e->spec, &e->err);
    if (s == EMBER_OK && e->o.profile) s = create_profiler(e);
    return s;
}


ember_status ember_engine_create(ember_model *model, const ember_engine_opts *opts, ember_engine **out)
{
    ember_engine *e = ember_calloc(1, sizeof *e);
    *out = e;
    if (!e) return EMBER_ERR_OUT_OF_MEMORY;
    ember_mutex_init(&e->step_mu);
    ember_status s = ember_inbox_create(&e->inbox, &e->err);
    if (s != EMBER_OK) return s;
    if (!model || !model->llama_loaded)
        return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, model && model->tok ? "the model was loaded vocab_only: it "
                          "has no weights to run" : "engine needs a loaded model");
    if (model->vk && ember_vk_lost(model->vk))
        return ember_fail(&e->err, EMBER_ERR_DEVICE_LOST, "the model's device was lost: load the model again");
    e->model = model;
    e->o = opts ? *opts : (ember_engine_opts){0};
    choose_sizes(e);
    /* Under a memory budget the pool starts at its floor and grows to what the budget
     * leaves once the rest of the engine exists. */
    e->kv_now = ember_budget_active(e) ? ember_budget_floor(e) : e->o.kv_blocks;
    s = create_parts(e);
    if (s == EMBER_OK && ember_budget_active(e)) s = ember_budget_apply(e);
    if (s == EMBER_OK) ember_eng_publish_stats(e);
    else if (e->step_err.msg[0]) e->err = e->step_err;
    return s;
}



const char *ember_engine_error(const ember_engine *e) { return e ? e->err.msg : "out of memory"; }

const char *ember_engine_copy_error(const ember_engine *e, char *buf, size_t cap)
{
    if (!buf || !cap) return buf;
    if (!e) snprintf(buf, cap, "out of memory");
    else if (!e->inbox) snprintf(buf, cap, "%s", e->err.msg); /* create failed: no other thread has it */
    else ember_inbox_copy_error(e->inbox, &e->err, buf, cap);
    return buf;
}

/* ---- requests ------------------------------------------------------------------------ */


ember_status ember_submit(ember_engine *e, const ember_request_desc *desc, ember_request_id *id)
{
    if (!e || !e->spec) /* ember_engine_create failed: no part of it may run a request */
        return e ? EMBER_ERR_INVALID_ARG : EMBER_ERR_OUT_OF_MEMORY;
    ember_request_env env = {.model = e->model, .kv_block_size = e->o.kv_block_size, .kv_blocks = e->o.kv_blocks,
                             .max_blocks_per_seq = e->max_blocks_per_seq, .has_draft = ember_spec_has_draft(e->spec),
                             .kv_type = e->o.kv_type};
    ember_err err = {0};
    request *r;
    ember_status s = ember_request_build(&env, desc, &r, &err);
    if (s == EMBER_OK) {
        r->t_submit = ember_now_ms();
        ember_request_id got = 0;
        s = ember_inbox_push(e->inbox, r, &got);
        if (s != EMBER_OK) {
            ember_request_free(r);
            ember_fail(&err, s, s == EMBER_ERR_DEVICE_LOST ? LOST : s == EMBER_ERR_SHUTTING_DOWN ? SHUTTING_DOWN
                                                                                               : "out of memory");
        } else if (id) {
            *id = got;
        }
    }
    if (s != EMBER_OK) ember_inbox_store_error(e->inbox, &e->err, &err);
    return s;
}

ember_status ember_cancel(ember_engine *e, ember_request_id id)
{
    if (ember_inbox_cancel(e->inbox, id)) return EMBER_OK;
    ember_err err;
    ember_status s = ember_fail(&err, EMBER_ERR_NOT_FOUND, "no pending request %llu", (unsigned long long)id);
    ember_inbox_store_error(e->inbox, &e->err, &err);
    return s;
}

uint32_t ember_engine_pending(ember_engine *e) { return ember_inbox_pending(e->inbox); }

/* ---- worker thread -------------------------------------------------------------------- */

static void worker_main(void *arg)
{
    ember_engine *e = arg;
    bool idle = false;
    /* When pending work cannot run yet, wait for a submit, a cancel or 10 ms. */
    while (ember_inbox_wait_work(e->inbox, idle ? 10 : 0)) idle = ember_engine_step(e) == EMBER_IDLE;
    ember_inbox_worker_end(e->inbox);
}

ember_status ember_engine_start(ember_engine *e)
{
    if (!ember_inbox_worker_begin(e->inbox)) return EMBER_OK; /* running already */
    if (!ember_thread_start(&e->worker, worker_main, e)) {
        ember_inbox_worker_end(e->inbox);
        ember_err err;
        ember_status s = ember_fail(&err, EMBER_ERR_OUT_OF_MEMORY, "cannot start the worker thread");
        ember_inbox_store_error(e->inbox, &e->err, &err);
        return s;
    }
    e->worker_started = true;
    return EMBER_OK;
}

void ember_engine_stop(ember_engine *e)
{
    ember_inbox_stop(e->inbox);
    if (e->worker_started) ember_thread_join(&e->worker);
    e->worker_started = false;
}

void ember_engine_wait_idle(ember_engine *e) { ember_inbox_wait_idle(e->inbox); }

/* ---- stats and teardown ----------------------------------------------------------------- */


void ember_engine_get_stats(ember_engine *e, ember_engine_stats *st) { ember_inbox_stats(e->inbox, st); }

ember_status ember_engine_get_profile(ember_engine *e, ember_profile *out)
{
    if (!e->prof) {
        memset(out, 0, sizeof *out);
        ember_err err;
        ember_status s = ember_fail(&err, EMBER_ERR_INVALID_ARG, "the engine was made without the profile option");
        ember_inbox_store_error(e->inbox, &e->err, &err);
        return s;
    }
    ember_profiler_get(e->prof, out);
    return EMBER_OK;
}

void ember_engine_reset_profile(ember_engine *e)
{
    if (e->prof) ember_profiler_reset(e->prof);
}


/* Destroy closes the inbox first: a done callback it runs (or another thread) that
 * submits is refused, so nothing is pushed after the last take and lost with the inbox. */
void ember_engine_destroy(ember_engine *e)
{
    if (!e) return;
    if (e->inbox) {
        ember_inbox_close(e->inbox, EMBER_ERR_SHUTTING_DOWN);
        ember_engine_stop(e);
    }
    ember_eng_drain(e); /* the step in flight's tokens are delivered, then all is cancelled */
    for (request *r; e->sched && (r = ember_eng_first_running(e));) ember_eng_finish(e, r, EMBER_FINISH_CANCELLED);
    for (request *r; e->sched && (r = ember_sched_waiting(e->sched));) ember_eng_finish(e, r, EMBER_FINISH_CANCELLED);
    ember_step_free(e->step);
    ember_profiler_free(e->prof);
    ember_spec_free(e->spec);
    ember_sched_free(e->sched);
    ember_static_free(e->fixed); /* its padding rows' blocks go back to the pool */
    ember_kv_free(e->kv);
    ember_free(e->items);
    ember_free(e->stuck);
    ember_free(e->row_of);
    ember_free(e->fetch);
    ember_free(e->kv_map);
    ember_free(e->kv_src);
    ember_free(e->kv_dst);
    ember_free(e->local_row);
    ember_free(e->copy_local);
    ember_batch_buf_free(&e->buf);
    ember_grammars_free(e->grammars); /* after every request: they hold its grammars */
    ember_inbox_free(e->inbox);
    ember_mutex_destroy(&e->step_mu);
    ember_free(e);
}

