/* engine_step.c — one step of the engine (engine.c has the rest of it).
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
 * (or only polls) and delivers its tokens. ember_engine_step is both, waited for. */
#include <math.h>
#include <string.h>

#include "common/alloc.h"
#include "engine_step.h"

#include "engine_budget.h"
#include "engine_finish.h"
#include "engine/sampling/logprobs.h"
#include "engine/state/kv_state.h"
#include "engine/sampling/sampler.h"
#include "text_out.h"


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

/* The device is gone for good (for real or by ember_model_inject_faults): every request
 * still pending ends with an error now, since no later step could run it, and the inbox
 * refuses new ones. The handles stay valid for destruction. */
static void lose_device(ember_engine *e)
{
    e->lost = true;
    ember_eng_publish_stats(e);
    ember_fail_ctx(&e->step_err, EMBER_ERR_DEVICE_LOST, LOST);
    ember_inbox_store_error(e->inbox, &e->err, &e->step_err);
    ember_inbox_close(e->inbox, EMBER_ERR_DEVICE_LOST);
    bool cancels;
    take_inbox(e, &cancels);
    for (request *r; (r = ember_eng_first_running(e));) ember_eng_finish(e, r, EMBER_FINISH_ERROR);
    for (request *r; (r = ember_sched_waiting(e->sched));) ember_eng_finish(e, r, EMBER_FINISH_ERROR);
    ember_eng_publish_stats(e);
}

/* A failed step's message becomes the engine's (under the inbox lock: other threads
 * write it too). A lost device ends every pending request. */
static ember_status report(ember_engine *e, ember_status s)
{
    if (s == EMBER_ERR_DEVICE_LOST && !e->lost) lose_device(e);
    if (s < 0) ember_inbox_store_error(e->inbox, &e->err, &e->step_err);
    return s;
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
        ember_eng_finish(e, run[i], EMBER_FINISH_CANCELLED); /* shifts the running array */
        run = ember_sched_running(e->sched, &n);
    }
    for (request *r = ember_sched_waiting(e->sched), *next; r; r = next) {
        next = r->next;
        if (r->cancelled) ember_eng_finish(e, r, EMBER_FINISH_CANCELLED);
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
    ember_eng_finish(e, r, (ember_finish)done);
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
            ember_eng_finish(e, r, EMBER_FINISH_ERROR);
            continue;
        }
        if (r->prompt_only && r->n_computed >= r->n_prompt) {
            if (r->on_embedding) give_embedding(e, r);
            ember_text_finish(r->out);
            ember_eng_finish(e, r, EMBER_FINISH_LENGTH);
            continue;
        }
        if (!it->logits) continue;
        uint32_t tok = e->buf.argmax[row];
        ember_row_logprobs lp;
        if (r->on_logprobs && e->buf.want[row] != ROW_UNREAD) row_logprobs(e, r, row, &lp);
        if (!r->greedy && sample_row(e, r, row, &tok) != EMBER_OK) {
            if (r->constraint) r->m.error = ember_constraint_failure(r->constraint);
            ember_eng_finish(e, r, EMBER_FINISH_ERROR); /* its error: the grammar's, else step_err's */
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
        if (e->items[i].r) ember_eng_finish(e, e->items[i].r, EMBER_FINISH_ERROR);
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
    ember_status s = ember_budget_active(e) || e->kv_now != e->o.kv_blocks ? ember_budget_apply(e) : EMBER_OK;
    if (s != EMBER_OK) return report(e, s);
    uint32_t n_stuck = 0;
    ember_sched_set_reserve(e->sched, ember_spec_reserve(e->sched));
    uint32_t n_items = ember_sched_plan(e->sched, e->items, e->stuck, &n_stuck);
    for (uint32_t i = 0; i < n_stuck; i++) { /* alone and still out of blocks */
        ember_text_finish(e->stuck[i]->out);
        ember_eng_finish(e, e->stuck[i], EMBER_FINISH_KV_FULL);
    }
    ember_eng_publish_stats(e); /* what was taken from the inbox shows as waiting or running */
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
        ember_eng_publish_stats(e);
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
    ember_eng_publish_stats(e);
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

void ember_eng_drain(ember_engine *e)
{
    if (e->in_flight) end_step(e, UINT64_MAX);
    bool cancels;
    if (e->sched && e->inbox) take_inbox(e, &cancels);
}
