/* engine_spec.h — speculative decoding inside the engine's step (engine_spec.c).
 *
 * Before the target's pass, each decoding request that speculates gets up to k drafts
 * placed after its tokens, from n-gram lookup or from the draft model (a few batched
 * passes of the small model), and its item grows from 1 to 1 + k tokens: the drafts are
 * extra scheduled tokens of the same ragged batch. After the pass, the k + 1 rows of
 * target output decide what is kept (speculative.c); the target's KV cache keeps the
 * accepted positions, blocks holding only rejected ones are released, and the draft
 * model's cache is rolled back to the same point. Library-internal. */
#ifndef EMBER_ENGINE_SPEC_H
#define EMBER_ENGINE_SPEC_H

#include "engine/batch.h"
#include "engine/scheduler.h"
#include "engine/step.h"

typedef struct ember_spec ember_spec;

typedef struct ember_spec_opts {
    const ember_model *target;
    const ember_model *draft;     /* NULL: n-gram proposals only */
    ember_step_opts draft_step;   /* the draft's pool: the target's block ids, more tokens */
    uint32_t max_batch_tokens;
    struct ember_grammars *grammars; /* the engine's: drafts of constrained requests follow
                                        their grammar (grammar/constraint.h) */
} ember_spec_opts;

/* Checks the draft model against the target (same vocabulary) and makes its step. */
ember_status ember_spec_create(const ember_spec_opts *o, ember_spec **out, ember_err *err);
void ember_spec_free(ember_spec *sp);
/* Whether requests can use a draft model. */
bool ember_spec_has_draft(const ember_spec *sp);
/* The draft's copies on write (it shares the target's block ids); nothing without one. */
ember_status ember_spec_copy_blocks(ember_spec *sp, const uint32_t *src, const uint32_t *dst, uint32_t n,
                                    ember_err *err);

/* Tokens of the next step's budget that speculating decoders want. */
uint32_t ember_spec_reserve(ember_sched *s);
/* The draft's KV pool (0 without a draft model), and resizing it with the target's. */
uint64_t ember_spec_kv_bytes(const ember_spec *sp);
ember_status ember_spec_resize_kv(ember_spec *sp, uint32_t n, uint32_t keep, ember_err *err);
/* Places drafts after the planned decode items (extending them) and keeps the draft
 * model in step with the target's prompt chunks; buf is the step's scratch. */
ember_status ember_spec_propose(ember_spec *sp, ember_sched *s, ember_sched_item *items, uint32_t n_items,
                                ember_batch_buf *buf, ember_err *err);
/* Verifies r's drafts from its k + 1 rows of buf's logits/argmax starting at row: advances
 * r past what is kept, rolls the rest back, and writes the tokens to deliver (the kept
 * drafts and one more) to out (room for EMBER_MAX_DRAFT + 1); returns their count. */
uint32_t ember_spec_verify(ember_spec *sp, ember_sched *s, request *r, const ember_batch_buf *buf, uint32_t row,
                           uint32_t *out);

#endif
