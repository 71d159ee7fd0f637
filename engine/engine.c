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
 * A step is two halves: begin plans it and submits it to the device; end waits for it
 * (or only polls) and delivers its tokens. ember_engine_step is both, waited for.
 *
 * Threads: the inbox (inbox.c) is the only state other threads touch: ember_submit
 * builds its request outside any lock and pushes it, ember_cancel flags an id, pending
 * and stats read counters and a snapshot. Everything else belongs to whoever steps the
 * engine (step_mu keeps two steppers apart); the stepping thread takes new requests and
 * cancel flags from the inbox at the start of a step, so callbacks run with no lock that
 * another thread calling Ember could need. */
#include <math.h>
#include "platform/os_thread.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "batch.h"
#include "engine_spec.h"
#include "inbox.h"
#include "engine/grammar/constraint.h"
#include "engine_opts.h"
#include "kv_layout.h"
#include "engine/sampling/logprobs.h"
#include "engine/state/kv_state.h"
#include "model_handle.h"
#include "profile.h"
#include "engine/sampling/sampler.h"
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
    ember_inbox *inbox;           /* the thread-safe front */
    ember_grammars *grammars;     /* requests' grammars, shared by text (stepping thread) */
    uint32_t kv_now;              /* blocks in the pool now (o.kv_blocks: the most) */
    uint32_t n_local, window;     /* the pool's local slots for the model's sliding window
                                     (kv_cache.h; 0: none) */
    uint32_t *local_row;          /* max_blocks_per_seq: a block table's local slots */
    uint32_t *copy_local;         /* 2 x max_seqs: copies' source and destination slots */
    uint32_t local_peak;          /* the most local slots in use after a step */
    uint64_t grow_failed_budget;  /* the budget at which growing the pool last failed */
    uint32_t *kv_map, *kv_src, *kv_dst; /* o.kv_blocks each: resizing the pool */
    ember_err step_err;           /* errors of the stepping thread, copied to err */
    /* step scratch */
    ember_sched_item *items;      /* 2 * max_seqs */
    request **stuck;              /* max_seqs */
    uint32_t *row_of;             /* per item: its first logits row */
    uint32_t *fetch;              /* per item: logits rows read after the step */
    ember_batch_buf buf;          /* max_batch_tokens + STEP_SPARE rows */
    uint64_t steps, tokens_computed;
    uint64_t filler_tokens;       /* rows of no request (static batching's padding) */
    bool cands;                   /* samplers may read their rows' best candidates */
    uint64_t sampled_cands, sampled_rows; /* tokens drawn from candidates / whole rows */
    uint64_t states_saved, states_restored, state_bytes_saved, state_bytes_restored, state_positions;
    double state_s;               /* device transfers of KV states */
    /* the step in flight (begin done, end not yet) */
    bool in_flight;
    uint32_t n_items;
    double t0;
    ember_profiler *prof;         /* ember_engine_opts.profile, else NULL */
    ember_profiler_step pstep;    /* the step in flight, as the profile will count it */
    /* threading */
    ember_mutex step_mu;      /* held by the thread inside a step */
    ember_thread worker;
    bool worker_started;          /* by ember_engine_start, joined by ember_engine_stop */
    bool lost;                    /* the device was lost: every step fails */
};

/* What every call says once the device is lost: nothing of it can be used again. */
#define LOST "the device was lost (destroy the engine and the model, then load the model again)"
/* What ember_submit says once ember_engine_destroy has begun. */
#define SHUTTING_DOWN "the engine is being destroyed: it takes no new requests"

/* Token rows a step may hold beyond max_batch_tokens: a draft model's catch-up. */
#define STEP_SPARE(max_seqs) (2u * (max_seqs))

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

static void publish_stats(ember_engine *e);

/* ---- the memory budget --------------------------------------------------------------- */

/* The static baselines keep their pool: their padding rows hold blocks of their own. */
static bool budgeted(const ember_engine *e)
{
    return e->model->vk && !e->fixed && e->o.batching == EMBER_BATCHING_CONTINUOUS &&
           ember_vk_memory_budget(e->model->vk) != 0;
}

/* The pool never shrinks below one sequence of the whole context: a request that was
 * admitted can always finish. */
static uint32_t kv_floor(const ember_engine *e)
{
    return e->max_blocks_per_seq < e->o.kv_blocks ? e->max_blocks_per_seq : e->o.kv_blocks;
}

/* Blocks the budget leaves this engine: what remains after everything else on the
 * device, in blocks of what ours cost (target and draft pools). */
static uint32_t budget_blocks(const ember_engine *e)
{
    if (!budgeted(e)) return e->o.kv_blocks;
    ember_vk *vk = e->model->vk;
    uint64_t budget = ember_vk_memory_budget(vk), mine = ember_step_kv_bytes(e->step) + ember_spec_kv_bytes(e->spec);
    uint64_t per_block = mine / e->kv_now, others = ember_vk_memory_used(vk) - mine;
    uint64_t n = budget > others && per_block ? (budget - others) / per_block : 0;
    if (n > e->o.kv_blocks) n = e->o.kv_blocks;
    return n < kv_floor(e) ? kv_floor(e) : (uint32_t)n;
}

