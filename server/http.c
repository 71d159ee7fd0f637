/* http.c — see http.h. A request's body is collected (up to max_body) across the calls
 * libmicrohttpd makes, then routed; generation responses are read from a job (job.c) by
 * libmicrohttpd's content-reader callback, on the connection's own thread, so a slow
 * client holds only its own thread. Embeddings are waited for on that thread too
 * (embed_job.c) and answered whole. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "embed_job.h"
#include "http.h"
#include "job.h"
#include "utf8.h"

typedef struct closing closing;

struct srv_http {
    struct MHD_Daemon *d;
    srv_config cfg;
    ember_model *model;
    ember_engine *engine;
    srv_metrics *metrics;
    long long started;
    pthread_mutex_t id_mu;
    unsigned long long next_id;
    pthread_mutex_t live_mu;      /* the generation responses being sent, and stopping */
    pthread_cond_t live_cv;
    closing *live;
    bool stopping;
};

/* Per TCP connection (libmicrohttpd's socket context): the access log of the request it
 * is answering now (one at a time: a thread per connection). */
typedef struct req_log {
    double t0;
    char method[12], path[120];
    unsigned status;
    unsigned long long bytes;
    char ignored[API_IGNORED_MAX];
} req_log;

typedef struct conn {            /* per connection: the body being received */
    char *body;
    size_t len;
    bool too_big;
} conn;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static req_log *log_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

/* Every response goes out here: the CORS headers (--cors-origin) and the access log's
 * status and size (len: the body's, or 0 when it is read from a job). */
