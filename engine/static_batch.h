/* static_batch.h — static batching, the baselines continuous batching is measured
 * against (docs/serving.md), as the scheduler's hook (static_batch.c). Library-internal.
 *
 * A fixed-shape batch forms when nothing runs, nobody joins until it ends, and a member
 * that finishes is delivered at once but stays in the batch as a padding row that
 * computes one throw-away token per step until the batch's last member finishes. With
 * pad_prompts the prefill has the fixed shape too, as Hugging Face generate runs it:
 * each member computes as many prompt rows as the batch's longest prompt (its own, then
 * throw-away rows after them, whose K/V its real tokens overwrite later), and nobody
 * decodes until every member is through. Padding never costs a real request anything: it
 * gives its blocks up before a real request would wait or be preempted for one, and
 * stops at the context's end. Padding rows reach the step as the scheduler's filler
 * items. */
#ifndef EMBER_STATIC_BATCH_H
#define EMBER_STATIC_BATCH_H

#include "scheduler.h"

typedef struct ember_static_opts {
    bool pad_prompts;            /* EMBER_BATCHING_STATIC; false: STATIC_RAGGED */
    uint32_t max_seqs, max_blocks_per_seq;
    uint32_t ctx_len;            /* positions a sequence may hold (where padding stops) */
} ember_static_opts;

typedef struct ember_static ember_static;

ember_status ember_static_create(const ember_static_opts *o, ember_kv_cache *kv, ember_static **out,
                                 ember_err *err);
/* Releases the blocks padding rows still hold. */
void ember_static_free(ember_static *st);
/* The scheduler hook (ember_sched_opts.hook); valid as long as st. */
const ember_sched_hook *ember_static_hook(ember_static *st);

#endif
