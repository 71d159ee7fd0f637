/* request.c — a request made from its description: the prompt tokenized, checked
 * against the context and the KV pool, its samplers, stop strings and speculation set
 * up. Runs on the submitting thread, outside the engine's lock. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "request.h"

#include "engine/grammar/constraint.h"
#include "engine/grammar/json_schema.h"
#include "model_handle.h"
#include "engine/sampling/sampler.h"
#include "engine/state/kv_state.h"
#include "kv_layout.h"
#include "text_out.h"

const char *ember_finish_name(ember_finish why)
{
    static const char *const names[] = {"length", "eos", "stop", "cancelled", "error", "kv_full", "context", "grammar"};
    return (unsigned)why < sizeof names / sizeof *names ? names[why] : "unknown";
}

void ember_request_free(request *r)
{
    ember_sampler_free(r->sampler);
    ember_sampler_free(r->draft_sampler);
    ember_free(r->q);
    ember_text_free(r->out);
    ember_constraint_free(r->constraint);
    ember_free(r->blocks);
    ember_free(r->hashes);
    ember_free(r->tokens);
    ember_free(r->embedding);
    ember_free(r->restore_rows);
    ember_free(r);
}

/* The prompt ids[0..n), room made for max_tokens more. */
static ember_status take_tokens(request *r, const uint32_t *ids, size_t n, ember_err *err)
{
    if (n == 0) return ember_fail(err, EMBER_ERR_INVALID_ARG, "empty prompt");
    r->cap = (uint32_t)n + r->max_tokens + 1;
    if (!(r->tokens = ember_malloc(r->cap * sizeof *r->tokens))) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    memcpy(r->tokens, ids, n * sizeof *r->tokens);
    r->n_prompt = (uint32_t)n;
    return EMBER_OK;
}

static ember_status tokenize_prompt(const ember_request_env *env, const ember_request_desc *d, request *r,
                                   ember_err *err)
{
    size_t n = 0;
    const ember_tokenizer *tok = env->model->tok;
    unsigned flags = (d->no_bos || !ember_tokenizer_add_bos(tok) ? 0 : EMBER_TOKENIZE_ADD_BOS) |
                     (d->parse_special ? EMBER_TOKENIZE_PARSE_SPECIAL : 0);
    if (d->prompt) {
        /* A text gives at most one token per byte plus BOS and a dummy prefix, so one
         * pass fills the buffer; the second pass is only a safety net. */
        size_t len = strlen(d->prompt), room = len + 4;
        ember_status s = EMBER_OK;
        for (int pass = 0; pass < 2 && s == EMBER_OK; pass++) {
            uint32_t *t = ember_realloc(r->tokens, (room + r->max_tokens + 1) * sizeof *t);
            if (!t) goto oom;
            r->tokens = t;
            s = ember_tokenizer_encode_ex(tok, d->prompt, len, flags, r->tokens, room, &n, err);
            if (n <= room) break;
            room = n;
        }
        if (s != EMBER_OK) return s;
        if (n == 0) return ember_fail(err, EMBER_ERR_INVALID_ARG, "empty prompt (and no BOS)");
        r->cap = (uint32_t)(room + r->max_tokens + 1);
        r->n_prompt = (uint32_t)n;
        return EMBER_OK;
    }
    if ((!d->tokens || !d->n_tokens) && d->state) return EMBER_OK; /* the state's tokens (restore) */
    if (!d->tokens || !d->n_tokens)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "request has neither prompt text nor tokens");
    ember_status s = take_tokens(r, d->tokens, d->n_tokens, err);
    for (size_t i = 0; s == EMBER_OK && i < r->n_prompt; i++)
        if (r->tokens[i] >= env->model->llama.hp.n_vocab)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "prompt token %u outside the vocabulary", r->tokens[i]);
    return s;
oom:
    return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
}

/* vLLM's truncate_prompt_tokens: the last n tokens of the prompt stay (BOS goes with
 * the rest of the front). */
static void truncate_prompt(request *r, uint32_t n)
{
    if (!n || n >= r->n_prompt) return;
    memmove(r->tokens, r->tokens + (r->n_prompt - n), n * sizeof *r->tokens);
    r->n_prompt = n;
}