static enum MHD_Result queue(const srv_config *cfg, struct MHD_Connection *c, unsigned status,
                             struct MHD_Response *r, size_t len)
{
    if (cfg->cors_origin) {
        MHD_add_response_header(r, "Access-Control-Allow-Origin", cfg->cors_origin);
        MHD_add_response_header(r, "Access-Control-Expose-Headers", "Retry-After, X-Ember-Ignored-Fields");
        if (strcmp(cfg->cors_origin, "*")) MHD_add_response_header(r, "Vary", "Origin");
    }
    req_log *l = log_of(c);
    if (l) l->status = status, l->bytes = len;
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

/* ---- plain responses ------------------------------------------------------------------------ */

static enum MHD_Result send_text(srv_http *h, struct MHD_Connection *c, unsigned status, const char *type,
                                 char *body, const char *retry_after)
{
    if (!(body = srv_utf8_valid(body))) return MHD_NO;
    size_t len = strlen(body);
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", type);
    if (retry_after) MHD_add_response_header(r, "Retry-After", retry_after);
    return queue(&h->cfg, c, status, r, len);
}

static enum MHD_Result send_json(srv_http *h, struct MHD_Connection *c, unsigned status, char *json)
{
    return send_text(h, c, status, "application/json", json, NULL);
}

/* An error response; every one is a refused request in /metrics. */
static enum MHD_Result send_error(srv_http *h, struct MHD_Connection *c, const api_error *e)
{
    srv_metrics_refused(h->metrics, e->status);
    return send_text(h, c, (unsigned)e->status, "application/json", api_error_json(e),
                     e->status == 503 ? "1" : NULL);
}

static enum MHD_Result fail(srv_http *h, struct MHD_Connection *c, int status, const char *type, const char *code,
                            const char *msg)
{
    api_error e;
    api_fail(&e, status, type, NULL, code, "%s", msg);
    return send_error(h, c, &e);
}

/* ---- generation ------------------------------------------------------------------------------ */

struct closing {                 /* the content reader's argument; in h->live while sent */
    job *j;
    srv_http *h;
    req_log *log;                 /* the connection's: bytes sent */
    closing *prev, *next;
};

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

/* A 4xx/5xx for a request the engine refused; param: the field that held its prompt. The
 * engine's worker may be failing a step meanwhile: its message is read with the
 * thread-safe copy. */
static void submit_error(ember_status s, const char *param, ember_engine *e, api_error *err)
{
    char why[512];
    ember_engine_copy_error(e, why, sizeof why);
    if (s == EMBER_ERR_CONTEXT_FULL)
        api_fail(err, 400, "invalid_request_error", param, "context_length_exceeded", "%s", why);
    else if (s == EMBER_ERR_INVALID_ARG || s == EMBER_ERR_UNSUPPORTED) /* UNSUPPORTED: a reranker's embeddings */
        api_fail(err, 400, "invalid_request_error", NULL, NULL, "%s", why);
    else if (s == EMBER_ERR_DEVICE_LOST) /* 503: a load balancer sends the request elsewhere */
        api_fail(err, 503, "server_error", NULL, "device_lost", "%s", why);
    else
        api_fail(err, 500, "server_error", NULL, NULL, "%s", why);
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

static bool queue_full(srv_http *h)
{
    ember_engine_stats st;
    ember_engine_get_stats(h->engine, &st);
    return st.requests_waiting >= h->cfg.max_queue; /* --max-queue 0: refuse all (draining) */
}

static enum MHD_Result refuse_queue_full(srv_http *h, struct MHD_Connection *c)
{
    return fail(h, c, 503, "server_error", "queue_full", "the server's queue is full; retry later");
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
    double t0 = now_s();
    void *state = prefill_peer_fetch(&h->cfg.peer, ids, n, len, why, sizeof why);
    srv_metrics_prefill_peer(h->metrics, state != NULL, now_s() - t0);
    if (!state) fprintf(stderr, "ember serve: the prefill peer failed (%s): prefilled here\n", why);
    free(ids);
    return state;
}

/* POST /v1/prefill (--serve-prefill): a completion body's prompt, answered with its KV
 * state as bytes. */
static enum MHD_Result prefill(srv_http *h, struct MHD_Connection *c, const conn *cn)
{
    if (!h->cfg.serve_prefill)
        return fail(h, c, 404, "invalid_request_error", "not_found", "this server prefills for no one: start it with --serve-prefill");
    if (queue_full(h)) return refuse_queue_full(h, c);
    api_request rq;
    api_error err;
    if (!api_parse(&h->cfg.limits, h->model, API_COMPLETION, cn->body ? cn->body : "", cn->len, &rq, &err))
        return send_error(h, c, &err);
    size_t len = 0;
    uint32_t n = 0;
    void *state = state_compute(h->engine, &rq.desc, h->cfg.states.max_bytes, &len, &n, &err);
    api_request_free(&rq);
    if (!state) return send_error(h, c, &err);
    struct MHD_Response *r = MHD_create_response_from_buffer(len, state, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/octet-stream");
    return queue(&h->cfg, c, 200, r, len);
}

static enum MHD_Result generate(srv_http *h, struct MHD_Connection *c, api_kind kind, const conn *cn)
{
    if (queue_full(h)) return refuse_queue_full(h, c);
    api_request rq;
    api_error err;
    if (!api_parse(&h->cfg.limits, h->model, kind, cn->body ? cn->body : "", cn->len, &rq, &err))
        return send_error(h, c, &err);
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
        return fail(h, c, 500, "server_error", NULL, "out of memory");
    }
    rq.desc.top_logprobs = rq.top_logprobs;
    if (rq.echo && !echo(j, h->model, &rq)) {
        free(cl);
        job_closed(j, h->engine); /* never attached: the connection's ownership only */
        api_request_free(&rq);
        return fail(h, c, 500, "server_error", NULL, "out of memory");
    }
    if (h->cfg.ctx_cut && !fit_context(h, &rq, &err)) {
        free(cl);
        job_closed(j, h->engine);
        api_request_free(&rq);
        return send_error(h, c, &err);
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
    req_log *l = log_of(c);
    if (l) memcpy(l->ignored, ignored, sizeof ignored);
    api_request_free(&rq);
    if (s != EMBER_OK) {
        free(cl);
        job_closed(j, h->engine);
        submit_error(s, kind == API_CHAT ? "messages" : "prompt", h->engine, &err);
        return send_error(h, c, &err);
    }
    *cl = (closing){.j = j, .h = h, .log = log_of(c)};
    if (!go_live(h, cl)) {
        close_job(cl); /* (not in the list: removing it changes nothing) */
        return fail(h, c, 503, "server_error", "shutting_down", "the server is shutting down");
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
    return queue(&h->cfg, c, MHD_HTTP_OK, r, 0);
}

/* ---- embeddings ------------------------------------------------------------------------------ */

/* Submits every input of rq at once, each its own request (text with BOS, as completions'
 * prompts), so that the engine computes them in the same steps. */
static ember_status submit_inputs(srv_http *h, embed_job *j, const api_embed_request *rq)
{
    ember_status s = EMBER_OK;
    for (size_t i = 0; s == EMBER_OK && i < rq->n; i++) {
        const api_embed_input *in = &rq->in[i];
        ember_request_desc d = {.prompt = in->text, .tokens = in->tokens, .n_tokens = in->n_tokens};
        embed_job_attach(j, i, &d);
        ember_request_id id = 0;
        s = ember_submit(h->engine, &d, &id);
        embed_job_submitted(j, i, s == EMBER_OK ? id : 0);
    }
    return s;
}

/* The whole response, or NULL with *err filled. The connection's own thread waits here
 * for the engine; a refused submit cancels the inputs already submitted, and their done
 * callbacks are waited for before the job goes. */
static char *embed(srv_http *h, const api_embed_request *rq, api_error *err)
{
    embed_job *j = embed_job_create(rq->n, h->cfg.limits.dim, h->engine, h->metrics);
    if (!j) {
        api_fail(err, 500, "server_error", NULL, NULL, "out of memory");
        return NULL;
    }
    ember_status s = submit_inputs(h, j, rq);
    if (s != EMBER_OK) {
        submit_error(s, "input", h->engine, err);
        embed_job_cancel(j);
    }
    const api_error *failed = embed_job_wait(j);
    char *out = NULL;
    if (s == EMBER_OK && failed) /* (after a refused submit, *err says why already) */
        *err = *failed;
    else if (s == EMBER_OK && !(out = api_embeddings_response(&h->cfg.limits, rq, embed_job_vectors(j),
                                                              embed_job_prompt_tokens(j))))
        api_fail(err, 500, "server_error", NULL, NULL, "out of memory");
    embed_job_free(j);
    return out;
}

static enum MHD_Result embeddings(srv_http *h, struct MHD_Connection *c, const conn *cn)
{
    if (queue_full(h)) return refuse_queue_full(h, c);
    api_embed_request rq;
    api_error err;
    if (!api_parse_embeddings(&h->cfg.limits, cn->body ? cn->body : "", cn->len, &rq, &err))
        return send_error(h, c, &err);
    char *out = embed(h, &rq, &err);
    api_embed_request_free(&rq);
    return out ? send_json(h, c, 200, out) : send_error(h, c, &err);
}

/* ---- KV state files ----------------------------------------------------------------------- */

/* The body's "filename", checked; NULL with *err filled. The caller frees *o. */
static const char *state_filename(srv_http *h, const conn *cn, cJSON **o, api_error *err)
{
    *o = api_parse_object(&h->cfg.limits, cn->body ? cn->body : "", cn->len, err);
    const cJSON *f = *o ? cJSON_GetObjectItemCaseSensitive(*o, "filename") : NULL;
    if (*o && !(cJSON_IsString(f) && state_name_ok(f->valuestring)))
        api_fail(err, 400, "invalid_request_error", "filename", NULL,
                 "'filename' must be 1 to 128 of A-Z a-z 0-9 . _ -, not starting with a dot");
    return *o && cJSON_IsString(f) && state_name_ok(f->valuestring) ? f->valuestring : NULL;
}

/* POST /v1/state/save {prompt, filename} and /v1/state/restore {filename}. */
static enum MHD_Result state(srv_http *h, struct MHD_Connection *c, bool save, const conn *cn)
{
    if (!h->cfg.states.dir)
        return fail(h, c, 404, "invalid_request_error", "not_found", "state files are off: start the server with --state-dir DIR");
    if (queue_full(h)) return refuse_queue_full(h, c);
    api_error err;
    cJSON *o;
    const char *name = state_filename(h, cn, &o, &err);
    api_request rq = {0};
    bool ok = name && (!save || api_parse(&h->cfg.limits, h->model, API_COMPLETION, cn->body, cn->len, &rq, &err));
    uint32_t n = 0, restored = 0;
    size_t bytes = 0;
    if (ok && save) ok = state_save(&h->cfg.states, h->engine, &rq.desc, name, &n, &bytes, &err);
    else if (ok) ok = state_restore(&h->cfg.states, h->engine, name, &n, &restored, &err);
    char *out = NULL;
    if (ok) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "filename", name);
        cJSON_AddNumberToObject(r, "n_tokens", n);
        cJSON_AddNumberToObject(r, save ? "n_bytes" : "n_restored", save ? (double)bytes : restored);
        out = cJSON_PrintUnformatted(r);
        cJSON_Delete(r);
    }
    if (save && name) api_request_free(&rq);
    cJSON_Delete(o);
    if (ok && !out) api_fail(&err, 500, "server_error", NULL, NULL, "out of memory");
    return ok && out ? send_json(h, c, 200, out) : send_error(h, c, &err);
}

/* /tokenize or /detokenize: answered at once, the engine untouched. */
static enum MHD_Result tokens(srv_http *h, struct MHD_Connection *c, bool tokenize, const conn *cn)
{
    api_error err;
    const char *body = cn->body ? cn->body : "";
    char *out = tokenize ? api_tokenize(&h->cfg.limits, h->model, body, cn->len, &err)
                         : api_detokenize(&h->cfg.limits, h->model, body, cn->len, &err);
    return out ? send_json(h, c, 200, out) : send_error(h, c, &err);
}

/* ---- routing ------------------------------------------------------------------------------------ */

/* 200 while the server can serve; 503 once its GPU was lost (it never serves again:
 * restart it), so that health checks take it out of a load balancer. */
static enum MHD_Result health(srv_http *h, struct MHD_Connection *c)
{
    ember_engine_stats st;
    ember_engine_get_stats(h->engine, &st);
    if (!st.device_lost) return send_json(h, c, 200, strdup("{\"status\":\"ok\"}"));
    return send_json(h, c, 503, strdup("{\"status\":\"device_lost\",\"message\":\"the GPU was lost; restart the "
                                    "server\"}"));
}

/* A browser's CORS preflight (--cors-origin): answered before the key is checked, as
 * browsers send no Authorization with it. */
static enum MHD_Result preflight(srv_http *h, struct MHD_Connection *c)
{
    const char *asked = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Access-Control-Request-Headers");
    struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    MHD_add_response_header(r, "Access-Control-Allow-Headers", asked ? asked : "Authorization, Content-Type");
    MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
    return queue(&h->cfg, c, 204, r, 0);
}

static bool authorized(const srv_http *h, struct MHD_Connection *c)
{
    if (!h->cfg.api_key) return true;
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return a && strncmp(a, "Bearer ", 7) == 0 && strcmp(a + 7, h->cfg.api_key) == 0;
}

static enum MHD_Result route(srv_http *h, struct MHD_Connection *c, const char *url, const char *method,
                             const conn *cn)
{
    bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
    if (h->cfg.cors_origin && strcmp(method, "OPTIONS") == 0) return preflight(h, c);
    if (get && strcmp(url, "/health") == 0) return health(h, c);
    if (get && strcmp(url, "/metrics") == 0) {
        size_t len;
        char *text = srv_metrics_render(h->metrics, h->engine, &len);
        return send_text(h, c, 200, "text/plain; version=0.0.4", text, NULL);
    }
    if (!authorized(h, c))
        return fail(h, c, 401, "invalid_request_error", "invalid_api_key", "a valid 'Authorization: Bearer KEY' is required");
    if (get && strcmp(url, "/v1/models") == 0)
        return send_json(h, c, 200, api_models(&h->cfg.limits, h->started));
    bool chat = strcmp(url, "/v1/chat/completions") == 0, completion = strcmp(url, "/v1/completions") == 0;
    bool tokenize = strcmp(url, "/tokenize") == 0, detokenize = strcmp(url, "/detokenize") == 0;
    bool embedding = strcmp(url, "/v1/embeddings") == 0;
    bool save = strcmp(url, "/v1/state/save") == 0, restore = strcmp(url, "/v1/state/restore") == 0;
    bool prefill_url = strcmp(url, "/v1/prefill") == 0;
    bool known_post = chat || completion || tokenize || detokenize || embedding || save || restore || prefill_url;
    if (known_post && post && cn->too_big)
        return fail(h, c, 413, "invalid_request_error", "request_too_large", "the request body is too large");
    if ((chat || completion) && post) return generate(h, c, chat ? API_CHAT : API_COMPLETION, cn);
    if ((tokenize || detokenize) && post) return tokens(h, c, tokenize, cn);
    if (embedding && post) return embeddings(h, c, cn);
    if ((save || restore) && post) return state(h, c, save, cn);
    if (prefill_url && post) return prefill(h, c, cn);
    if (known_post || strcmp(url, "/v1/models") == 0)
        return fail(h, c, 405, "invalid_request_error", "method_not_allowed", "method not allowed");
    return fail(h, c, 404, "invalid_request_error", "not_found", "no such endpoint");
}

/* Called several times per request: first with no data (make the conn), then with each
 * piece of the body, then once more with none (answer). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    srv_http *h = cls;
    conn *cn = *con_cls;
    if (!cn) {
        if (!(cn = calloc(1, sizeof *cn))) return MHD_NO;
        *con_cls = cn;
        req_log *l = log_of(c);
        if (l) {
            *l = (req_log){.t0 = now_s()};
            snprintf(l->method, sizeof l->method, "%s", method);
            snprintf(l->path, sizeof l->path, "%s", url);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (!cn->too_big && cn->len + *upload_size <= h->cfg.max_body) {
            char *b = realloc(cn->body, cn->len + *upload_size + 1);
            if (!b) return MHD_NO;
            memcpy(b + cn->len, upload, *upload_size);
            cn->body = b;
            cn->len += *upload_size;
            b[cn->len] = 0;
        } else {
            cn->too_big = true; /* keep reading, answer 413 at the end */
        }
        *upload_size = 0;
        return MHD_YES;
    }
    return route(h, c, url, method, cn);
}

