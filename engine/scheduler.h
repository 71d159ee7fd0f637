/* scheduler.h — who computes what in the next step (library-internal).
 *
 * Every step: running sequences that decode get their next token first (oldest first);
 * running sequences still in their prompt get chunks from what is left of the token
 * budget (chunked prefill); then waiting requests are admitted, in order, while sequence
 * slots, budget and KV blocks allow — taking any cached blocks of their prefix (a block
 * shared that way is copied before the request writes into it). When a
 * decoding sequence needs a block and none is left, the most recently admitted sequence
 * is preempted: its blocks are released and it goes back to the head of the queue, to
 * be recomputed (prompt and generated tokens) when it is admitted again.
 *
 * Static batching (the baseline continuous batching is measured against) runs a
 * fixed-shape batch: it forms when nothing runs, nobody joins until it ends, and a member
 * that finishes stays in it as a padding row (ember_sched_pad) that computes one
 * throw-away token per step until the batch's last member finishes. With pad_prompts the
 * prefill has the fixed shape too: each member computes as many prompt rows as the
 * batch's longest prompt (its own, then throw-away padding rows after them, whose K/V
 * its real tokens overwrite later), and nobody decodes until every member is through.
 * Padding never costs
 * a real request anything: a padding row gives its blocks up before a real request would
 * wait or be preempted for one, and stops at the context's end. */
#ifndef EMBER_SCHEDULER_H
#define EMBER_SCHEDULER_H

#include "kv_cache.h"
#include "request.h"

typedef struct ember_sched_opts {
    uint32_t max_seqs, max_batch_tokens, max_blocks_per_seq;
    bool prefix_cache;     /* share published blocks between requests */
    bool static_batching;  /* admit only when nothing runs (baseline) */
    bool pad_prompts;      /* static batching: prefill every member to the batch's longest
                              prompt, and decode only when all are through (fixed shape) */
    bool contiguous_kv;    /* reserve max_blocks_per_seq blocks at admission (baseline) */
    uint32_t ctx_len;      /* positions a sequence may hold (where padding rows stop) */
    uint32_t chunk_ctx;    /* a prompt row at position p costs 1 + p / chunk_ctx (0: 1) */
} ember_sched_opts;

typedef struct ember_sched_item {
    request *r;
    uint32_t n;            /* tokens [r->n_computed, r->n_computed + n) this step */
    bool logits;           /* the chunk ends the known tokens: sample after it */
    uint32_t n_pad;        /* then prompt padding rows (static batching, pad_prompts) at
                              positions r->n_prefill + r->n_pad_rows onwards */
} ember_sched_item;

typedef struct ember_sched_stats {
    uint64_t preemptions, prefix_hit_tokens;
    uint64_t cow_copies;           /* shared blocks copied before a write */
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
/* The block copies (copy on write) the step just planned needs before it runs, in every
 * layer's K and V: src[i] -> dst[i]; returns their count. Valid until the next plan. */
uint32_t ember_sched_copies(const ember_sched *s, const uint32_t **src, const uint32_t **dst);
/* Records that n more tokens of r were computed; publishes newly full blocks. */
void ember_sched_advance(ember_sched *s, request *r, uint32_t n);
/* Call after the step's advances: updates the peak statistics. */
void ember_sched_end_step(ember_sched *s);
/* Takes r (not a padding row) out of the queue or the running set and releases its
 * blocks, publishing the partly filled last one for prefix caching; when r was its static
 * batch's last member, the batch's padding rows go too. */
void ember_sched_remove(ember_sched *s, request *r);

/* Static batching: keeps r, a running member that just finished, in its batch as a
 * padding row (r->padding, fed r->pad_token) when other members still run; false when r
 * is to be removed instead (ember_sched_remove then ends the batch if r was its last
 * member). Padding rows are planned as 1-token items after all real work. */
bool ember_sched_pad(ember_sched *s, request *r);
/* Records that n prompt padding rows of r were computed. */
void ember_sched_advance_padding(ember_sched *s, request *r, uint32_t n);
/* Lets padding row r go now (a failed step), unless it already went. */
void ember_sched_drop_padding(ember_sched *s, request *r);
/* Hands over, one at a time, the padding rows let go of (their batch ended, or they ran
 * out of blocks or context), blocks already released, for the caller to free; NULL when
 * none is left. Rows let go of during a step stay valid until they are reaped. */
request *ember_sched_reap(ember_sched *s);

/* Keeps tokens of the next plan's budget free (for speculative drafts). */
void ember_sched_set_reserve(ember_sched *s, uint32_t tokens);
/* Grows r's blocks towards covering positions [0, end) without preempting anyone;
 * returns the end actually covered. */
uint32_t ember_sched_extend(ember_sched *s, request *r, uint32_t end);
/* Releases r's blocks past the one holding position n_computed (rejected drafts). */
void ember_sched_trim(ember_sched *s, request *r);

/* Running requests, padding rows included (slot order not guaranteed), and the waiting
 * queue's head. */
request **ember_sched_running(ember_sched *s, uint32_t *n);
request *ember_sched_waiting(ember_sched *s);
const ember_sched_stats *ember_sched_get_stats(const ember_sched *s);

#endif