static ember_status check_fits(const ember_request_env *env, const request *r, ember_err *err)
{
    uint32_t ctx = env->model->llama.hp.ctx_len, bs = env->kv_block_size;
    if (r->n_prompt >= ctx)
        return ember_fail(err, EMBER_ERR_CONTEXT_FULL, "prompt of %u tokens does not fit the context of %u",
                          r->n_prompt, ctx);
    if ((r->n_prompt + bs) / bs > env->kv_blocks)
        return ember_fail(err, EMBER_ERR_CONTEXT_FULL, "prompt of %u tokens needs more than the %u KV block%s",
                          r->n_prompt, env->kv_blocks, env->kv_blocks == 1 ? "" : "s");
    return EMBER_OK;
}

/* Drafts from a model share the target's block ids but keep their own K/V; blocks they
 * publish carry a different hash chain, so a request only reuses blocks whose draft K/V
 * is as complete as its own. */
#define DRAFT_HASH_SEED 0xD4AF7000D4AF7001ull

static ember_status setup_speculation(const ember_request_env *env, const ember_request_desc *d, request *r,
                                      const ember_sampling_params *sp, ember_err *err)
{
    const ember_speculation *x = &d->spec;
    if (!x->draft_k) return EMBER_OK;
    if (x->draft_k > EMBER_MAX_DRAFT)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "draft_k %u exceeds %d", x->draft_k, EMBER_MAX_DRAFT);
    if (!x->ngram && !env->has_draft)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "speculation asks for a draft model but the engine has none");
    r->spec_k = r->spec_k_max = x->draft_k;
    if (x->adaptive) r->spec_k_max = EMBER_MAX_DRAFT;
    r->spec_ngram = x->ngram;
    r->spec_adaptive = x->adaptive != 0;
    r->spec_draft = !x->ngram;
    r->cap += EMBER_MAX_DRAFT; /* drafts sit after the tokens while they are checked */
    uint32_t *t = ember_realloc(r->tokens, r->cap * sizeof *t);
    if (!t) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    r->tokens = t;
    if (!r->spec_draft) return EMBER_OK;
    r->hash_seed = DRAFT_HASH_SEED;
    uint32_t V = env->model->llama.hp.n_vocab;
    ember_sampling_params dp = *sp;
    dp.seed = sp->seed ^ 0x5EEDD4AF75EEDull; /* the draft draws its own random numbers */
    ember_status s = ember_sampler_create(&dp, V, &r->draft_sampler, err);
    if (s == EMBER_OK && !r->greedy && !(r->q = ember_malloc((size_t)r->spec_k_max * V * sizeof *r->q)))
        s = ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; s == EMBER_OK && i < r->n_prompt; i++) ember_sampler_accept(r->draft_sampler, r->tokens[i]);
    return s;
}

/* Penalties and biases change which token is the arg-max: a greedy request with any of
 * them draws from its sampler (the arg-max of the changed logits), not from the step's
 * plain arg-max. */
static bool changes_argmax(const ember_sampling *s)
{
    return (s->repetition_penalty != 0 && s->repetition_penalty != 1) || s->frequency_penalty != 0 ||
           s->presence_penalty != 0 || s->n_logit_bias != 0;
}

/* The request's grammar: given, or made from its JSON Schema. */
static ember_status constrain(const ember_request_desc *d, request *r, ember_err *err)
{
    uint32_t positions = d->spec.draft_k ? EMBER_MAX_DRAFT + 1 : 1; /* a mask per row a step checks */
    if (d->grammar && d->json_schema) return ember_fail(err, EMBER_ERR_INVALID_ARG, "a grammar and a json_schema: give one");
    if (d->grammar_triggers[0] && !d->grammar && !d->json_schema)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "grammar_triggers without a grammar or json_schema");
    char *gbnf = NULL;
    ember_status s = EMBER_OK;
    if (d->json_schema) s = ember_json_schema_to_gbnf(d->json_schema, strlen(d->json_schema), &gbnf, err);
    if (s == EMBER_OK && (d->grammar || gbnf))
        s = ember_constraint_create(d->grammar ? d->grammar : gbnf, d->grammar ? d->grammar_root : NULL, positions,
                                    &r->constraint, err);
    if (s == EMBER_OK && r->constraint) s = ember_constraint_set_triggers(r->constraint, d->grammar_triggers, err);
    ember_free(gbnf);
    return s;
}

