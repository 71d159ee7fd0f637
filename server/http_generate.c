/* http_generate.c — see http_generate.h. A reply in progress is in h->live (a closing)
 * from the time it is queued until libmicrohttpd closes its reader, so that stopping can
 * end it (http.c's drain). */
#include "http_generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_reply.h"

static ssize_t read_job(void *cls, uint64_t pos, char *buf, size_t max)
{
    closing *cl = cls;
    ssize_t n = job_read(cl->j, buf, max);
    if (n > 0 && cl->log) cl->log->bytes += (unsigned long long)n;
    return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

static void close_job(void *cls)
{
    closing *c = cls;
    srv_http *h = c->h;
    pthread_mutex_lock(&h->live_mu);
    if (c->prev) c->prev->next = c->next;
    else if (h->live == c) h->live = c->next;
    if (c->next) c->next->prev = c->prev;
    pthread_cond_broadcast(&h->live_cv);
    pthread_mutex_unlock(&h->live_mu);
    job_closed(c->j, h->engine);
    free(c);
}

/* Puts c in h->live; false when the server is stopping (then the request is refused). */
static bool go_live(srv_http *h, closing *c)
{
    pthread_mutex_lock(&h->live_mu);
    bool ok = !h->stopping;
    if (ok) {
        c->next = h->live;
        if (h->live) h->live->prev = c;
        h->live = c;
    }
    pthread_mutex_unlock(&h->live_mu);
    return ok;
}


/* completions' echo: the prompt as given, or a prompt of token ids as their text. */
static bool echo(job *j, ember_model *model, const api_request *rq)
{
    if (rq->prompt) return job_echo(j, rq->prompt, strlen(rq->prompt));
    size_t n = ember_detokenize(model, rq->tokens, rq->n_tokens, 1, NULL, 0);
    char *text = malloc(n + 1);
    bool ok = text && (ember_detokenize(model, rq->tokens, rq->n_tokens, 1, text, n), job_echo(j, text, n));
    free(text);
    return ok;
}

/* Submits the samples of rq to j: sample i with the request's seed + i, all of one group
 * (group) so that they share the prompt's KV blocks — except when each computes its own
 * prompt log-probabilities (echo with logprobs), which needs every prompt row. On a
 * failure the samples already submitted are cancelled by the caller (job_closed). */
static ember_status submit_samples(srv_http *h, job *j, api_request *rq, uint64_t group, uint32_t *submitted)
{
    ember_status s = EMBER_OK;
    *submitted = 0;
    for (uint32_t i = 0; s == EMBER_OK && i < rq->best_of; i++) {
        ember_request_desc d = rq->desc;
        d.sampling.seed += i;
        d.prompt_group = rq->best_of > 1 && !(rq->echo && rq->logprobs) ? group : 0;
        job_attach(j, i, &d, h->engine, h->model, rq->logprobs, rq->echo);
        ember_request_id id = 0;
        s = ember_submit(h->engine, &d, &id);
        job_submitted(j, i, s == EMBER_OK ? id : 0);
        *submitted += s == EMBER_OK;
    }
    return s;
}



/* ---- prefill on another server -------------------------------------------------------------- */

/* The prompt's ids as the engine will tokenize them (malloc'ed), or NULL. */
static uint32_t *prompt_ids(srv_http *h, const api_request *rq, size_t *n)
{
    if (!rq->prompt) {
        uint32_t *ids = malloc((rq->n_tokens + 1) * sizeof *ids);
        if (ids) memcpy(ids, rq->tokens, rq->n_tokens * sizeof *ids), *n = rq->n_tokens;
        return ids;
    }
    unsigned flags = (rq->desc.no_bos ? 0 : EMBER_TOKENIZE_ADD_BOS) | (rq->desc.parse_special ? EMBER_TOKENIZE_PARSE_SPECIAL : 0);
    size_t len = strlen(rq->prompt);
    uint32_t *ids = malloc((len + 8) * sizeof *ids);
    if (ids && ember_tokenize(h->model, rq->prompt, len, flags, ids, len + 8, n) == EMBER_OK && *n <= len + 8) return ids;
    free(ids);
    return NULL;
}

/* -c N: the prompt and the reply fit N tokens, as llama.cpp's server's context: a prompt
 * that fills it is refused, a reply is cut where they fill it (finish_reason length); the
 * engine itself stops only at the model's context. */
static bool fit_context(srv_http *h, api_request *rq, api_error *err)
{
    size_t n = 0;
    uint32_t ctx = h->cfg.limits.ctx_len, cut = rq->desc.truncate_prompt_tokens;
    uint32_t *ids = prompt_ids(h, rq, &n);
    free(ids);
    if (!ids) {
        api_fail(err, 500, "server_error", NULL, NULL, "tokenizing the prompt failed");
        return false;
    }
    if (cut && n > cut) n = cut;
    if (n >= ctx) {
        api_fail(err, 400, "invalid_request_error", rq->kind == API_CHAT ? "messages" : "prompt",
                 "context_length_exceeded", "prompt of %zu tokens does not fit the context of %u (-c)", n, ctx);
        return false;
    }
    if (rq->desc.max_tokens > ctx - n) rq->desc.max_tokens = (uint32_t)(ctx - n);
    return true;
}

/* With --prefill-peer and a prompt of at least --prefill-min-tokens: the peer's KV state
 * of it (malloc'ed, for rq->desc.state), or NULL to prefill here (counted as a fallback
 * when the peer was asked and failed). */
static void *remote_prefill(srv_http *h, const api_request *rq, size_t *len)
{
    size_t n = 0;
    uint32_t *ids = h->cfg.peer.url ? prompt_ids(h, rq, &n) : NULL;
    if (!ids || n < h->cfg.peer.min_tokens) {
        free(ids);
        return NULL;
    }
    char why[256];
    double t0 = srv_now_s();
    void *state = prefill_peer_fetch(&h->cfg.peer, ids, n, len, why, sizeof why);
    srv_metrics_prefill_peer(h->metrics, state != NULL, srv_now_s() - t0);
    if (!state) fprintf(stderr, "ember serve: the prefill peer failed (%s): prefilled here\n", why);
    free(ids);
    return state;
}

/* POST /v1/prefill (--serve-prefill): a completion body's prompt, answered with its KV
 * state as bytes. */
enum MHD_Result srv_prefill(srv_http *h, struct MHD_Connection *c, const conn *cn)
{
    if (!h->cfg.serve_prefill)
        return srv_fail(h, c, 404, "invalid_request_error", "not_found", "this server prefills for no one: start it with --serve-prefill");
    if (srv_queue_full(h)) return srv_refuse_queue_full(h, c);
    api_request rq;
    api_error err;
    if (!api_parse(&h->cfg.limits, h->model, API_COMPLETION, cn->body ? cn->body : "", cn->len, &rq, &err))
        return srv_send_error(h, c, &err);
    size_t len = 0;
    uint32_t n = 0;
    void *state = state_compute(h->engine, &rq.desc, h->cfg.states.max_bytes, &len, &n, &err);
    api_request_free(&rq);
    if (!state) return srv_send_error(h, c, &err);
    struct MHD_Response *r = MHD_create_response_from_buffer(len, state, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/octet-stream");
    return srv_queue(&h->cfg, c, 200, r, len);
}

enum MHD_Result srv_generate(srv_http *h, struct MHD_Connection *c, api_kind kind, const conn *cn)
{
    if (srv_queue_full(h)) return srv_refuse_queue_full(h, c);
    api_request rq;
    api_error err;
    if (!api_parse(&h->cfg.limits, h->model, kind, cn->body ? cn->body : "", cn->len, &rq, &err))
        return srv_send_error(h, c, &err);
    api_format f = {.kind = kind, .created = (long long)time(NULL), .model = h->cfg.limits.model_id,
                    .tools = rq.calls, .calls_only = rq.calls && rq.tool_mode == API_TOOLS_REQUIRED,
                    .syntax = rq.syntax};
    pthread_mutex_lock(&h->id_mu);
    unsigned long long number = ++h->next_id;
    pthread_mutex_unlock(&h->id_mu);
    snprintf(f.id, sizeof f.id, "%s-%llu", kind == API_CHAT ? "chatcmpl" : "cmpl", number);
    job *j = job_create(&f, rq.stream, rq.include_usage, rq.best_of, rq.n, h->metrics);
    closing *cl = malloc(sizeof *cl);
    if (!j || !cl) {
        free(cl);
        api_request_free(&rq);
        return srv_fail(h, c, 500, "server_error", NULL, "out of memory");
    }
    rq.desc.top_logprobs = rq.top_logprobs;
    if (rq.echo && !echo(j, h->model, &rq)) {
        free(cl);
        job_closed(j, h->engine); /* never attached: the connection's ownership only */
        api_request_free(&rq);
        return srv_fail(h, c, 500, "server_error", NULL, "out of memory");
    }
    if (h->cfg.ctx_cut && !fit_context(h, &rq, &err)) {
        free(cl);
        job_closed(j, h->engine);
        api_request_free(&rq);
        return srv_send_error(h, c, &err);
    }
    size_t state_len = 0;
    void *state = remote_prefill(h, &rq, &state_len);
    rq.desc.state = state, rq.desc.state_len = state_len;
    uint32_t submitted;
    ember_status s = submit_samples(h, j, &rq, number, &submitted);
    if (s != EMBER_OK && state && !submitted) { /* the peer's state refused: prefill here, never lose the request */
        fprintf(stderr, "ember serve: the prefill peer's state was refused (%s): prefilled here\n", ember_engine_error(h->engine));
        srv_metrics_prefill_peer(h->metrics, false, 0);
        rq.desc.state = NULL, rq.desc.state_len = 0;
        s = submit_samples(h, j, &rq, number, &submitted);
    }
    free(state);
    bool stream = rq.stream;
    char ignored[API_IGNORED_MAX];
    memcpy(ignored, rq.ignored, sizeof ignored);
    req_log *l = srv_log_of(c);
    if (l) memcpy(l->ignored, ignored, sizeof ignored);
    api_request_free(&rq);
    if (s != EMBER_OK) {
        free(cl);
        job_closed(j, h->engine);
        srv_submit_error(s, kind == API_CHAT ? "messages" : "prompt", h->engine, &err);
        return srv_send_error(h, c, &err);
    }
    *cl = (closing){.j = j, .h = h, .log = srv_log_of(c)};
    if (!go_live(h, cl)) {
        close_job(cl); /* (not in the list: removing it changes nothing) */
        return srv_fail(h, c, 503, "server_error", "shutting_down", "the server is shutting down");
    }
    /* close_job runs when the response is done or the client went away (cancelling). */
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, read_job, cl, close_job);
    if (!r) {
        close_job(cl);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", stream ? "text/event-stream" : "application/json");
    if (stream) {
        MHD_add_response_header(r, "Cache-Control", "no-cache");
        MHD_add_response_header(r, "X-Accel-Buffering", "no"); /* nginx: pass events on at once */
    }
    if (ignored[0]) MHD_add_response_header(r, "X-Ember-Ignored-Fields", ignored);
    return srv_queue(&h->cfg, c, MHD_HTTP_OK, r, 0);
}
