/* engine_spec.c — speculative decoding inside the engine step.
 *
 * Before the target's forward pass, each decoding request that speculates gets up to k
 * drafts placed after its tokens, from n-gram lookup or from the draft model (a few
 * batched passes of the small model), and its item grows from 1 to 1 + k tokens: the
 * drafts are extra scheduled tokens of the same ragged batch. After the pass, the k + 1
 * rows of target output decide what is kept (speculative.c); the target's KV cache keeps
 * the accepted positions, blocks holding only rejected ones are released, and the draft
 * model's cache is rolled back to the same point. */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "speculative.h"

/* ---- set-up --------------------------------------------------------------------------- */

static ember_status same_vocabulary(ember_engine *e)
{
    const ember_model *a = e->model, *b = e->o.draft;
    uint32_t n = a->llama.hp.n_vocab;
    if (b->llama.hp.n_vocab != n)
        return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "draft model has %u tokens, the target %u: vocabularies differ",
                          b->llama.hp.n_vocab, n);
    char pa[256], pb[256];
    for (uint32_t id = 0; id < n; id++) {
        size_t la = ember_token_to_text(a, id, pa, sizeof pa), lb = ember_token_to_text(b, id, pb, sizeof pb);
        if (la != lb || memcmp(pa, pb, la < sizeof pa ? la : sizeof pa) != 0)
            return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "draft model's vocabulary differs from the target's at token %u",
                              id);
    }
    return EMBER_OK;
}

ember_status ember_spec_init(ember_engine *e)
{
    ember_model *d = e->o.draft;
    if (!d->llama_loaded) return ember_fail(&e->err, EMBER_ERR_INVALID_ARG, "draft model is not loaded");
    if (!d->gpu || !e->model->gpu)
        return ember_fail(&e->err, EMBER_ERR_UNSUPPORTED, "a draft model needs the Vulkan backend for both models");
    ember_status s = same_vocabulary(e);
    if (s != EMBER_OK) return s;
    e->draft = d;
    e->probs = malloc((size_t)(EMBER_MAX_DRAFT + 1) * e->model->llama.hp.n_vocab * sizeof *e->probs);
    if (!e->probs) return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    ember_forward_opts fo = {.max_tokens = e->o.max_batch_tokens + EMBER_STEP_SPARE(e->o.max_seqs),
                             .max_seqs = e->o.max_seqs, .n_blocks = e->o.kv_blocks,
                             .block_size = e->o.kv_block_size, .max_blocks_per_seq = e->max_blocks_per_seq,
                             .kv_type = e->o.kv_type};
    s = ember_forward_create(d->gpu, &fo, &e->draft_fwd, &e->err);
    if (s != EMBER_OK) ember_fail_ctx(&e->err, s, "draft model");
    return s;
}

/* Padding rows (static batching) never speculate: they are not decoding. */
static bool decoding(const request *r) { return !r->padding && r->n_tokens - r->n_computed == 1; }

uint32_t ember_spec_reserve(ember_engine *e)
{
    uint32_t n, total = 0;
    request **run = ember_sched_running(e->sched, &n);
    for (uint32_t i = 0; i < n; i++)
        if (run[i]->spec_k && decoding(run[i])) total += run[i]->spec_k;
    return total;
}

/* ---- proposals -------------------------------------------------------------------------- */

/* How many drafts r may have this step: its k, what generation has left, the context,
 * the step's spare tokens and the blocks it can get. */
static uint32_t draft_room(ember_engine *e, request *r, uint32_t spare)
{
    uint32_t m = r->spec_k, ctx = e->model->llama.hp.ctx_len;
    uint32_t left = r->max_tokens - r->m.n_gen;  /* >= 1 while running */
    if (m > left - 1) m = left - 1;
    if (r->n_tokens + m >= ctx) m = r->n_tokens + 1 < ctx ? ctx - 1 - r->n_tokens : 0;
    if (m > spare) m = spare;
    uint32_t end = ember_sched_extend(e->sched, r, r->n_computed + 1 + m);
    return end > r->n_computed + 1 ? end - r->n_computed - 1 : 0;
}

/* The draft model's choice from its output row (and q, the distribution it drew from). */
static uint32_t draft_pick(ember_engine *e, request *r, uint32_t row, uint32_t j)
{
    if (r->greedy) return e->argmax[row];
    uint32_t V = e->model->llama.hp.n_vocab;
    float *q = r->q + (size_t)j * V;
    ember_sampler_probs(r->draft_sampler, e->logits + (size_t)row * V, q);
    return ember_sampler_draw(r->draft_sampler, q);
}

/* Pass 0 brings every draft-model request's cache up to the target's point (prompt
 * chunks, catch-up) with a logits row where a proposal starts; pass j > 0 feeds d_j. */
static uint32_t draft_batch(ember_engine *e, uint32_t n_items, const uint32_t *want, uint32_t j, ember_batch *b)
{
    uint32_t T = 0, n_logits = 0, W = e->max_blocks_per_seq;
    for (uint32_t i = 0; i < n_items; i++) {
        request *r = e->items[i].r;
        if (!r->spec_draft || r->padding || (j > 0 && want[i] <= j)) continue;
        memcpy(e->block_tables + (size_t)r->slot * W, r->blocks, r->n_blocks * sizeof *r->blocks);
        uint32_t end = j ? r->n_tokens + j : r->n_computed + (want[i] ? 1 : e->items[i].n);
        for (uint32_t p = r->draft_computed; p < end; p++) {
            e->tokens[T] = r->tokens[p];
            e->pos[T] = p;
            e->seq[T] = r->slot;
            T++;
        }
        r->draft_computed = end;
        if (want[i] > j) e->rows[n_logits++] = T - 1;
    }
    *b = (ember_batch){T, e->tokens, e->pos, e->seq, e->block_tables, n_logits, e->rows};
    return T;
}