/* An embedding request: its pooling (the model's by default) and its sum. */
static ember_status embedding(const ember_request_env *env, const ember_request_desc *d, request *r, ember_err *err)
{
    if (!d->on_embedding) return EMBER_OK;
    r->on_embedding = d->on_embedding;
    r->pooling = d->pooling ? (uint32_t)d->pooling : ember_llama_pooling(&env->model->llama);
    if (r->pooling == EMBER_POOLING_RANK)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "the model declares rank pooling (a reranker): no embeddings");
    if (r->pooling > EMBER_POOLING_RANK) return ember_fail(err, EMBER_ERR_INVALID_ARG, "pooling %u", r->pooling);
    r->prompt_only = r->every_row = true;
    r->embedding = ember_calloc(env->model->llama.hp.dim, sizeof *r->embedding);
    return r->embedding ? EMBER_OK : ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
}

/* The request's copy of state st's rows for positions [0, n), in the engine's KV type. */
static ember_status copy_rows(const ember_request_env *env, const ember_kv_state *st, uint32_t n, request *r,
                              ember_err *err)
{
    const ember_hparams *hp = &env->model->llama.hp;
    uint64_t to = ember_kv_row_bytes(hp->head_dim, env->kv_type);
    uint64_t rows = 2ull * hp->n_layers * n * hp->n_kv_heads;
    float *v = ember_malloc(hp->head_dim * sizeof *v);
    r->restore_rows = ember_malloc(rows * to + 1);
    if (!v || !r->restore_rows) {
        ember_free(v);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory for a state's %llu rows", (unsigned long long)rows);
    }
    for (uint32_t l = 0; l < hp->n_layers; l++)
        for (int kv = 0; kv < 2; kv++)
            for (uint32_t p = 0; p < n; p++)
                for (uint32_t h = 0; h < hp->n_kv_heads; h++) {
                    uint8_t *dst = r->restore_rows + (((l * 2ull + kv) * n + p) * hp->n_kv_heads + h) * to;
                    const uint8_t *src = ember_kv_state_row(st, l, kv, p, h);
                    if (st->kv_type == env->kv_type) {
                        memcpy(dst, src, to);
                        continue;
                    }
                    ember_kv_row_decode(st->kv_type, src, hp->head_dim, v);
                    ember_kv_row_encode(env->kv_type, v, hp->head_dim, dst);
                }
    ember_free(v);
    r->restore_pos = r->n_restore = n;
    return EMBER_OK;
}

/* desc.state: read and checked against the model, its tokens the prompt's beginning
 * (or the whole prompt when none was given), its rows copied for the positions before
 * the prompt's last token. */
static ember_status restore(const ember_request_env *env, const ember_request_desc *d, request *r, ember_err *err)
{
    if (!d->state) return EMBER_OK;
    if (d->on_prompt_logprobs || d->on_embedding || (d->spec.draft_k && !d->spec.ngram))
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "a state restores no prompt log-probabilities, embeddings or "
                          "draft model's cache: give it without them");
    const ember_hparams *hp = &env->model->llama.hp;
    ember_kv_model_id id = {env->model->fingerprint, hp->n_layers, hp->n_kv_heads, hp->head_dim, hp->n_vocab};
    uint64_t *copy = ember_malloc(d->state_len + 8); /* aligned, and the caller's may go */
    if (!copy) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    if (d->state_len) memcpy(copy, d->state, d->state_len);
    ember_kv_state st;
    ember_status s = ember_kv_state_read((const uint8_t *)copy, d->state_len, &id, hp->ctx_len, &st, err);
    if (s == EMBER_OK && !r->n_prompt) s = take_tokens(r, st.tokens, st.n_tokens, err);
    for (uint32_t i = 0; s == EMBER_OK && i < st.n_tokens; i++)
        if (i >= r->n_prompt || r->tokens[i] != st.tokens[i])
            s = ember_fail(err, EMBER_ERR_INVALID_ARG, "the prompt does not begin with the state's %u tokens "
                           "(they part at position %u)", st.n_tokens, i);
    if (s == EMBER_OK) s = copy_rows(env, &st, st.n_kv < r->n_prompt ? st.n_kv : r->n_prompt - 1, r, err);
    r->state_bytes = d->state_len;
    ember_free(copy);
    return s;
}