/* The access log: a line per request on stderr, as llama.cpp's server and vLLM write one. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why)
{
    req_log *l = log_of(c);
    if (l && l->method[0]) {
        fprintf(stderr, "ember serve: %s %s %u %llu B %.1f ms%s%s%s\n", l->method, l->path, l->status, l->bytes,
                (now_s() - l->t0) * 1e3, why == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (client gone)",
                l->ignored[0] ? " ignored fields: " : "", l->ignored);
        l->method[0] = 0;
    }
    conn *cn = *con_cls;
    if (cn) free(cn->body);
    free(cn);
    *con_cls = NULL;
}

static void srv_http_free(srv_http *h)
{
    pthread_mutex_destroy(&h->id_mu);
    pthread_mutex_destroy(&h->live_mu);
    pthread_cond_destroy(&h->live_cv);
    free(h);
}

/* Each TCP connection's req_log, made when it opens and freed when it closes. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    if (code == MHD_CONNECTION_NOTIFY_STARTED) *socket_context = calloc(1, sizeof(req_log));
    else free(*socket_context), *socket_context = NULL;
}

/* libmicrohttpd's messages, less those of a client that hung up (the access log says
 * "client gone" once instead of a line per failed write). */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (strstr(msg, "Failed to send") || strstr(msg, "reset by peer") || strstr(msg, "Broken pipe") ||
        strstr(msg, "closed by remote"))
        return;
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n') msg[--n] = 0;
    fprintf(stderr, "ember serve: libmicrohttpd: %s\n", msg);
}

