/* bench_http.h — the client side of `ember bench --url` (bench_http.c): sends a workload
 * to an OpenAI-compatible server as streamed /v1/completions requests over libcurl and
 * timestamps the Server-Sent Events that come back. bench_workload.c makes the workload,
 * bench_report.c turns the timestamps into the report. */
#ifndef EMBER_TOOLS_BENCH_HTTP_H
#define EMBER_TOOLS_BENCH_HTTP_H

#include <stdbool.h>
#include <stdint.h>

typedef struct bench_http_opts {
    const char *url;          /* http://HOST:PORT, without a trailing path */
    const char *api_key;      /* sent as "Authorization: Bearer KEY"; NULL = none */
    const char *model;        /* the "model" of every request; NULL = none */
    uint32_t concurrency;     /* most requests in flight; 0 = as the arrivals come */
    /* Called after each request finishes (and once at the start), for a progress bar. */
    void (*progress)(void *user, uint32_t done, uint32_t sent);
    void *progress_user;
} bench_http_opts;

typedef struct bench_http_req {
    /* the request: borrowed, read while it runs */
    double arrival_s;         /* when it is due, in seconds after the start */
    const uint32_t *prompt;   /* token ids */
    uint32_t n_prompt, n_gen; /* n_gen is its max_tokens (with ignore_eos) */
    /* what came back; times in ms on CLOCK_MONOTONIC */
    double send_ms, end_ms;   /* sent; its transfer ended */
    double *chunk_ms;         /* arrival of each event that carried text */
    uint32_t n_chunks, cap_chunks;
    uint32_t n_tokens;        /* the usage event's completion_tokens */
    bool ok;                  /* 200 and a whole stream, through "data: [DONE]" */
    bool length;              /* its finish_reason was "length" (ran to max_tokens) */
    char error[256];          /* why not ok */
} bench_http_req;

/* Asks GET /v1/models what the server serves, which also checks that it is there and
 * takes the API key. Returns the model to name in requests (malloc'd): o->model when the
 * server serves it, else its first model when o->model is NULL; NULL after printing why.
 * *vocab gets the model's vocab_size when the server reports it (ember serve does), else 0. */
char *bench_http_pick_model(const bench_http_opts *o, uint32_t *vocab);

/* Sends r[0..n) at their arrival times (later while concurrency requests are in flight)
 * and waits for all; a request that fails is marked, not fatal. *duration_s is from the
 * start to the last request's end. False (after a message) only when the client itself
 * could not be set up. */
bool bench_http_run(const bench_http_opts *o, bench_http_req *r, uint32_t n, double *duration_s);

/* Frees what bench_http_run allocated in r[0..n). */
void bench_http_free(bench_http_req *r, uint32_t n);

#endif
