/* http_server.h — the fields of the HTTP server (http.c starts and stops it; http_reply.c
 * and http_generate.c answer on it), and what each connection carries. Fields only: the
 * functions are in the files named. */
#ifndef EMBER_SERVER_HTTP_SERVER_H
#define EMBER_SERVER_HTTP_SERVER_H

#include <pthread.h>

#include "http.h"
#include "job.h"

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

struct closing {                 /* the content reader's argument; in h->live while sent */
    job *j;
    srv_http *h;
    req_log *log;                 /* the connection's: bytes sent */
    closing *prev, *next;
};

#endif