/* The address --host names: an IPv4 or IPv6 literal, or localhost (127.0.0.1: no name is
 * looked up). *flags gets MHD_USE_IPv6 (dual stack for ::, so IPv4 clients reach it too). */
static bool host_addr(const char *host, struct sockaddr_storage *ss, uint16_t port, unsigned *flags)
{
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    memset(ss, 0, sizeof *ss);
    if (!strcmp(host, "localhost")) host = "127.0.0.1";
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET, a4->sin_port = htons(port), *flags = 0;
        return true;
    }
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1) return false;
    a6->sin6_family = AF_INET6, a6->sin6_port = htons(port);
    *flags = IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr) ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
    return true;
}

srv_http *srv_http_start(const srv_config *cfg, ember_model *model, ember_engine *engine, srv_metrics *metrics)
{
    srv_http *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    *h = (srv_http){.cfg = *cfg, .model = model, .engine = engine, .metrics = metrics,
                    .started = (long long)time(NULL)};
    struct sockaddr_storage addr;
    unsigned family;
    if (!host_addr(cfg->host, &addr, cfg->port, &family)) {
        fprintf(stderr, "ember serve: --host wants an IPv4 or IPv6 address or localhost, got '%s'\n", cfg->host);
        free(h);
        return NULL;
    }
    pthread_mutex_init(&h->id_mu, NULL);
    pthread_mutex_init(&h->live_mu, NULL);
    pthread_cond_init(&h->live_cv, NULL);
    h->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
                                family,
                            cfg->port, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
                            h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h, MHD_OPTION_CONNECTION_LIMIT, 1024u,
                            MHD_OPTION_CONNECTION_TIMEOUT, 0u, MHD_OPTION_END);
    if (!h->d) {
        fprintf(stderr, "ember serve: cannot listen on %s port %u (in use?)\n", cfg->host, cfg->port);
        srv_http_free(h);
        return NULL;
    }
    return h;
}

uint16_t srv_http_port(const srv_http *h)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    return i ? i->port : h->cfg.port;
}

/* Ends every reply being sent (an error event then [DONE] for a stream) and waits up to
 * wait_s for their clients to have read them; new generation requests get 503. */
static void drain(srv_http *h, double wait_s)
{
    api_error e;
    api_fail(&e, 503, "server_error", NULL, "shutting_down", "the server is shutting down");
    pthread_mutex_lock(&h->live_mu);
    h->stopping = true;
    for (closing *c = h->live; c; c = c->next) job_end(c->j, &e);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)wait_s;
    while (h->live && pthread_cond_timedwait(&h->live_cv, &h->live_mu, &ts) == 0) {}
    pthread_mutex_unlock(&h->live_mu);
}

void srv_http_stop(srv_http *h)
{
    if (!h) return;
    drain(h, 5);
    MHD_stop_daemon(h->d);
    srv_http_free(h);
}
