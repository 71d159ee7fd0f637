/* http.h — the HTTP side of `ember serve` (http.c): a libmicrohttpd daemon whose
 * connections each run on a thread of their own, routing the OpenAI endpoints onto one
 * engine. */
#ifndef EMBER_SERVER_HTTP_H
#define EMBER_SERVER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "metrics.h"
#include "prefill_peer.h"
#include "state_store.h"

typedef struct srv_config {
    const char *host;         /* address to bind; "127.0.0.1" unless --host */
    uint16_t port;
    const char *api_key;      /* NULL = no authentication */
    const char *cors_origin;  /* --cors-origin: Access-Control-Allow-Origin, OPTIONS answered; NULL = off */
    uint32_t max_queue;       /* requests waiting before 503 */
    size_t max_body;          /* bytes; larger bodies get 413 */
    api_limits limits;        /* limits.ctx_len: -c N when given, else the model's context */
    bool ctx_cut;             /* -c N below the model's: prompt and reply must fit N (generate) */
    state_store states;       /* --state-dir: /v1/state/save and /v1/state/restore */
    bool serve_prefill;       /* --serve-prefill: POST /v1/prefill answers prompts' KV states */
    prefill_peer peer;        /* --prefill-peer: long prompts are prefilled there */
} srv_config;

typedef struct srv_http srv_http;

/* Starts serving; NULL with a message on stderr when the address cannot be bound. The
 * model, engine (running its worker thread) and metrics must outlive it. */
srv_http *srv_http_start(const srv_config *cfg, ember_model *model, ember_engine *engine, srv_metrics *metrics);
/* The port it listens on (the one the system chose for port 0). */
uint16_t srv_http_port(const srv_http *h);
/* Ends the replies being sent (an error event and [DONE] for streams), waits a few
 * seconds for their clients to read them, then closes the connections and frees. */
void srv_http_stop(srv_http *h);

#endif