static ember_status build(const ember_request_env *env, const ember_request_desc *d, request *r, ember_err *err)
{
    r->max_tokens = d->max_tokens ? d->max_tokens : 128;
    r->ignore_eos = d->ignore_eos != 0;
    /* a constrained request draws from its masked row, never from the step's arg-max */
    r->greedy = d->sampling.temperature <= 0.0f && !changes_argmax(&d->sampling) && !d->grammar && !d->json_schema;
    r->on_token = d->on_token;
    r->on_done = d->on_done;
    r->on_logprobs = d->on_logprobs;
    r->top_logprobs = d->top_logprobs;
    r->on_prompt_logprobs = d->on_prompt_logprobs;
    r->prompt_only = d->prompt_only != 0;
    r->every_row = d->on_prompt_logprobs != NULL;
    r->on_state = d->on_state;
    r->group = d->prompt_group;
    r->user = d->user;
    ember_sampling_params sp = {d->sampling.temperature, d->sampling.top_k, d->sampling.top_p,
                                d->sampling.min_p, d->sampling.repetition_penalty,
                                d->sampling.frequency_penalty, d->sampling.presence_penalty,
                                d->sampling.penalty_last_n, d->sampling.seed, d->sampling.logit_bias,
                                d->sampling.n_logit_bias};
    uint32_t V = env->model->llama.hp.n_vocab;
    ember_status s = embedding(env, d, r, err);
    if (s == EMBER_OK) s = ember_text_create(d->stop, &r->out, err);
    if (s == EMBER_OK) s = ember_sampler_create(&sp, V, &r->sampler, err);
    if (s == EMBER_OK) s = constrain(d, r, err);
    if (s == EMBER_OK) s = tokenize_prompt(env, d, r, err);
    if (s == EMBER_OK) truncate_prompt(r, d->truncate_prompt_tokens);
    if (s == EMBER_OK && d->state && d->truncate_prompt_tokens)
        s = ember_fail(err, EMBER_ERR_INVALID_ARG, "truncate_prompt_tokens with a state: the state begins the prompt");
    if (s == EMBER_OK) s = restore(env, d, r, err);
    if (s == EMBER_OK) s = check_fits(env, r, err);
    if (s != EMBER_OK) return s;
    r->n_tokens = r->n_prompt;
    if ((s = setup_speculation(env, d, r, &sp, err)) != EMBER_OK) return s;
    r->blocks = ember_malloc(env->max_blocks_per_seq * sizeof *r->blocks);
    r->hashes = ember_malloc(env->max_blocks_per_seq * sizeof *r->hashes);
    if (!r->blocks || !r->hashes) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < r->n_prompt; i++) ember_sampler_accept(r->sampler, r->tokens[i]);
    return EMBER_OK;
}


ember_status ember_request_build(const ember_request_env *env, const ember_request_desc *d, request **out,
                                 ember_err *err)
{
    *out = NULL;
    if (!d) return ember_fail(err, EMBER_ERR_INVALID_ARG, "no request");
    if (d->top_logprobs > EMBER_MAX_TOP_LOGPROBS)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "top_logprobs %u exceeds %d", d->top_logprobs, EMBER_MAX_TOP_LOGPROBS);
    request *r = ember_calloc(1, sizeof *r);
    if (!r) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    ember_status s = build(env, d, r, err);
    if (s != EMBER_OK) {
        ember_request_free(r);
        return s;
    }
    r->m.n_prompt = r->n_prompt;
    *out = r;
    return EMBER_OK;
}
