/* scheduler.h — who computes what in the next step (library-internal).
 *
 * Every step: running sequences that decode get their next token first (oldest first);
 * running sequences still in their prompt get chunks from what is left of the token
 * budget (chunked prefill); then waiting requests are admitted, in order, while sequence
 * slots, budget and KV blocks allow — taking any cached blocks of their prefix. When a
 * decoding sequence needs a block and none is left, the most recently admitted sequence
 * is preempted: its blocks are released and it goes back to the head of the queue, to
 * be recomputed (prompt and generated tokens) when it is admitted again. */
#ifndef EMBER_SCHEDULER_H
#define EMBER_SCHEDULER_H

#include "kv_cache.h"
#include "request.h"

typedef struct ember_sched_opts {
    uint32_t max_seqs, max_batch_tokens, max_blocks_per_seq;
    bool prefix_cache;     /* share full blocks between requests */
    bool static_batching;  /* admit only when nothing runs (baseline) */
    bool contiguous_kv;    /* reserve max_blocks_per_seq blocks at admission (baseline) */
} ember_sched_opts;

typedef struct ember_sched_item {
    request *r;
    uint32_t n;            /* tokens [r->n_computed, r->n_computed + n) this step */
    bool logits;           /* the chunk ends the known tokens: sample after it */
} ember_sched_item;

typedef struct ember_sched_stats {
    uint64_t preemptions, prefix_hit_tokens;
    uint32_t peak_blocks;          /* most blocks in use after a step */
    double peak_fill;              /* fraction of those blocks' slots holding tokens */
} ember_sched_stats;

typedef struct ember_sched ember_sched;

ember_status ember_sched_create(const ember_sched_opts *o, ember_kv_cache *kv, ember_sched **out,
                                ember_err *err);
void ember_sched_free(ember_sched *s);

/* Appends r to the waiting queue. */
void ember_sched_enqueue(ember_sched *s, request *r);
/* Plans one step into items (room for max_seqs); returns the count. Requests that can
 * never get a KV block (alone and the pool is exhausted) are put in *stuck (room for
 * max_seqs, count in *n_stuck) for the caller to finish. */
uint32_t ember_sched_plan(ember_sched *s, ember_sched_item *items, request **stuck, uint32_t *n_stuck);
/* Records that n more tokens of r were computed; publishes newly full blocks. */
void ember_sched_advance(ember_sched *s, request *r, uint32_t n);
/* Call after the step's advances: updates the peak statistics. */
void ember_sched_end_step(ember_sched *s);
/* Takes r out of the queue or the running set and releases its blocks. */
void ember_sched_remove(ember_sched *s, request *r);

/* Keeps tokens of the next plan's budget free (for speculative drafts). */
void ember_sched_set_reserve(ember_sched *s, uint32_t tokens);
/* Grows r's blocks towards covering positions [0, end) without preempting anyone;
 * returns the end actually covered. */
uint32_t ember_sched_extend(ember_sched *s, request *r, uint32_t end);
/* Releases r's blocks past the one holding position n_computed (rejected drafts). */
void ember_sched_trim(ember_sched *s, request *r);

/* Running requests (slot order not guaranteed) and the waiting queue's head. */
request **ember_sched_running(ember_sched *s, uint32_t *n);
request *ember_sched_waiting(ember_sched *s);
const ember_sched_stats *ember_sched_get_stats(const ember_sched *s);

#endif
