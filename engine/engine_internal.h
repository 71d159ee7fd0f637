/* engine_internal.h — the engine object, shared by engine.c (requests, steps, threads)
 * and engine_spec.c (speculative decoding). Library-internal. */
#ifndef EMBER_ENGINE_INTERNAL_H
#define EMBER_ENGINE_INTERNAL_H

#include <pthread.h>

#include "engine/gpu/forward.h"
#include "kv_layout.h"
#include "model_handle.h"
#include "scheduler.h"

struct ember_engine {
    ember_err err;
    ember_model *model;
    ember_engine_opts o;
    uint32_t max_blocks_per_seq;
    ember_forward *fwd;           /* NULL for the CPU backend */
    ember_model *draft;           /* borrowed draft model, or NULL */
    ember_forward *draft_fwd;     /* its forward pass (same block ids as the target) */
    ember_kv_cache *kv;
    ember_sched *sched;
    ember_request_id next_id;
    uint32_t n_pending;
    /* step scratch */
    ember_sched_item *items;
    request **stuck;
    uint32_t *tokens, *pos, *seq, *rows, *argmax, *block_tables; /* max_batch_tokens + spare */
    uint32_t *row_of;             /* per item: its first logits row */
    float *logits;                /* logits_rows rows of n_vocab, grown on demand */
    uint32_t logits_rows;
    float *probs, *scratch;       /* speculation: (EMBER_MAX_DRAFT + 1) rows, and one row */
    uint64_t steps, tokens_computed;
    uint64_t padding_tokens;      /* static batching: tokens of padding rows (in tokens_computed) */
    /* threading */
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    pthread_t worker;
    bool worker_running, stop;
};

/* Token rows a step may hold beyond max_batch_tokens: a draft model's catch-up. */
#define EMBER_STEP_SPARE(max_seqs) (2u * (max_seqs))

double ember_now_ms(void);
/* Makes room for rows logits rows; false when out of memory. */
bool ember_engine_logits_room(ember_engine *e, uint32_t rows);
/* Appends token tok to r and hands out its text; returns true when r finished (it was
 * freed, or under static batching became a padding row: either way the caller must not
 * treat it as a request any more). */
bool ember_engine_emit(ember_engine *e, request *r, uint32_t tok, double t);

/* engine_spec.c */
/* Checks the draft model against the target and creates its forward pass. */
ember_status ember_spec_init(ember_engine *e);
/* Tokens of the next step's budget that speculating decoders want. */
uint32_t ember_spec_reserve(ember_engine *e);
/* Places drafts after the planned decode items (extending them) and keeps the draft
 * model in step with the target's prompt chunks. */
ember_status ember_spec_propose(ember_engine *e, uint32_t n_items);
/* Verifies a speculative item whose k+1 rows of logits/argmax start at row; emits the
 * kept tokens. */
void ember_spec_finish(ember_engine *e, ember_sched_item *it, uint32_t row, double t);

#endif