/* The KV blocks that move below the new size, copied in both pools. */
static ember_status move_blocks(ember_engine *e, uint32_t old_n)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < old_n; i++)
        if (e->kv_map[i] != EMBER_NO_BLOCK && e->kv_map[i] != i) {
            e->kv_src[n] = i;
            e->kv_dst[n++] = e->kv_map[i];
        }
    /* the blocks' local slots stay where they are */
    ember_status s = n ? ember_step_copy_blocks(e->step, e->kv_src, e->kv_dst, NULL, NULL, n, &e->step_err) : EMBER_OK;
    if (s == EMBER_OK) s = ember_spec_copy_blocks(e->spec, e->kv_src, e->kv_dst, n, &e->step_err);
    return s;
}

/* The pool's blocks whose K/V a resize keeps: all of them once a step has run (a free
 * block may still hold a cached prefix), none before, when there is nothing to copy. */
static uint32_t kv_written(const ember_engine *e) { return e->steps ? e->kv_now : 0; }

/* Grows the pools to n blocks. When the device has no memory for it (the budget is a
 * promise the driver may not keep), the engine goes on with the pool it has: what fits
 * is served, the message is kept as the engine's last error, and growing is tried again
 * only when the budget changes. */
static ember_status grow_pool(ember_engine *e, uint32_t n)
{
    uint64_t budget = ember_vk_memory_budget(e->model->vk);
    if (budget == e->grow_failed_budget) return EMBER_OK;
    uint32_t keep = kv_written(e);
    ember_status s = ember_step_resize_kv(e->step, n, keep, &e->step_err);
    if (s == EMBER_OK) s = ember_spec_resize_kv(e->spec, n, keep, &e->step_err);
    if (s == EMBER_OK) s = ember_kv_resize(e->kv, n, e->kv_map, &e->step_err);
    if (s == EMBER_OK) {
        e->kv_now = n;
        e->grow_failed_budget = 0;
        return EMBER_OK;
    }
    if (s != EMBER_ERR_DEVICE_MEMORY && s != EMBER_ERR_OUT_OF_MEMORY) return s;
    ember_err note = e->step_err;
    /* Back to one size for both pools (the target's may have grown before the draft's
     * failed); shrinking frees more than it takes, and a failure here changes nothing. */
    ember_step_resize_kv(e->step, e->kv_now, keep, &note);
    ember_spec_resize_kv(e->spec, e->kv_now, keep, &note);
    ember_fail_ctx(&e->step_err, s, "the KV pool stays at %u blocks (%u wanted)", e->kv_now, n);
    ember_inbox_store_error(e->inbox, &e->err, &e->step_err);
    e->grow_failed_budget = budget;
    return EMBER_OK;
}

/* Brings the pool to the size the budget allows: growing makes the device pools first;
 * shrinking preempts the newest requests until the blocks in use fit, moves blocks from
 * the end down, then remakes the device pools smaller. */
static ember_status apply_budget(ember_engine *e)
{
    uint32_t n = budget_blocks(e), old_n = e->kv_now;
    if (n == old_n) return EMBER_OK;
    ember_status s = EMBER_OK;
    if (n > old_n) return grow_pool(e, n);
    while (ember_kv_n_used(e->kv) > n && ember_sched_preempt_newest(e->sched)) {}
    if (ember_kv_n_used(e->kv) > n) n = ember_kv_n_used(e->kv); /* copies on write still hold some */
    if (n >= old_n) return EMBER_OK;
    s = ember_kv_resize(e->kv, n, e->kv_map, &e->step_err);
    if (s != EMBER_OK) return s;
    e->kv_now = n;
    ember_sched_rename_blocks(e->sched, e->kv_map);
    s = move_blocks(e, old_n);
    if (s == EMBER_OK) s = ember_step_resize_kv(e->step, n, kv_written(e), &e->step_err);
    if (s == EMBER_OK) s = ember_spec_resize_kv(e->spec, n, kv_written(e), &e->step_err);
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
    e->kv_now = budgeted(e) ? kv_floor(e) : e->o.kv_blocks;
    s = create_parts(e);
    if (s == EMBER_OK && budgeted(e)) s = apply_budget(e);
    if (s == EMBER_OK) publish_stats(e);
    else if (e->step_err.msg[0]) e->err = e->step_err;
    return s;
}

static void lose_device(ember_engine *e);
static request *first_running(ember_engine *e);

/* A failed step's message becomes the engine's (under the inbox lock: other threads
 * write it too). A lost device ends every pending request. */
