/* scheduler.h — who computes what in the next step (library-internal).
 *
 * One rule, as in vLLM v1: every request's computed tokens catch up with its tokens, as
 * far as the step's token budget and the KV blocks allow; running requests first, then
 * waiting ones in order. Within the running ones, decoders (one token left) go before
 * prompt chunks, so that a decoder never waits behind a prompt (chunked prefill). A
 * waiting request is admitted with the cached blocks of its prefix (prefix caching; a
 * block shared that way is copied before the request writes into it). When a decoder
 * needs a block and none is left, the most recently admitted request is preempted: its
 * blocks are released and it goes back to the head of the queue, to be recomputed
 * (prompt and generated tokens) when it is admitted again.
 *
 * A batching baseline (static batching, static_batch.c) plugs in through one hook,
 * ember_sched_hook: it plans the step itself from the phases below and may hold slots
 * and blocks of its own. Continuous batching has no hook. */
#ifndef EMBER_SCHEDULER_H
#define EMBER_SCHEDULER_H

#include "kv_cache.h"
#include "request.h"

typedef struct ember_sched ember_sched;

/* One piece of a step: rows of a request, or filler rows of the hook. */
typedef struct ember_sched_item {
    request *r;            /* whose tokens [r->n_computed, r->n_computed + n) run; NULL:
                              filler rows (fill, below), computed and never delivered */
    uint32_t n;            /* rows */
    bool logits;           /* a logits row after the last: r samples its next token;
                              filler rows write its argmax to *fill.next */
    struct {
        uint32_t slot, pos0, token; /* n copies of token at positions pos0.. of slot */
        const uint32_t *blocks;     /* the slot's block table, n_blocks entries */
        uint32_t n_blocks;
        uint32_t *next;             /* where the argmax of the logits row goes */
    } fill;
} ember_sched_item;

/* The one seam of a batching baseline. ctx is the hook's own. */
typedef struct ember_sched_hook {
    void *ctx;
    /* Plans the step in place of continuous batching, from the phases below. */
    uint32_t (*plan)(void *ctx, ember_sched *s, ember_sched_item *items, request **stuck, uint32_t *n_stuck);
    /* r, running, has finished: true when the hook keeps its slot and blocks (they are
     * then the hook's, handed back with ember_sched_release_slot and ember_kv_release). */
    bool (*keep)(void *ctx, ember_sched *s, request *r);
    /* A request left the running set (finished, cancelled or preempted). */
    void (*left)(void *ctx, ember_sched *s);
    /* The pool ran out of blocks: give some of the hook's back; false when it has none. */
    bool (*reclaim)(void *ctx, ember_sched *s);
    /* Adds the hook's rows to the peak-fill statistics (ember_kv_count_fill). */
    void (*count_fill)(void *ctx, const ember_kv_cache *kv, double *filled, double *slots);
} ember_sched_hook;

typedef struct ember_sched_opts {
    uint32_t max_seqs, max_batch_tokens, max_blocks_per_seq;
    bool prefix_cache;     /* share published blocks between requests */
    bool contiguous_kv;    /* reserve max_blocks_per_seq blocks at admission (baseline) */
    uint32_t chunk_ctx;    /* a prompt row at position p costs 1 + p / chunk_ctx (0: 1) */
    uint32_t window;       /* the model's sliding window, for a pool with local slots: a
                              request drops the local part of each block behind the
                              window of its next query (0: none; not with a hook) */
    const ember_sched_hook *hook; /* a batching baseline, or NULL (continuous batching) */
} ember_sched_opts;

typedef struct ember_sched_stats {
    uint64_t preemptions, prefix_hit_tokens;
    uint64_t cow_copies;           /* shared blocks copied before a write */
    uint32_t peak_blocks;          /* most blocks in use after a step */
    double peak_fill;              /* fraction of those blocks' slots holding tokens */
} ember_sched_stats;

ember_status ember_sched_create(const ember_sched_opts *o, ember_kv_cache *kv, ember_sched **out,
                                ember_err *err);
void ember_sched_free(ember_sched *s);

/* Appends r to the waiting queue. */
void ember_sched_enqueue(ember_sched *s, request *r);
/* Plans one step into items (room for 2 * max_seqs); returns the count. Requests that
 * can never get a KV block (alone and the pool is exhausted) are put in *stuck (room for
 * max_seqs, count in *n_stuck) for the caller to finish. */
uint32_t ember_sched_plan(ember_sched *s, ember_sched_item *items, request **stuck, uint32_t *n_stuck);
/* The block copies (copy on write) the step just planned needs before it runs, in every
 * layer's K and V: src[i] -> dst[i]; returns their count. Valid until the next plan. */
uint32_t ember_sched_copies(const ember_sched *s, const uint32_t **src, const uint32_t **dst);
/* Records that n more tokens of r were computed; publishes newly full blocks. */
void ember_sched_advance(ember_sched *s, request *r, uint32_t n);
/* Call after the step's advances: updates the peak statistics. */
void ember_sched_end_step(ember_sched *s);
/* Takes r out of the queue or the running set (finished or cancelled) and releases its
 * blocks, publishing the partly filled last one for prefix caching — unless the hook
 * keeps them. */
void ember_sched_remove(ember_sched *s, request *r);

/* Keeps tokens of the next plan's budget free (for speculative drafts). */
void ember_sched_set_reserve(ember_sched *s, uint32_t tokens);
/* Grows r's blocks towards covering positions [0, end) without preempting anyone or
 * asking the hook; returns the end actually covered. */
uint32_t ember_sched_extend(ember_sched *s, request *r, uint32_t end);
/* Releases r's blocks past the one holding position n_computed (rejected drafts). */
void ember_sched_trim(ember_sched *s, request *r);

/* Running requests in admission order, and the waiting queue's head. */
/* For a pool that shrinks: preempts the newest running request (false when none runs);
 * rename_blocks gives every block the running requests hold its new id, map[old]
 * (ember_kv_resize's map). */
bool ember_sched_preempt_newest(ember_sched *s);
void ember_sched_rename_blocks(ember_sched *s, const uint32_t *map);

request **ember_sched_running(ember_sched *s, uint32_t *n);
request *ember_sched_waiting(ember_sched *s);
const ember_sched_stats *ember_sched_get_stats(const ember_sched *s);

/* ---- the phases of a plan, for the hook ------------------------------------------------ */

/* The step's token budget: max_batch_tokens less the reserve and keep, but at least one
 * token for each running request. */
uint32_t ember_sched_budget(const ember_sched *s, uint32_t keep);
/* Running requests catch up (decoders, then prompt chunks) into items[n_items..] from
 * *budget; returns the new count. prefill_only: requests past their prefill do not
 * decode, and since no decoder will free a block, a prompt chunk that finds none
 * preempts the newest requests as a decoder would (a fixed-shape batch's prefill). */
uint32_t ember_sched_plan_running(ember_sched *s, ember_sched_item *items, uint32_t n_items, uint32_t *budget,
                                  request **stuck, uint32_t *n_stuck, bool prefill_only);
/* Admits waiting requests in order while slots, *budget and blocks allow, each with its
 * first chunk as an item; returns the new count. */
uint32_t ember_sched_admit(ember_sched *s, ember_sched_item *items, uint32_t n_items, uint32_t *budget);
/* Sequence slots not held by a running request or by the hook. */
uint32_t ember_sched_free_slots(const ember_sched *s);
/* Hands back a slot the hook kept. */
void ember_sched_release_slot(ember_sched *s, uint32_t slot);

#endif
