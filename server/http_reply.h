/* http_reply.h — how `ember serve` answers (http_reply.c): every response goes out through
 * srv_queue (CORS headers, the access log's status and size), plain and JSON bodies are
 * checked to be UTF-8, and every error is counted as refused in /metrics. */
#ifndef EMBER_SERVER_HTTP_REPLY_H
#define EMBER_SERVER_HTTP_REPLY_H

#include <microhttpd.h>

#include "http_server.h"

/* Seconds on the monotonic clock. */
double srv_now_s(void);
/* The connection's access-log record (its socket context), or NULL. */
req_log *srv_log_of(struct MHD_Connection *c);
/* Queues r (destroyed here) with the CORS headers; len: its body's bytes for the log, or 0
 * when a job's reader sends it. */
enum MHD_Result srv_queue(const srv_config *cfg, struct MHD_Connection *c, unsigned status, struct MHD_Response *r,
                          size_t len);
/* A whole body (malloc'd; taken, freed by libmicrohttpd) of a content type, with
 * Retry-After when retry_after is set; MHD_NO when it is not valid UTF-8. */
enum MHD_Result srv_send_text(srv_http *h, struct MHD_Connection *c, unsigned status, const char *type, char *body,
                              const char *retry_after);
enum MHD_Result srv_send_json(srv_http *h, struct MHD_Connection *c, unsigned status, char *json);
/* An OpenAI-style error response (Retry-After: 1 with a 503), counted in /metrics. */
enum MHD_Result srv_send_error(srv_http *h, struct MHD_Connection *c, const api_error *e);
enum MHD_Result srv_fail(srv_http *h, struct MHD_Connection *c, int status, const char *type, const char *code,
                         const char *msg);
/* The error for a request the engine refused with s; param: the field that held its prompt. */
void srv_submit_error(ember_status s, const char *param, ember_engine *e, api_error *err);
/* Whether --max-queue requests wait already; the 503 that says so. */
bool srv_queue_full(srv_http *h);
enum MHD_Result srv_refuse_queue_full(srv_http *h, struct MHD_Connection *c);

#endif
