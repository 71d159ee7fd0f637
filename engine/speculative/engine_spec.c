/* engine_spec.c — speculative decoding inside the engine step (engine_spec.h). */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "engine/grammar/constraint.h"
#include "engine_spec.h"

#include "engine/sampling/sampler.h"
#include "speculative.h"

struct ember_spec {
    const ember_model *target, *draft;
    ember_step *draft_step;       /* the draft model's step (same block ids as the target) */
    uint32_t max_batch_tokens;
    float *probs, *scratch;       /* verification: (EMBER_MAX_DRAFT + 1) rows, and one row */
    struct ember_grammars *grammars;
};

/* ---- set-up --------------------------------------------------------------------------- */

static ember_status same_vocabulary(const ember_model *a, const ember_model *b, ember_err *err)
{
    uint32_t n = a->llama.hp.n_vocab;
    if (b->llama.hp.n_vocab != n)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "draft model has %u tokens, the target %u: vocabularies differ",
                          b->llama.hp.n_vocab, n);
    char pa[256], pb[256];
    for (uint32_t id = 0; id < n; id++) {
        size_t la = ember_token_to_text(a, id, pa, sizeof pa), lb = ember_token_to_text(b, id, pb, sizeof pb);
        if (la != lb || memcmp(pa, pb, la < sizeof pa ? la : sizeof pa) != 0)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "draft model's vocabulary differs from the target's at token %u",
                              id);
    }
    return EMBER_OK;
}

