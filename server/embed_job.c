/* embed_job.c — see embed_job.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "embed_job.h"

typedef struct slot {            /* one input: one engine request */
    struct embed_job *j;
    ember_request_id id;         /* 0 until submitted */
    bool got, done;              /* its vector came; its done callback ran */
} slot;

struct embed_job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ember_engine *engine;
    srv_metrics *metrics;
    size_t n, pending;           /* inputs; requests submitted whose done callback has not run */
    uint32_t dim;
    float *v;                    /* n vectors of dim */
    slot *s;
    uint64_t n_prompt;
    bool failed;
    api_error err;               /* the first failure */
};

embed_job *embed_job_create(size_t n, uint32_t dim, ember_engine *e, srv_metrics *metrics)
{
    embed_job *j = calloc(1, sizeof *j);
    float *v = calloc(n * dim, sizeof *v);
    slot *s = calloc(n, sizeof *s);
    if (!j || !v || !s) {
        free(j);
        free(v);
        free(s);
        return NULL;
    }
    *j = (embed_job){.engine = e, .metrics = metrics, .n = n, .dim = dim, .v = v, .s = s};
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    for (size_t i = 0; i < n; i++) s[i].j = j;
    return j;
}

void embed_job_free(embed_job *j)
{
    if (!j) return;
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j->v);
    free(j->s);
    free(j);
}

/* ---- the engine's side (its worker thread) ----------------------------------------------- */

static void on_embedding(void *user, ember_request_id id, const float *v, uint32_t dim)
{
    slot *x = user;
    embed_job *j = x->j;
    pthread_mutex_lock(&j->mu);
    if (dim == j->dim) { /* always the model's; another size is left to fail in on_done */
        memcpy(j->v + (size_t)(x - j->s) * j->dim, v, (size_t)dim * sizeof *v);
        x->got = true;
    }
    pthread_mutex_unlock(&j->mu);
}

/* An input that ended without its vector: the failed step's message (503 device_lost once
 * the GPU is gone, as generation says it), else how it ended (cancelled: the server stops). */
static api_error failure(embed_job *j, size_t i, ember_finish why, const char *error)
{
    ember_engine_stats st;
    ember_engine_get_stats(j->engine, &st);
    api_error e;
    api_fail(&e, st.device_lost ? 503 : 500, "server_error", NULL, st.device_lost ? "device_lost" : NULL,
             "input %zu ended without its embedding: %s", i, error ? error : ember_finish_name(why));
    return e;
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    slot *x = user;
    embed_job *j = x->j;
    if (why == EMBER_FINISH_LENGTH) srv_metrics_embedding_done(j->metrics, m); /* its normal end: no reason */
    else srv_metrics_request_done(j->metrics, why, m);                        /* cancelled, failed */
    bool bad = why != EMBER_FINISH_LENGTH || !x->got; /* got: set on this thread, before */
    api_error err = bad ? failure(j, (size_t)(x - j->s), why, m->error) : (api_error){0};
    pthread_mutex_lock(&j->mu);
    if (bad && !j->failed) j->err = err;
    j->failed = j->failed || bad;
    j->n_prompt += m->n_prompt;
    x->done = true;
    j->pending--;
    /* the connection may free j as soon as the lock is let go: nothing of j after it */
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* ---- the connection's side ------------------------------------------------------------------ */

void embed_job_attach(embed_job *j, size_t i, ember_request_desc *desc)
{
    desc->on_embedding = on_embedding;
    desc->on_done = on_done;
    desc->user = &j->s[i];
    pthread_mutex_lock(&j->mu);
    j->pending++;
    pthread_mutex_unlock(&j->mu);
}

void embed_job_submitted(embed_job *j, size_t i, ember_request_id id)
{
    pthread_mutex_lock(&j->mu);
    if (id) j->s[i].id = id;
    else j->pending--; /* refused: no callback will come */
    pthread_mutex_unlock(&j->mu);
}

void embed_job_cancel(embed_job *j)
{
    for (size_t i = 0; i < j->n; i++) {
        pthread_mutex_lock(&j->mu);
        ember_request_id id = j->s[i].done ? 0 : j->s[i].id;
        pthread_mutex_unlock(&j->mu);
        if (id) ember_cancel(j->engine, id); /* NOT_FOUND when it finished meanwhile: fine */
    }
}

const api_error *embed_job_wait(embed_job *j)
{
    pthread_mutex_lock(&j->mu);
    while (j->pending) pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
    return j->failed ? &j->err : NULL;
}

const float *embed_job_vectors(const embed_job *j) { return j->v; }

uint64_t embed_job_prompt_tokens(const embed_job *j) { return j->n_prompt; }
