/* http.c — see http.h. A request's body is collected (up to max_body) across the calls
 * libmicrohttpd makes, then routed: generation to http_generate.c, whose responses are
 * read from a job by libmicrohttpd's content-reader callback on the connection's own
 * thread, so a slow client holds only its own thread. Embeddings are waited for on that
 * thread too (embed_job.c) and answered whole; state files, tokens, /health and /metrics
 * are answered here. Every response goes out through http_reply.c. */
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
#include "http_generate.h"
#include "http_reply.h"

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
        srv_submit_error(s, "input", h->engine, err);
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
    if (srv_queue_full(h)) return srv_refuse_queue_full(h, c);
    api_embed_request rq;
    api_error err;
    if (!api_parse_embeddings(&h->cfg.limits, cn->body ? cn->body : "", cn->len, &rq, &err))
        return srv_send_error(h, c, &err);
    char *out = embed(h, &rq, &err);
    api_embed_request_free(&rq);
    return out ? srv_send_json(h, c, 200, out) : srv_send_error(h, c, &err);
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
        return srv_fail(h, c, 404, "invalid_request_error", "not_found", "state files are off: start the server with --state-dir DIR");
    if (srv_queue_full(h)) return srv_refuse_queue_full(h, c);
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
    return ok && out ? srv_send_json(h, c, 200, out) : srv_send_error(h, c, &err);
}

/* /tokenize or /detokenize: answered at once, the engine untouched. */
static enum MHD_Result tokens(srv_http *h, struct MHD_Connection *c, bool tokenize, const conn *cn)
{
    api_error err;
    const char *body = cn->body ? cn->body : "";
    char *out = tokenize ? api_tokenize(&h->cfg.limits, h->model, body, cn->len, &err)
                         : api_detokenize(&h->cfg.limits, h->model, body, cn->len, &err);
    return out ? srv_send_json(h, c, 200, out) : srv_send_error(h, c, &err);
}

/* ---- routing ------------------------------------------------------------------------------------ */

/* 200 while the server can serve; 503 once its GPU was lost (it never serves again:
 * restart it), so that health checks take it out of a load balancer. */
static enum MHD_Result health(srv_http *h, struct MHD_Connection *c)
{
    ember_engine_stats st;
    ember_engine_get_stats(h->engine, &st);
    if (!st.device_lost) return srv_send_json(h, c, 200, strdup("{\"status\":\"ok\"}"));
    return srv_send_json(h, c, 503, strdup("{\"status\":\"device_lost\",\"message\":\"the GPU was lost; restart the "
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
    return srv_queue(&h->cfg, c, 204, r, 0);
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
        return srv_send_text(h, c, 200, "text/plain; version=0.0.4", text, NULL);
    }
    if (!authorized(h, c))
        return srv_fail(h, c, 401, "invalid_request_error", "invalid_api_key", "a valid 'Authorization: Bearer KEY' is required");
    if (get && strcmp(url, "/v1/models") == 0)
        return srv_send_json(h, c, 200, api_models(&h->cfg.limits, h->started));
    bool chat = strcmp(url, "/v1/chat/completions") == 0, completion = strcmp(url, "/v1/completions") == 0;
    bool tokenize = strcmp(url, "/tokenize") == 0, detokenize = strcmp(url, "/detokenize") == 0;
    bool embedding = strcmp(url, "/v1/embeddings") == 0;
    bool save = strcmp(url, "/v1/state/save") == 0, restore = strcmp(url, "/v1/state/restore") == 0;
    bool prefill_url = strcmp(url, "/v1/prefill") == 0;
    bool known_post = chat || completion || tokenize || detokenize || embedding || save || restore || prefill_url;
    if (known_post && post && cn->too_big)
        return srv_fail(h, c, 413, "invalid_request_error", "request_too_large", "the request body is too large");
    if ((chat || completion) && post) return srv_generate(h, c, chat ? API_CHAT : API_COMPLETION, cn);
    if ((tokenize || detokenize) && post) return tokens(h, c, tokenize, cn);
    if (embedding && post) return embeddings(h, c, cn);
    if ((save || restore) && post) return state(h, c, save, cn);
    if (prefill_url && post) return srv_prefill(h, c, cn);
    if (known_post || strcmp(url, "/v1/models") == 0)
        return srv_fail(h, c, 405, "invalid_request_error", "method_not_allowed", "method not allowed");
    return srv_fail(h, c, 404, "invalid_request_error", "not_found", "no such endpoint");
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
        req_log *l = srv_log_of(c);
        if (l) {
            *l = (req_log){.t0 = srv_now_s()};
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
    req_log *l = srv_log_of(c);
    if (l && l->method[0]) {
        fprintf(stderr, "ember serve: %s %s %u %llu B %.1f ms%s%s%s\n", l->method, l->path, l->status, l->bytes,
                (srv_now_s() - l->t0) * 1e3, why == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (client gone)",
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