static ember_status draft_passes(ember_engine *e, uint32_t n_items, const uint32_t *want, uint32_t max_want)
{
    bool sampled = false;
    for (uint32_t i = 0; i < n_items; i++) {
        request *r = e->items[i].r;
        sampled |= want[i] && !r->greedy;
        if (want[i] && r->draft_sampler) ember_sampler_save(r->draft_sampler);
    }
    ember_status s = EMBER_OK;
    for (uint32_t j = 0; s == EMBER_OK && (j == 0 || j < max_want); j++) {
        ember_batch b;
        if (!draft_batch(e, n_items, want, j, &b)) continue;
        if (sampled && !ember_engine_logits_room(e, b.n_logits))
            return ember_fail(&e->err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        s = ember_forward_run(e->draft_fwd, &b, sampled ? e->logits : NULL, e->argmax, NULL, &e->err);
        for (uint32_t i = 0, row = 0; s == EMBER_OK && i < n_items; i++) {
            request *r = e->items[i].r;
            if (!r->spec_draft || want[i] <= j) continue;
            uint32_t d = draft_pick(e, r, row++, j);
            r->tokens[r->n_tokens + j] = d;
            if (r->draft_sampler) ember_sampler_accept(r->draft_sampler, d);
        }
    }
    for (uint32_t i = 0; i < n_items; i++)
        if (want[i] && e->items[i].r->draft_sampler) ember_sampler_restore(e->items[i].r->draft_sampler);
    if (s != EMBER_OK) ember_fail_ctx(&e->err, s, "draft model");
    return s;
}

ember_status ember_spec_propose(ember_engine *e, uint32_t n_items)
{
    uint32_t want[n_items ? n_items : 1], max_want = 0, T = 0;
    bool any_draft = false;
    for (uint32_t i = 0; i < n_items; i++) T += e->items[i].n + e->items[i].n_pad;
    uint32_t spare = e->o.max_batch_tokens > T ? e->o.max_batch_tokens - T : 0;
    for (uint32_t i = 0; i < n_items; i++) {
        ember_sched_item *it = &e->items[i];
        request *r = it->r;
        want[i] = 0;
        r->n_draft = 0;
        any_draft |= r->spec_draft;
        if (!r->spec_k || it->n != 1 || !it->logits || it->n_pad || r->padding) continue;
        uint32_t m = draft_room(e, r, spare);
        if (!r->spec_draft) m = ember_ngram_propose(r->tokens, r->n_tokens, r->spec_ngram, m, r->tokens + r->n_tokens);
        want[i] = r->spec_draft ? m : 0;
        if (want[i] > max_want) max_want = want[i];
        r->n_draft = m;
        it->n += m;
        spare -= m;
    }
    return any_draft ? draft_passes(e, n_items, want, max_want) : EMBER_OK;
}

/* ---- verification ------------------------------------------------------------------------ */

/* The target's probabilities for rows 0..k, each with the penalties of the drafts before
 * it, the sampler's history left as it was. */
static void target_probs(ember_engine *e, request *r, uint32_t row, uint32_t k)
{
    uint32_t V = e->model->llama.hp.n_vocab;
    const uint32_t *draft = r->tokens + r->n_tokens;
    ember_sampler_save(r->sampler);
    for (uint32_t i = 0; i <= k; i++) {
        ember_sampler_probs(r->sampler, e->logits + (size_t)(row + i) * V, e->probs + (size_t)i * V);
        if (i < k) ember_sampler_accept(r->sampler, draft[i]);
    }
    ember_sampler_restore(r->sampler);
}

void ember_spec_finish(ember_engine *e, ember_sched_item *it, uint32_t row, double t)
{
    request *r = it->r;
    uint32_t k = r->n_draft, V = e->model->llama.hp.n_vocab, out[EMBER_MAX_DRAFT + 1], n_out;
    const uint32_t *draft = r->tokens + r->n_tokens;
    if (r->greedy) {
        n_out = ember_spec_accept_greedy(e->argmax + row, draft, k, out);
    } else {
        target_probs(e, r, row, k);
        const float *q = r->spec_draft ? r->q : NULL;
        n_out = ember_spec_accept(r->sampler, e->probs, q, draft, k, V, e->scratch, out);
    }
    uint32_t accepted = n_out - 1;
    r->m.n_drafted += k;
    r->m.n_accepted += accepted;
    r->n_draft = 0;
    ember_sched_advance(e->sched, r, 1 + accepted);
    if (r->draft_computed > r->n_computed) r->draft_computed = r->n_computed; /* roll the draft back */
    ember_sched_trim(e->sched, r);
    if (r->spec_adaptive) r->spec_k = ember_spec_adapt(r->spec_k, accepted, r->spec_k_max);
    for (uint32_t j = 0; j < n_out; j++)
        if (ember_engine_emit(e, r, out[j], t)) return; /* finished: r is gone */
}
