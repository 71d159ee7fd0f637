/* http_generate.h — the generation endpoints of `ember serve` (http_generate.c):
 * /v1/chat/completions and /v1/completions, submitted to the engine and read back from a
 * job (job.c) by libmicrohttpd's content reader on the connection's thread, with a prompt
 * prefilled by a --prefill-peer when it is long enough; and POST /v1/prefill, a prompt's
 * KV state for such a peer. */
#ifndef EMBER_SERVER_HTTP_GENERATE_H
#define EMBER_SERVER_HTTP_GENERATE_H

#include <microhttpd.h>

#include "http_server.h"

/* Answers a completion (kind API_COMPLETION) or chat request with the body in cn. */
enum MHD_Result srv_generate(srv_http *h, struct MHD_Connection *c, api_kind kind, const conn *cn);
/* Answers POST /v1/prefill (404 unless --serve-prefill). */
enum MHD_Result srv_prefill(srv_http *h, struct MHD_Connection *c, const conn *cn);

#endif
