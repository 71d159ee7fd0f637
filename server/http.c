/* http.c — see http.h. A request's body is collected (up to max_body) across the calls
 * libmicrohttpd makes, then routed; generation responses are read from a job (job.c) by
 * libmicrohttpd's content-reader callback, on the connection's own thread, so a slow
 * client holds only its own thread. Embeddings are waited for on that thread too
 * (embed_job.c) and answered whole. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "embed_job.h"
#include "http.h"
#include "job.h"

struct srv_http {
    struct MHD_Daemon *d;
    srv_config cfg;
    ember_model *model;
    ember_engine *engine;
    srv_metrics *metrics;
    long long started;
    pthread_mutex_t id_mu;
    unsigned long long next_id;
};

typedef struct conn {            /* per connection: the body being received */
    char *body;
    size_t len;
    bool too_big;
} conn;

/* ---- plain responses ------------------------------------------------------------------------ */

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *type, char *body,
                                 const char *retry_after)
{
    if (!body) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", type);
    if (retry_after) MHD_add_response_header(r, "Retry-After", retry_after);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, char *json)
{
    return send_text(c, status, "application/json", json, NULL);
}

/* An error response; every one is a refused request in /metrics. */
static enum MHD_Result send_error(srv_http *h, struct MHD_Connection *c, const api_error *e)
{
    srv_metrics_refused(h->metrics, e->status);
    return send_text(c, (unsigned)e->status, "application/json", api_error_json(e),
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

typedef struct closing {          /* the content reader's argument */
    job *j;
    ember_engine *e;
} closing;

static ssize_t read_job(void *cls, uint64_t pos, char *buf, size_t max)
{
    ssize_t n = job_read(((closing *)cls)->j, buf, max);
    return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

static void close_job(void *cls)
{
    closing *c = cls;
    job_closed(c->j, c->e);
    free(c);
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

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
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result generate(srv_http *h, struct MHD_Connection *c, api_kind kind, const conn *cn)
{
    if (queue_full(h)) return refuse_queue_full(h, c);
    api_request rq;
    api_error err;
    if (!api_parse(&h->cfg.limits, h->model, kind, cn->body ? cn->body : "", cn->len, &rq, &err))
        return send_error(h, c, &err);
    api_format f = {.kind = kind, .created = (long long)time(NULL), .model = h->cfg.limits.model_id,
                    .tools = rq.calls, .syntax = rq.syntax};
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
    api_request_free(&rq);
    if (s != EMBER_OK) {
        free(cl);
        job_closed(j, h->engine);
        submit_error(s, kind == API_CHAT ? "messages" : "prompt", h->engine, &err);
        return send_error(h, c, &err);
    }
    *cl = (closing){j, h->engine};
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
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ok;
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
    return out ? send_json(c, 200, out) : send_error(h, c, &err);
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
    return ok && out ? send_json(c, 200, out) : send_error(h, c, &err);
}

/* /tokenize or /detokenize: answered at once, the engine untouched. */
static enum MHD_Result tokens(srv_http *h, struct MHD_Connection *c, bool tokenize, const conn *cn)
{
    api_error err;
    const char *body = cn->body ? cn->body : "";
    char *out = tokenize ? api_tokenize(&h->cfg.limits, h->model, body, cn->len, &err)
                         : api_detokenize(&h->cfg.limits, h->model, body, cn->len, &err);
    return out ? send_json(c, 200, out) : send_error(h, c, &err);
}

/* ---- routing ------------------------------------------------------------------------------------ */

/* 200 while the server can serve; 503 once its GPU was lost (it never serves again:
 * restart it), so that health checks take it out of a load balancer. */
static enum MHD_Result health(srv_http *h, struct MHD_Connection *c)
{
    ember_engine_stats st;
    ember_engine_get_stats(h->engine, &st);
    if (!st.device_lost) return send_json(c, 200, strdup("{\"status\":\"ok\"}"));
    return send_json(c, 503, strdup("{\"status\":\"device_lost\",\"message\":\"the GPU was lost; restart the "
                                    "server\"}"));
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
    if (get && strcmp(url, "/health") == 0) return health(h, c);
    if (get && strcmp(url, "/metrics") == 0) {
        size_t len;
        char *text = srv_metrics_render(h->metrics, h->engine, &len);
        return send_text(c, 200, "text/plain; version=0.0.4", text, NULL);
    }
    if (!authorized(h, c))
        return fail(h, c, 401, "invalid_request_error", "invalid_api_key", "a valid 'Authorization: Bearer KEY' is required");
    if (get && strcmp(url, "/v1/models") == 0)
        return send_json(c, 200, api_models(&h->cfg.limits, h->started));
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

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why)
{
    conn *cn = *con_cls;
    if (cn) free(cn->body);
    free(cn);
    *con_cls = NULL;
}

srv_http *srv_http_start(const srv_config *cfg, ember_model *model, ember_engine *engine, srv_metrics *metrics)
{
    srv_http *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    *h = (srv_http){.cfg = *cfg, .model = model, .engine = engine, .metrics = metrics,
                    .started = (long long)time(NULL)};
    pthread_mutex_init(&h->id_mu, NULL);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(cfg->port)};
    if (inet_pton(AF_INET, cfg->host, &addr.sin_addr) != 1) {
        fprintf(stderr, "ember serve: --host wants an IPv4 address, got '%s'\n", cfg->host);
        free(h);
        return NULL;
    }
    h->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
                            cfg->port, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_CONNECTION_LIMIT, 1024u,
                            MHD_OPTION_CONNECTION_TIMEOUT, 0u, MHD_OPTION_END);
    if (!h->d) {
        fprintf(stderr, "ember serve: cannot listen on %s:%u (in use?)\n", cfg->host, cfg->port);
        pthread_mutex_destroy(&h->id_mu);
        free(h);
        return NULL;
    }
    return h;
}

uint16_t srv_http_port(const srv_http *h)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    return i ? i->port : h->cfg.port;
}

void srv_http_stop(srv_http *h)
{
    if (!h) return;
    MHD_stop_daemon(h->d);
    pthread_mutex_destroy(&h->id_mu);
    free(h);
}
