/* metrics.h — the server's Prometheus metrics (metrics.c): counters and latency
 * histograms fed by finished requests, gauges read from the engine when scraped. Every
 * call is thread-safe. */
#ifndef EMBER_SERVER_METRICS_H
#define EMBER_SERVER_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "ember.h"

typedef struct srv_metrics srv_metrics;

srv_metrics *srv_metrics_create(void);
void srv_metrics_free(srv_metrics *m);

/* A request finished, for reason why, with metrics rm. */
void srv_metrics_request_done(srv_metrics *m, ember_finish why, const ember_request_metrics *rm);
/* An embeddings input was computed: its prompt tokens count, but it has no finish reason
 * (it generated nothing) and is not among the requests timed end to end. */
void srv_metrics_embedding_done(srv_metrics *m, const ember_request_metrics *rm);
/* A request was answered with HTTP error status (4xx/5xx) before it reached the engine. */
void srv_metrics_refused(srv_metrics *m, int status);
/* A prompt went to the --prefill-peer: its state came back and was taken (ok), or the
 * request was prefilled here instead (a fallback), after seconds of asking. */
void srv_metrics_prefill_peer(srv_metrics *m, bool ok, double seconds);
/* The time between two tokens of one request, seconds. */
void srv_metrics_inter_token(srv_metrics *m, double seconds);

/* The exposition text (Prometheus text format 0.0.4) with the engine's gauges and
 * counters; malloc'ed, *len its length; NULL when memory ran out. */
char *srv_metrics_render(srv_metrics *m, ember_engine *e, size_t *len);

#endif
