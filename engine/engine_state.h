/* engine_state.h — the state of an ember_engine, shared by the files of the engine
 * (engine.c: creation, requests, the worker, teardown; engine_step.c: one step;
 * engine_budget.c: the KV pool under a memory budget; engine_finish.c: how requests end).
 * Library-internal, fields only. Every field belongs to the thread stepping the engine
 * except the inbox, which is the only part other threads touch (engine.c). */
#ifndef EMBER_ENGINE_STATE_H
#define EMBER_ENGINE_STATE_H

#include "batch.h"
#include "engine/grammar/constraint.h"
#include "engine/speculative/engine_spec.h"
#include "inbox.h"
#include "platform/os_thread.h"
#include "profile.h"
#include "scheduler.h"
#include "static_batch.h"
#include "step.h"

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

#endif