ember_status ember_spec_create(const ember_spec_opts *o, ember_spec **out, ember_err *err)
{
    *out = NULL;
    if (o->draft && !o->draft->llama_loaded) return ember_fail(err, EMBER_ERR_INVALID_ARG, "draft model is not loaded");
    ember_status s = o->draft ? same_vocabulary(o->target, o->draft, err) : EMBER_OK;
    if (s != EMBER_OK) return s;
    ember_spec *sp = ember_calloc(1, sizeof *sp);
    uint32_t V = o->target->llama.hp.n_vocab;
    if (sp) {
        sp->probs = ember_malloc((size_t)(EMBER_MAX_DRAFT + 1) * V * sizeof *sp->probs);
        sp->scratch = ember_malloc((size_t)V * sizeof *sp->scratch);
    }
    if (!sp || !sp->probs || !sp->scratch) {
        ember_spec_free(sp);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    sp->target = o->target;
    sp->draft = o->draft;
    sp->max_batch_tokens = o->max_batch_tokens;
    sp->grammars = o->grammars;
    if (o->draft && (s = ember_step_create(o->draft, &o->draft_step, &sp->draft_step, err)) != EMBER_OK) {
        ember_fail_ctx(err, s, "draft model");
        ember_spec_free(sp);
        return s;
    }
    *out = sp;
    return EMBER_OK;
}

void ember_spec_free(ember_spec *sp)
{
    if (!sp) return;
    ember_step_free(sp->draft_step);
    ember_free(sp->probs);
    ember_free(sp->scratch);
    ember_free(sp);
}

bool ember_spec_has_draft(const ember_spec *sp) { return sp->draft_step != NULL; }

ember_status ember_spec_copy_blocks(ember_spec *sp, const uint32_t *src, const uint32_t *dst, uint32_t n,
                                    ember_err *err)
{
    /* no local slots with a draft model (engine_opts.h) */
    return sp->draft_step && n ? ember_step_copy_blocks(sp->draft_step, src, dst, NULL, NULL, n, err) : EMBER_OK;
}

uint64_t ember_spec_kv_bytes(const ember_spec *sp) { return sp->draft_step ? ember_step_kv_bytes(sp->draft_step) : 0; }

ember_status ember_spec_resize_kv(ember_spec *sp, uint32_t n, uint32_t keep, ember_err *err)
{
    return sp->draft_step ? ember_step_resize_kv(sp->draft_step, n, keep, err) : EMBER_OK;
}

static bool decoding(const request *r) { return r->n_tokens - r->n_computed == 1; }

uint32_t ember_spec_reserve(ember_sched *s)
{
    uint32_t n, total = 0;
    request **run = ember_sched_running(s, &n);
    for (uint32_t i = 0; i < n; i++)
        if (run[i]->spec_k && decoding(run[i])) total += run[i]->spec_k;
    return total;
}

/* ---- proposals -------------------------------------------------------------------------- */

/* How many drafts r may have this step: its k, what generation has left, the context,
 * the step's spare tokens and the blocks it can get. */
static uint32_t draft_room(ember_spec *sp, ember_sched *s, request *r, uint32_t spare)
{
    uint32_t m = r->spec_k, ctx = sp->target->llama.hp.ctx_len;
    uint32_t left = r->max_tokens - r->m.n_gen;  /* >= 1 while running */
    if (m > left - 1) m = left - 1;
    if (r->n_tokens + m >= ctx) m = r->n_tokens + 1 < ctx ? ctx - 1 - r->n_tokens : 0;
    if (m > spare) m = spare;
    uint32_t end = ember_sched_extend(s, r, r->n_computed + 1 + m);
    return end > r->n_computed + 1 ? end - r->n_computed - 1 : 0;
}

/* The draft model's choice from its output row (and q, the distribution it drew from);
 * a constrained request draws from the tokens its grammar allows after the drafts so far,
 * so that q is the distribution its drafts really follow. */
static uint32_t draft_pick(const ember_batch_buf *buf, request *r, uint32_t row, uint32_t j)
{
    if (r->greedy) return buf->argmax[row];
    uint32_t V = buf->n_vocab;
    float *q = r->q + (size_t)j * V, *logits = buf->logits + (size_t)row * V;
    if (r->constraint) ember_constraint_apply(r->constraint, j, logits, !r->ignore_eos);
    ember_sampler_probs(r->draft_sampler, logits, q);
    return ember_sampler_draw(r->draft_sampler, q);
}

/* How many of r's first n drafts its grammar takes in a row (the drafts stop before the
 * first it refuses, or after one that ends it); the mask of each row the verifier reads
 * is made on the way. n-gram proposals and draft-model picks both pass through here. */
static uint32_t grammar_drafts(ember_spec *sp, request *r, const uint32_t *drafts, uint32_t n)
{
    ember_constraint_try_begin(r->constraint, sp->grammars);
    uint32_t kept = 0;
    while (kept < n) {
        int more = ember_constraint_try_take(r->constraint, sp->grammars, sp->target->tok, drafts[kept]);
        if (more >= 0) kept++;
        if (more <= 0) break;
    }
    ember_constraint_try_end(r->constraint);
    return kept;
}

/* Pass 0 brings every draft-model request's cache up to the target's point (prompt
 * chunks, catch-up) with a logits row where a proposal starts; pass j > 0 feeds d_j. */
static uint32_t draft_batch(const ember_sched_item *items, uint32_t n_items, const uint32_t *want, uint32_t j,
                            ember_batch_buf *buf, ember_batch *b)
{
    uint32_t T = 0, n_logits = 0, W = buf->max_blocks_per_seq;
    for (uint32_t i = 0; i < n_items; i++) {
        request *r = items[i].r;
        if (!r || !r->spec_draft || (j > 0 && want[i] <= j)) continue;
        memcpy(buf->block_tables + (size_t)r->slot * W, r->blocks, r->n_blocks * sizeof *r->blocks);
        uint32_t end = j ? r->n_tokens + j : r->n_computed + (want[i] ? 1 : items[i].n);
        for (uint32_t p = r->draft_computed; p < end; p++) {
            buf->tokens[T] = r->tokens[p];
            buf->pos[T] = p;
            buf->seq[T] = r->slot;
            T++;
        }
        r->draft_computed = end;
        if (want[i] > j) buf->rows[n_logits++] = T - 1;
    }
    *b = ember_batch_of(buf, T, n_logits);
    return T;
}

static ember_status draft_passes(ember_spec *sp, ember_sched_item *items, uint32_t n_items, uint32_t *want,
                                 uint32_t max_want, ember_batch_buf *buf, ember_err *err)
{
    bool sampled = false;
    for (uint32_t i = 0; i < n_items; i++) {
        request *r = items[i].r;
        if (!want[i]) continue;
        sampled |= !r->greedy;
        if (r->draft_sampler) ember_sampler_save(r->draft_sampler);
        if (r->constraint) ember_constraint_try_begin(r->constraint, sp->grammars);
    }
    ember_status s = EMBER_OK;
    for (uint32_t j = 0; s == EMBER_OK && (j == 0 || j < max_want); j++) {
        ember_batch b;
        if (!draft_batch(items, n_items, want, j, buf, &b)) continue;
        if (sampled && !ember_batch_buf_logits(buf, b.n_logits))
            return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        s = ember_step_run(sp->draft_step, &b, sampled ? buf->logits : NULL, buf->argmax, err);
        for (uint32_t i = 0, row = 0; s == EMBER_OK && i < n_items; i++) {
            request *r = items[i].r;
            if (!r || !r->spec_draft || want[i] <= j) continue;
            uint32_t d = draft_pick(buf, r, row++, j);
            int more = r->constraint ? ember_constraint_try_take(r->constraint, sp->grammars, sp->target->tok, d) : 1;
            if (more <= 0) { /* the drafts end here: before d (refused), or with it */
                r->n_draft = j + (more == 0);
                items[i].n = 1 + r->n_draft;
                want[i] = j + 1; /* no later pass feeds it */
            }
            r->tokens[r->n_tokens + j] = d;
            if (r->draft_sampler) ember_sampler_accept(r->draft_sampler, d);
        }
    }
    for (uint32_t i = 0; i < n_items; i++) {
        if (want[i] && items[i].r->draft_sampler) ember_sampler_restore(items[i].r->draft_sampler);
        if (want[i] && items[i].r->constraint) ember_constraint_try_end(items[i].r->constraint);
    }
    if (s != EMBER_OK) ember_fail_ctx(err, s, "draft model");
    return s;
}

ember_status ember_spec_propose(ember_spec *sp, ember_sched *s, ember_sched_item *items, uint32_t n_items,
                                ember_batch_buf *buf, ember_err *err)
{
    uint32_t want[n_items ? n_items : 1], max_want = 0, T = 0;
    bool any_draft = false;
    for (uint32_t i = 0; i < n_items; i++) T += items[i].n;
    uint32_t spare = sp->max_batch_tokens > T ? sp->max_batch_tokens - T : 0;
    for (uint32_t i = 0; i < n_items; i++) {
        ember_sched_item *it = &items[i];
        request *r = it->r;
        want[i] = 0;
        if (!r) continue; /* filler rows never speculate */
        r->n_draft = 0;
        any_draft |= r->spec_draft;
        if (!r->spec_k || it->n != 1 || !it->logits) continue;
        uint32_t m = draft_room(sp, s, r, spare);
        if (!r->spec_draft) m = ember_ngram_propose(r->tokens, r->n_tokens, r->spec_ngram, m, r->tokens + r->n_tokens);
        if (!r->spec_draft && r->constraint) m = grammar_drafts(sp, r, r->tokens + r->n_tokens, m);
        want[i] = r->spec_draft ? m : 0;
        if (want[i] > max_want) max_want = want[i];
        r->n_draft = m;
        it->n += m;
        spare -= m;
    }
    return any_draft ? draft_passes(sp, items, n_items, want, max_want, buf, err) : EMBER_OK;
}

/* ---- verification ------------------------------------------------------------------------ */

/* The target's probabilities for rows 0..k, each with the penalties of the drafts before
 * it, the sampler's history left as it was. */
static void target_probs(ember_spec *sp, request *r, const ember_batch_buf *buf, uint32_t row, uint32_t k)
{
    uint32_t V = buf->n_vocab;
    const uint32_t *draft = r->tokens + r->n_tokens;
    ember_sampler_save(r->sampler);
    for (uint32_t i = 0; i <= k; i++) {
        ember_sampler_probs(r->sampler, buf->logits + (size_t)(row + i) * V, sp->probs + (size_t)i * V);
        if (i < k) ember_sampler_accept(r->sampler, draft[i]);
    }
    ember_sampler_restore(r->sampler);
}

uint32_t ember_spec_verify(ember_spec *sp, ember_sched *s, request *r, const ember_batch_buf *buf, uint32_t row,
                           uint32_t *out)
{
    uint32_t k = r->n_draft, n_out;
    const uint32_t *draft = r->tokens + r->n_tokens;
    for (uint32_t i = 0; r->constraint && i <= k; i++) /* row i under the grammar after i drafts */
        ember_constraint_apply(r->constraint, i, buf->logits + (size_t)(row + i) * buf->n_vocab, !r->ignore_eos);
    if (r->greedy) {
        n_out = ember_spec_accept_greedy(buf->argmax + row, draft, k, out);
    } else {
        target_probs(sp, r, buf, row, k);
        const float *q = r->spec_draft ? r->q : NULL;
        n_out = ember_spec_accept(r->sampler, sp->probs, q, draft, k, buf->n_vocab, sp->scratch, out);
    }
    uint32_t accepted = n_out - 1;
    r->m.n_drafted += k;
    r->m.n_accepted += accepted;
    r->n_draft = 0;
    ember_sched_advance(s, r, 1 + accepted);
    if (r->draft_computed > r->n_computed) r->draft_computed = r->n_computed; /* roll the draft back */
    ember_sched_trim(s, r);
    if (r->spec_adaptive) r->spec_k = ember_spec_adapt(r->spec_k, accepted, r->spec_k_max);
    return n_out;
}
