/* http_reply.c — see http_reply.h. */
#include "http_reply.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "utf8.h"

double srv_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

req_log *srv_log_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

/* Every response goes out here: the CORS headers (--cors-origin) and the access log's
 * status and size (len: the body's, or 0 when it is read from a job). */
enum MHD_Result srv_queue(const srv_config *cfg, struct MHD_Connection *c, unsigned status,
                          struct MHD_Response *r, size_t len)
{
    if (cfg->cors_origin) {
        MHD_add_response_header(r, "Access-Control-Allow-Origin", cfg->cors_origin);
        MHD_add_response_header(r, "Access-Control-Expose-Headers", "Retry-After, X-Ember-Ignored-Fields");
        if (strcmp(cfg->cors_origin, "*")) MHD_add_response_header(r, "Vary", "Origin");
    }
    req_log *l = srv_log_of(c);
    if (l) l->status = status, l->bytes = len;
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

/* ---- plain responses ------------------------------------------------------------------------ */

enum MHD_Result srv_send_text(srv_http *h, struct MHD_Connection *c, unsigned status, const char *type,
                              char *body, const char *retry_after)
{
    if (!(body = srv_utf8_valid(body))) return MHD_NO;
    size_t len = strlen(body);
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", type);
    if (retry_after) MHD_add_response_header(r, "Retry-After", retry_after);
    return srv_queue(&h->cfg, c, status, r, len);
}

enum MHD_Result srv_send_json(srv_http *h, struct MHD_Connection *c, unsigned status, char *json)
{
    return srv_send_text(h, c, status, "application/json", json, NULL);
}

/* An error response; every one is a refused request in /metrics. */
enum MHD_Result srv_send_error(srv_http *h, struct MHD_Connection *c, const api_error *e)
{
    srv_metrics_refused(h->metrics, e->status);
    return srv_send_text(h, c, (unsigned)e->status, "application/json", api_error_json(e),
                     e->status == 503 ? "1" : NULL);
}

enum MHD_Result srv_fail(srv_http *h, struct MHD_Connection *c, int status, const char *type, const char *code,
                         const char *msg)
{
    api_error e;
    api_fail(&e, status, type, NULL, code, "%s", msg);
    return srv_send_error(h, c, &e);
}

/* A 4xx/5xx for a request the engine refused; param: the field that held its prompt. The
 * engine's worker may be failing a step meanwhile: its message is read with the
 * thread-safe copy. */
void srv_submit_error(ember_status s, const char *param, ember_engine *e, api_error *err)
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

bool srv_queue_full(srv_http *h)
{
    ember_engine_stats st;
    ember_engine_get_stats(h->engine, &st);
    return st.requests_waiting >= h->cfg.max_queue; /* --max-queue 0: refuse all (draining) */
}

enum MHD_Result srv_refuse_queue_full(srv_http *h, struct MHD_Connection *c)
{
    return srv_fail(h, c, 503, "server_error", "queue_full", "the server's queue is full; retry later");
}