static ember_status report(ember_engine *e, ember_status s)
{
    if (s == EMBER_ERR_DEVICE_LOST && !e->lost) lose_device(e);
    if (s < 0) ember_inbox_store_error(e->inbox, &e->err, &e->step_err);
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

/* Ends r: out of the scheduler (its blocks released at once, or kept by static batching
 * as a padding row), reported and freed. */
static void finish(ember_engine *e, request *r, ember_finish why)
{
    ember_sched_remove(e->sched, r);
    r->m.n_prompt = r->n_prompt;
    r->m.e2e_ms = ember_now_ms() - r->t_submit;
    if (r->m.n_gen > 1) r->m.tpot_ms = (r->t_last_token - r->t_first_token) / (r->m.n_gen - 1);
    /* A failed step's message; step_err is written only by the stepping thread, which is
     * running this: it stays put through the callback. */
    if (why != EMBER_FINISH_ERROR) r->m.error = NULL;
    else if (!r->m.error) r->m.error = e->step_err.msg;
    ember_request_id id = r->id;
    if (r->on_done) r->on_done(r->user, id, why, &r->m);
    ember_request_free(r);
    /* Before it stops counting as pending: whoever ember_engine_wait_idle wakes must not
     * read stats that still show it running and its blocks in use. */
    publish_stats(e);
    ember_inbox_done(e->inbox, id);
}

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

/* ---- one step ------------------------------------------------------------------------ */

/* New requests join the scheduler's queue; cancel flags reach their requests. */
static void take_inbox(ember_engine *e, bool *cancels)
{
    for (request *r = ember_inbox_take(e->inbox, cancels), *next; r; r = next) {
        next = r->next;
        ember_sched_enqueue(e->sched, r);
    }
    if (!*cancels) return;
    uint32_t n;
    request **run = ember_sched_running(e->sched, &n);
    for (uint32_t i = 0; i < n; i++) run[i]->cancelled |= ember_inbox_cancelled(e->inbox, run[i]->id);
    for (request *r = ember_sched_waiting(e->sched); r; r = r->next)
        r->cancelled |= ember_inbox_cancelled(e->inbox, r->id);
}

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
/* Whether item it computes prompt tokens whose log-probabilities its request wants: then
 * each of its tokens has a row (the last one, at the end of the prompt, is also the
 * first reply token's). */
static bool prompt_rows(const ember_sched_item *it)
{
    return it->r && it->r->on_prompt_logprobs && it->r->n_computed < it->r->n_prompt;
}

static uint32_t logits_rows(const ember_sched_item *it)
{
    return it->r && (it->r->n_draft || prompt_rows(it)) ? it->n : it->logits ? 1 : 0;
}

/* Whether an embedding request r wants the hidden state of its prompt position pos. */
static bool hidden_wanted(const request *r, uint32_t pos)
{
    if (!r || !r->on_embedding || pos >= r->n_prompt) return false;
    return r->pooling == EMBER_POOLING_MEAN || pos == (r->pooling == EMBER_POOLING_CLS ? 0 : r->n_prompt - 1);
}

/* Lays the items out as one ragged batch: a request's rows are its tokens from
 * n_computed on, filler rows repeat their token. */
static ember_batch build_batch(ember_engine *e, uint32_t n_items)
{
    ember_batch_buf *b = &e->buf;
    uint32_t T = 0, n_logits = 0, n_hidden = 0, W = e->max_blocks_per_seq;
    for (uint32_t i = 0; i < n_items; i++) {
        const ember_sched_item *it = &e->items[i];
        const request *r = it->r;
        uint32_t slot = r ? r->slot : it->fill.slot, pos0 = r ? r->n_computed : it->fill.pos0;
        const uint32_t *blocks = r ? r->blocks : it->fill.blocks;
        uint32_t n_blocks = r ? r->n_blocks : it->fill.n_blocks;
        memcpy(b->block_tables + (size_t)slot * W, blocks, n_blocks * sizeof *blocks);
        ember_kv_local_row(e->kv, blocks, n_blocks, b->local_tables + (size_t)slot * W);
        e->row_of[i] = n_logits;
        for (uint32_t j = 0; j < it->n; j++, T++) {
            b->tokens[T] = r ? r->tokens[pos0 + j] : it->fill.token;
            b->pos[T] = pos0 + j;
            b->seq[T] = slot;
            if (hidden_wanted(r, pos0 + j)) b->hrows[n_hidden++] = T;
        }
        for (uint32_t j = logits_rows(it); j > 0; j--) b->rows[n_logits++] = T - j;
    }
    ember_batch batch = ember_batch_of(b, T, n_logits);
    batch.n_hidden = n_hidden;
    batch.local_tables = b->local_tables;
    return batch;
}

/* How a request's logits come back: greedy requests (and filler rows) take the argmax; a
 * sampler that the row's best candidates may decide reads those (2 KiB) where the engine
 * uses them (e->cands); every other sampler, and speculation's verifier, reads whole rows. */
static bool reads_candidates(const ember_engine *e, const request *r)
{
    if (r->n_draft || r->constraint || !e->cands) return false;
    /* a greedy request's log-probabilities come from its row's candidates */
    return r->greedy ? r->on_logprobs != NULL : ember_sampler_candidates_may_decide(r->sampler);
}

static ember_status submit_items(ember_engine *e, uint32_t n_items)
{
    ember_batch b = build_batch(e, n_items);
    uint32_t n_full = 0, n_cands = 0;
    for (uint32_t i = 0; i < n_items; i++) {
        const request *r = e->items[i].r;
        uint32_t n = logits_rows(&e->items[i]);
        bool prompt = prompt_rows(&e->items[i]);
        bool cands = r && n && !prompt && reads_candidates(e, r);
        bool full = r && n && (!r->greedy || r->on_logprobs || prompt) && !cands;
        memset(e->buf.want + e->row_of[i], cands ? EMBER_WANT_CANDS : full ? EMBER_WANT_ROW : EMBER_WANT_ARGMAX, n);
        for (uint32_t j = 0; cands && j < n; j++)
            e->buf.temp[e->row_of[i] + j] = r->greedy ? 1.0f : ember_sampler_temperature(r->sampler);
        n_full += full ? n : 0;
        n_cands += cands ? n : 0;
    }
    /* Room for every row: a row whose candidates do not decide is fetched whole. */
    if ((n_full || n_cands) && !ember_batch_buf_logits(&e->buf, b.n_logits))
        return ember_fail(&e->step_err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    if (n_cands && !ember_batch_buf_cands(&e->buf, b.n_logits))
        return ember_fail(&e->step_err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    uint32_t dim = e->model->llama.hp.dim;
    if (b.n_hidden && !ember_batch_buf_hidden(&e->buf, b.n_hidden, dim))
        return ember_fail(&e->step_err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    ember_step_out out = {n_full ? e->buf.logits : NULL, e->buf.want, e->buf.argmax,
                          n_cands ? e->buf.cands : NULL, e->buf.temp, b.n_hidden ? e->buf.hidden : NULL};
    e->pstep.decode = b.n_logits == b.n_tokens;
    e->pstep.tokens = b.n_tokens;
    e->pstep.submissions++;
    e->pstep.readback_bytes = b.n_logits * sizeof(uint32_t) + n_cands * sizeof(ember_cand_row) +
                              (uint64_t)n_full * e->model->llama.hp.n_vocab * sizeof(float) +
                              (uint64_t)b.n_hidden * dim * sizeof(float);
    return ember_step_submit(e->step, &b, &out, &e->step_err);
}

/* Advances r's grammar past tok: -1 (it goes on, or r has none), EMBER_FINISH_GRAMMAR
 * (it allows nothing more), or EMBER_FINISH_ERROR (it refuses tok: only a logit bias of
 * -infinity on every token it allowed lets the sampler draw one). */
static int constrain(ember_engine *e, request *r, uint32_t tok)
{
    if (!r->constraint) return -1;
    switch (ember_constraint_accept(r->constraint, e->model->tok, tok)) {
    case EMBER_CONSTRAINT_GOES_ON: return -1;
    case EMBER_CONSTRAINT_ENDED: return EMBER_FINISH_GRAMMAR;
    default:
        r->m.error = "grammar: the token drawn is not one the grammar allows (does the logit bias ban every "
                     "token it allows?)";
        return EMBER_FINISH_ERROR;
    }
}

/* The grammar masks of this step's constrained rows, made while the device computes
 * their logits: no request waits for another's mask, and none without a grammar waits at
 * all. */
static void make_masks(ember_engine *e, uint32_t n_items)
{
    for (uint32_t i = 0; i < n_items; i++) {
        request *r = e->items[i].r;
        /* a speculating request's masks were made with its drafts (engine_spec.c) */
        if (r && r->constraint && !r->n_draft && logits_rows(&e->items[i]))
            ember_constraint_mask(r->constraint, e->grammars);
    }
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
    int done = -1, grammar = constrain(e, r, tok); /* or an ember_finish */
    if (stop < 0) done = EMBER_FINISH_ERROR, r->m.error = "out of memory for the request's text";
    else if (grammar == EMBER_FINISH_ERROR) done = grammar;
    else if (stop > 0) done = EMBER_FINISH_STOP;
    else if (!r->ignore_eos && ember_tokenizer_is_eog(e->model->tok, tok)) done = EMBER_FINISH_EOS;
    else if (grammar >= 0) done = grammar;
    else if (r->m.n_gen >= r->max_tokens) done = EMBER_FINISH_LENGTH;
    else if (r->n_tokens >= e->model->llama.hp.ctx_len) done = EMBER_FINISH_CONTEXT;
    if (done >= 0) ember_text_finish(r->out);
    const char *text;
    size_t len = ember_text_take(r->out, &text);
    if (r->on_token && r->on_token(r->user, r->id, tok, text, len) != 0 && done < 0) done = EMBER_FINISH_CANCELLED;
    if (done < 0) return false;
    finish(e, r, (ember_finish)done);
    return true;
}

/* What became of a row that wanted candidates, once draw_candidates ran (buf.want). */
enum { ROW_DRAWN = 0x10, ROW_FETCHED = 0x11, ROW_UNREAD = 0x12 };

/* The draws the rows' candidates decide, before anything is delivered (buf.drawn); the
 * rows of the others are then fetched together, one submission on a discrete GPU. */
static void draw_candidates(ember_engine *e, uint32_t n_items)
{
    uint8_t *want = e->buf.want;
    uint32_t n = 0, *fetch = e->fetch; /* a row per item at most: speculative items read rows */
    for (uint32_t i = 0; i < n_items; i++) {
        const ember_sched_item *it = &e->items[i];
        uint32_t row = e->row_of[i];
        if (!it->r || !it->logits || want[row] != EMBER_WANT_CANDS || it->r->greedy) continue;
        bool drawn = ember_sampler_sample_candidates(it->r->sampler, &e->buf.cands[row], NULL, &e->buf.drawn[row]);
        want[row] = drawn ? ROW_DRAWN : ROW_FETCHED;
        if (!drawn) fetch[n++] = row;
    }
    if (n == 0) return;
    e->pstep.readback_bytes += (uint64_t)n * e->model->llama.hp.n_vocab * sizeof(float);
    if (ember_step_fetch_logits(e->step, fetch, n, e->buf.logits, &e->step_err) != EMBER_OK)
        for (uint32_t i = 0; i < n; i++) want[fetch[i]] = ROW_UNREAD;
}

/* r's next token from logits row `row`: drawn from its candidates, or from the whole row
 * (the step's, or fetched by draw_candidates). */
static ember_status sample_row(ember_engine *e, request *r, uint32_t row, uint32_t *tok)
{
    float *logits = e->buf.logits + (size_t)row * e->model->llama.hp.n_vocab;
    if (r->constraint) {
        if (ember_constraint_failure(r->constraint)) return EMBER_ERR_INVALID_ARG;
        ember_constraint_apply(r->constraint, 0, logits, !r->ignore_eos);
    }
    switch (e->buf.want[row]) {
    case ROW_DRAWN: *tok = e->buf.drawn[row], e->sampled_cands++; return EMBER_OK;
    case ROW_UNREAD: return EMBER_ERR_DEVICE_LOST; /* the message is in step_err */
    case ROW_FETCHED: ember_sampler_sample_candidates(r->sampler, &e->buf.cands[row], logits, tok); break;
    default: *tok = ember_sampler_sample(r->sampler, logits); break;
    }
    e->sampled_rows++;
    return EMBER_OK;
}

/* What row `row` says of r's tokens, before a grammar's mask touches it: from its
 * candidates where it has them, else from the whole row. */
static void row_logprobs(ember_engine *e, const request *r, uint32_t row, ember_row_logprobs *lp)
{
    uint8_t want = e->buf.want[row];
    if (want == EMBER_WANT_CANDS || want == ROW_DRAWN)
        ember_logprobs_of_cands(&e->buf.cands[row], r->top_logprobs, lp);
    else
        ember_logprobs_of_row(e->buf.logits + (size_t)row * e->model->llama.hp.n_vocab, e->model->llama.hp.n_vocab,
                              r->top_logprobs, lp);
}

/* Hands r the log-probabilities of tok, drawn from row `row` (lp from row_logprobs). A
 * grammar's mask leaves the logit of a token it allows, as tok is, unchanged. */
static void give_logprobs(ember_engine *e, request *r, uint32_t row, ember_row_logprobs *lp, uint32_t tok)
{
    uint8_t want = e->buf.want[row];
    float logit = NAN;
    if (want == EMBER_WANT_CANDS || want == ROW_DRAWN) ember_logprobs_cand_logit(&e->buf.cands[row], tok, &logit);
    else logit = e->buf.logits[(size_t)row * e->model->llama.hp.n_vocab + tok];
    ember_logprobs_pick(lp, tok, logit);
    r->on_logprobs(r->user, r->id, &lp->lp);
}

/* Verifies a speculative item and delivers what was kept. */
static void finish_speculation(ember_engine *e, request *r, uint32_t row, double t)
{
    uint32_t out[EMBER_MAX_DRAFT + 1];
    ember_row_logprobs lp[EMBER_MAX_DRAFT + 1];
    for (uint32_t j = 0; r->on_logprobs && j <= r->n_draft; j++) row_logprobs(e, r, row + j, &lp[j]);
    uint32_t n_out = ember_spec_verify(e->spec, e->sched, r, &e->buf, row, out);
    for (uint32_t j = 0; j < n_out; j++) {
        if (r->on_logprobs) give_logprobs(e, r, row + j, &lp[j], out[j]);
        if (emit(e, r, out[j], t)) return; /* finished: r is gone */
    }
}

/* The log-probabilities of the prompt tokens item it computed (rows row.. on, a row per
 * token: row j predicts the token after it), in order from the first still due. */
static void give_prompt_logprobs(ember_engine *e, request *r, const ember_sched_item *it, uint32_t row)
{
    ember_row_logprobs lp = {0};
    uint32_t pos0 = r->n_computed, V = e->model->llama.hp.n_vocab;
    if (r->prompt_lp_next == 0) { /* nothing predicts the first */
        lp.lp.chosen = (ember_token_logprob){r->tokens[0], NAN};
        r->on_prompt_logprobs(r->user, r->id, &lp.lp);
        r->prompt_lp_next = 1;
    }
    for (uint32_t j = 0; j < it->n; j++) {
        uint32_t q = pos0 + j + 1; /* the position row j predicts */
        if (q >= r->n_prompt || q != r->prompt_lp_next) continue;
        const float *logits = e->buf.logits + (size_t)(row + j) * V;
        ember_logprobs_of_row(logits, V, r->top_logprobs, &lp);
        ember_logprobs_pick(&lp, r->tokens[q], logits[r->tokens[q]]);
        r->on_prompt_logprobs(r->user, r->id, &lp.lp);
        r->prompt_lp_next++;
    }
}

/* Pools the hidden states item it computed for r (from hidden row *h of the step on,
 * advancing *h past them): mean sums, cls and last keep theirs. A position already
 * pooled (recomputed after a preemption) is not pooled again. */
static void pool_hidden(ember_engine *e, request *r, const ember_sched_item *it, uint32_t *h)
{
    uint32_t dim = e->model->llama.hp.dim, pos0 = r->n_computed;
    for (uint32_t j = 0; j < it->n; j++) {
        uint32_t pos = pos0 + j;
        if (!hidden_wanted(r, pos)) continue;
        const float *v = e->buf.hidden + (size_t)(*h)++ * dim;
        if (pos < r->embed_next) continue;
        r->embed_next = pos + 1;
        for (uint32_t i = 0; i < dim; i++) r->embedding[i] = r->pooling == EMBER_POOLING_MEAN ? r->embedding[i] + v[i] : v[i];
    }
}

/* r's embedding, once its whole prompt is pooled: the mean's sum divided, L2-normalised
 * (a zero vector stays zero), handed over. */
static void give_embedding(ember_engine *e, request *r)
{
    uint32_t dim = e->model->llama.hp.dim;
    double norm = 0, scale = r->pooling == EMBER_POOLING_MEAN ? 1.0 / r->n_prompt : 1.0;
    for (uint32_t i = 0; i < dim; i++) norm += (double)r->embedding[i] * scale * r->embedding[i] * scale;
    double k = norm > 0 ? scale / sqrt(norm) : 0;
    for (uint32_t i = 0; i < dim; i++) r->embedding[i] = (float)(r->embedding[i] * k);
    r->on_embedding(r->user, r->id, r->embedding, dim);
}

/* r's block table as local slots (EMBER_NO_BLOCK where it dropped them), for moving its
 * K/V; NULL without local slots. */
static const uint32_t *local_row(ember_engine *e, const request *r)
{
    if (!e->n_local) return NULL;
    for (uint32_t j = 0; j < r->n_blocks; j++) e->local_row[j] = ember_kv_local(e->kv, r->blocks[j]);
    return e->local_row;
}

/* Hands r the KV state of its prompt (tokens and K/V read back from its blocks); false
 * when that failed (r's error then says why). */
static bool give_state(ember_engine *e, request *r)
{
    const ember_hparams *hp = &e->model->llama.hp;
    ember_kv_state st = {.model = {e->model->fingerprint, hp->n_layers, hp->n_kv_heads, hp->head_dim, hp->n_vocab},
                         .kv_type = e->o.kv_type, .n_tokens = r->n_prompt, .n_kv = r->n_prompt, .tokens = r->tokens};
    size_t size = ember_kv_state_size(&st);
    uint8_t *rows = ember_malloc(ember_kv_state_kv_bytes(&st) + 1), *buf = ember_malloc(size + 1);
    r->state_saved = true;
    double t0 = ember_now_ms();
    bool ok = rows && buf && size &&
              ember_step_transfer_kv(e->step, r->blocks, local_row(e, r), 0, r->n_prompt, rows, r->n_prompt, false,
                                     &e->step_err) == EMBER_OK;
    if (ok) {
        st.kv = rows;
        ember_kv_state_write(&st, buf);
        e->state_s += (ember_now_ms() - t0) / 1e3;
        e->states_saved++;
        e->state_bytes_saved += size;
        r->on_state(r->user, r->id, buf, size);
    } else {
        r->m.error = rows && buf ? "the KV state could not be read back from the device" : "out of memory for the KV state";
    }
    ember_free(rows);
    ember_free(buf);
    return ok;
}

static void after_step(ember_engine *e, uint32_t n_items, double t0, double t1)
{
    draw_candidates(e, n_items);
    uint32_t h = 0; /* the step's hidden rows, in item order */
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
        if (r->on_embedding) pool_hidden(e, r, it, &h);
        if (r->n_computed < r->n_prompt) r->m.prefill_ms += t1 - t0;
        else r->m.decode_ms += t1 - t0;
        if (r->m.n_gen) r->m.n_decode_steps++;
        if (r->n_draft) {
            finish_speculation(e, r, row, t1);
            continue;
        }
        bool prompt = prompt_rows(it);
        if (prompt) give_prompt_logprobs(e, r, it, row), row += it->n - 1; /* the last row: the reply's */
        ember_sched_advance(e->sched, r, it->n);
        if (r->on_state && !r->state_saved && r->n_computed >= r->n_prompt && !give_state(e, r)) {
            finish(e, r, EMBER_FINISH_ERROR);
            continue;
        }
        if (r->prompt_only && r->n_computed >= r->n_prompt) {
            if (r->on_embedding) give_embedding(e, r);
            ember_text_finish(r->out);
            finish(e, r, EMBER_FINISH_LENGTH);
            continue;
        }
        if (!it->logits) continue;
        uint32_t tok = e->buf.argmax[row];
        ember_row_logprobs lp;
        if (r->on_logprobs && e->buf.want[row] != ROW_UNREAD) row_logprobs(e, r, row, &lp);
        if (!r->greedy && sample_row(e, r, row, &tok) != EMBER_OK) {
            if (r->constraint) r->m.error = ember_constraint_failure(r->constraint);
            finish(e, r, EMBER_FINISH_ERROR); /* its error: the grammar's, else step_err's */
            continue;
        }
        if (r->on_logprobs) give_logprobs(e, r, row, &lp, tok);
        emit(e, r, tok, t1);
    }
}

/* The K/V that KV states give the requests admitted this step (request.h), written into
 * their blocks after the copies on write (a copied block may be the one a state's first
 * positions go into) and published for the prefix cache once written. */
static ember_status apply_restores(ember_engine *e, uint32_t n_items)
{
    for (uint32_t i = 0; i < n_items; i++) {
        request *r = e->items[i].r;
        if (!r || r->restore_to <= r->restore_from) continue;
        double t0 = ember_now_ms();
        ember_status s = ember_step_transfer_kv(e->step, r->blocks, local_row(e, r), r->restore_from, r->restore_to,
                                                r->restore_rows, r->restore_pos, true, &e->step_err);
        if (s != EMBER_OK) return s;
        e->state_s += (ember_now_ms() - t0) / 1e3;
        e->states_restored++;
        e->state_bytes_restored += r->state_bytes;
        e->state_positions += r->restore_to - r->restore_from;
        r->m.n_restored = r->restore_to - r->restore_from;
        r->restore_to = r->restore_from = 0;
        ember_sched_advance(e->sched, r, 0);
    }
    return EMBER_OK;
}

/* The copies on write the scheduler planned, in the target's and the draft's KV pools
 * (they share block ids), before anything of the step writes; with local slots, the
 * slots' copies too. */
static ember_status apply_copies(ember_engine *e)
{
    const uint32_t *src, *dst;
    uint32_t n = ember_sched_copies(e->sched, &src, &dst), *lsrc = e->copy_local, *ldst = lsrc + e->o.max_seqs;
    e->pstep.submissions += n > 0;
    ember_kv_local_row(e->kv, src, n, lsrc);
    ember_kv_local_row(e->kv, dst, n, ldst);
    for (uint32_t i = 0; e->n_local && i < n; i++)
        if (ember_kv_local(e->kv, src[i]) == EMBER_NO_BLOCK) lsrc[i] = EMBER_NO_BLOCK; /* nobody's window */
    ember_status s = n ? ember_step_copy_blocks(e->step, src, dst, e->n_local ? lsrc : NULL, e->n_local ? ldst : NULL,
                                                n, &e->step_err)
                       : EMBER_OK;
    if (s == EMBER_OK) s = ember_spec_copy_blocks(e->spec, src, dst, n, &e->step_err);
    return s;
}

static void fail_items(ember_engine *e, uint32_t n_items)
{
    for (uint32_t i = 0; i < n_items; i++)
        if (e->items[i].r) finish(e, e->items[i].r, EMBER_FINISH_ERROR);
}

/* A step that failed: its requests end with an error, or, when the device was lost,
 * every request does. The engine shows itself lost (stats) and its message says why
 * (ember_engine_copy_error) before any done callback runs, so that a callback can tell
 * its client. */
static void fail_step(ember_engine *e, uint32_t n_items, ember_status s)
{
    if (s == EMBER_ERR_DEVICE_LOST) {
        lose_device(e);
    } else {
        ember_inbox_store_error(e->inbox, &e->err, &e->step_err);
        fail_items(e, n_items);
    }
}

/* The device is gone for good (for real or by ember_model_inject_faults): every request
 * still pending ends with an error now, since no later step could run it, and the inbox
 * refuses new ones. The handles stay valid for destruction. */
static void lose_device(ember_engine *e)
{
    e->lost = true;
    publish_stats(e);
    ember_fail_ctx(&e->step_err, EMBER_ERR_DEVICE_LOST, LOST);
    ember_inbox_store_error(e->inbox, &e->err, &e->step_err);
    ember_inbox_close(e->inbox, EMBER_ERR_DEVICE_LOST);
    bool cancels;
    take_inbox(e, &cancels);
    for (request *r; (r = first_running(e));) finish(e, r, EMBER_FINISH_ERROR);
    for (request *r; (r = ember_sched_waiting(e->sched));) finish(e, r, EMBER_FINISH_ERROR);
    publish_stats(e);
}

/* The first half of a step: plan, then hand the batch to the device. */
static ember_status begin_step(ember_engine *e)
{
    if (e->lost)
        return report(e, ember_fail(&e->step_err, EMBER_ERR_DEVICE_LOST, LOST));
    double t_begin = e->prof ? ember_now_ms() : 0;
    e->pstep = (ember_profiler_step){0};
    bool cancels;
    take_inbox(e, &cancels);
    if (cancels) drop_cancelled(e);
    ember_status s = budgeted(e) || e->kv_now != e->o.kv_blocks ? apply_budget(e) : EMBER_OK;
    if (s != EMBER_OK) return report(e, s);
    uint32_t n_stuck = 0;
    ember_sched_set_reserve(e->sched, ember_spec_reserve(e->sched));
    uint32_t n_items = ember_sched_plan(e->sched, e->items, e->stuck, &n_stuck);
    for (uint32_t i = 0; i < n_stuck; i++) { /* alone and still out of blocks */
        ember_text_finish(e->stuck[i]->out);
        finish(e, e->stuck[i], EMBER_FINISH_KV_FULL);
    }
    publish_stats(e); /* what was taken from the inbox shows as waiting or running */
    if (!n_items) return EMBER_IDLE;
    double t0 = ember_now_ms();
    for (uint32_t i = 0; i < n_items; i++) {
        request *r = e->items[i].r;
        if (r && r->t_first_sched == 0) {
            r->t_first_sched = t0;
            r->m.queue_ms = t0 - r->t_submit;
        }
    }
    s = apply_copies(e);
    if (s == EMBER_OK) s = apply_restores(e, n_items);
    if (s == EMBER_OK) s = ember_spec_propose(e->spec, e->sched, e->items, n_items, &e->buf, &e->step_err);
    if (s == EMBER_OK) s = submit_items(e, n_items);
    if (s != EMBER_OK) {
        fail_step(e, n_items, s);
        publish_stats(e);
        return report(e, s);
    }
    make_masks(e, n_items);
    e->in_flight = true;
    e->n_items = n_items;
    e->t0 = t0;
    if (e->prof) e->pstep.host_ms = ember_now_ms() - t_begin;
    return EMBER_OK;
}

/* Adds the step just delivered to the profile, with the host time it took after the wait. */
static void profile_step(ember_engine *e, double host_after_ms)
{
    ember_profiler_step *p = &e->pstep;
    p->host_ms += host_after_ms;
    p->n = ember_step_profile(e->step, &p->d, &p->barriers, &p->gpu_ns);
    ember_profiler_add(e->prof, p);
}

/* The second half: wait for the device at most timeout_ns, then deliver. */
static ember_status end_step(ember_engine *e, uint64_t timeout_ns)
{
    if (!e->in_flight) return EMBER_IDLE;
    ember_status s = ember_step_wait(e->step, timeout_ns, &e->step_err);
    if (s == EMBER_NOT_READY) return s;
    e->in_flight = false;
    if (s == EMBER_OK) {
        e->steps++;
        double t1 = ember_now_ms();
        after_step(e, e->n_items, e->t0, t1);
        ember_sched_end_step(e->sched);
        if (ember_kv_n_local_used(e->kv) > e->local_peak) e->local_peak = ember_kv_n_local_used(e->kv);
        if (e->prof) profile_step(e, ember_now_ms() - t1);
    } else {
        fail_step(e, e->n_items, s);
    }
    publish_stats(e);
    return report(e, s);
}

ember_status ember_engine_sync_next_step(ember_engine *e, void *timeline, uint64_t wait_value,
                                        uint64_t signal_value)
{
    ember_mutex_lock(&e->step_mu);
    ember_status s = ember_step_sync_next(e->step, timeline, wait_value, signal_value, &e->step_err);
    ember_mutex_unlock(&e->step_mu);
    return report(e, s);
}

ember_status ember_engine_step_begin(ember_engine *e)
{
    ember_mutex_lock(&e->step_mu);
    ember_status s = e->in_flight ? EMBER_NOT_READY : begin_step(e);
    ember_mutex_unlock(&e->step_mu);
    return s;
}

static uint64_t us_to_ns(uint64_t us) { return us >= UINT64_MAX / 1000 ? UINT64_MAX : us * 1000; }

ember_status ember_engine_step_end(ember_engine *e, uint64_t timeout_us)
{
    ember_mutex_lock(&e->step_mu);
    ember_status s = end_step(e, us_to_ns(timeout_us));
    ember_mutex_unlock(&e->step_mu);
    return s;
}

ember_status ember_engine_step(ember_engine *e)
{
    ember_mutex_lock(&e->step_mu);
    ember_status s = EMBER_OK;
    if (e->in_flight) s = end_step(e, UINT64_MAX); /* a step begun without its end */
    if (s >= EMBER_OK) s = begin_step(e);
    if (s == EMBER_OK) s = end_step(e, UINT64_MAX);
    ember_mutex_unlock(&e->step_mu);
    return s;
}

/* Finishes what is ready and starts the next step, while the budget lasts. After a
 * finished step the next one starts at once, so that the device works between frames. */
ember_status ember_engine_run_for(ember_engine *e, double budget_ms)
{
    double deadline = ember_now_ms() + (budget_ms > 0 ? budget_ms : 0);
    bool did = false;
    ember_mutex_lock(&e->step_mu);
    ember_status s = EMBER_OK;
    for (;;) {
        if (e->in_flight) {
            double left = deadline - ember_now_ms();
            s = end_step(e, left > 0 ? (uint64_t)(left * 1e6) : 0);
            if (s == EMBER_NOT_READY || s < 0) break;
            did = true;
        }
        s = begin_step(e);
        if (s != EMBER_OK) break; /* EMBER_IDLE or an error */
        did = true;
        if (ember_now_ms() >= deadline) break;
    }
    bool busy = e->in_flight; /* read under the lock: another thread may step next */
    ember_mutex_unlock(&e->step_mu);
    if (s < 0) return s;
    if (busy || s == EMBER_OK) return did ? EMBER_OK : EMBER_NOT_READY;
    return did ? EMBER_OK : EMBER_IDLE;
}

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

/* The snapshot other threads read: taken by the stepping thread after every change. */
static void publish_stats(ember_engine *e)
{
    const ember_sched_stats *ss = ember_sched_get_stats(e->sched);
    const ember_hparams *hp = &e->model->llama.hp;
    uint32_t n_run, n_wait = 0;
    ember_sched_running(e->sched, &n_run);
    for (request *r = ember_sched_waiting(e->sched); r; r = r->next) n_wait++;
    ember_engine_stats st = {
        .kv_block_size = e->o.kv_block_size, .kv_blocks_total = e->kv_now,
        .kv_blocks_used = ember_kv_n_used(e->kv), .kv_peak_blocks_used = ss->peak_blocks,
        .kv_peak_tokens = (uint64_t)llround(ss->peak_fill * ss->peak_blocks * e->o.kv_block_size),
        .prefix_hit_tokens = ss->prefix_hit_tokens, .preemptions = ss->preemptions,
        .steps = e->steps, .tokens_computed = e->tokens_computed, .padding_tokens = e->filler_tokens,
        .cow_copies = ss->cow_copies,
        .sampled_from_candidates = e->sampled_cands, .sampled_from_rows = e->sampled_rows,
        .kv_states_saved = e->states_saved, .kv_states_restored = e->states_restored,
        .kv_state_bytes_saved = e->state_bytes_saved, .kv_state_bytes_restored = e->state_bytes_restored,
        .kv_state_positions_restored = e->state_positions, .kv_state_transfer_s = e->state_s,
        .kv_type = e->o.kv_type,
        .kv_bytes_per_token = kv_token_bytes(hp, e->o.kv_type),
        .requests_running = n_run, .requests_waiting = n_wait, .kv_blocks_max = e->o.kv_blocks,
        .device_lost = e->lost, .kv_window = e->window, .kv_local_slots = e->n_local,
        .kv_local_slots_used = ember_kv_n_local_used(e->kv), .kv_local_peak_used = e->local_peak};
    ember_inbox_publish(e->inbox, &st);
}

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

static request *first_running(ember_engine *e)
{
    uint32_t n;
    request **run = ember_sched_running(e->sched, &n);
    return n ? run[0] : NULL;
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
    if (e->in_flight) end_step(e, UINT64_MAX); /* its tokens are delivered, then all is cancelled */
    bool cancels;
    if (e->sched && e->inbox) take_inbox(e, &cancels);
    for (request *r; e->sched && (r = first_running(e));) finish(e, r, EMBER_FINISH_CANCELLED);
    for (request *r; e->sched && (r = ember_sched_waiting(e->sched));) finish(e, r, EMBER_FINISH_CANCELLED);
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

