/* job.c — see job.h. A stream is: chat's role chunk, a chunk per piece of text as it
 * arrives, the chunk with finish_reason (for a request that failed: an error event
 * instead, as vLLM sends), the usage chunk when asked for, "data: [DONE]". */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "job.h"
#include "utf8.h"

#define KEEPALIVE_MS 500
#define PIECE_MAX 1024 /* text bytes per chunk */

/* A sample's phases in a stream; then the job's own, once every sample has finished. */
typedef enum phase { PH_ROLE, PH_TEXT, PH_FINISHED, PH_USAGE, PH_DONE, PH_END } phase;

/* One sample of the prompt: one engine request. */
typedef struct sample {
    struct job *j;
    uint32_t index;
    ember_request_id id;
    /* from the engine */
    char *text;
    size_t len, cap;
    uint32_t n_gen;
    double t_last;                /* the last token's time, for inter-token latency */
    bool done;
    ember_finish why;
    api_error err;                /* why, when why is EMBER_FINISH_ERROR */
    uint32_t n_prompt_lp;         /* entries of lp that are the echoed prompt's */
    ember_logprobs *lp;           /* one per token, when the request asked for them */
    size_t n_lp, cap_lp;
    double sum_lp;                /* of its generated tokens: best_of's rank */
    /* to the connection (a stream) */
    size_t sent;                  /* text bytes already in chunks */
    size_t lp_sent, lp_offset;    /* log-probabilities already in chunks; text_offset next */
    bool calls_sent;              /* its tool calls went out (fmt.tools) */
    bool ended;                   /* ended by job_end before the engine finished it */
    phase ph;
} sample;

struct job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int owners;
    api_format fmt;
    bool stream, include_usage;
    srv_metrics *metrics;
    ember_engine *engine;
    ember_model *model;           /* for the tokens' text in log-probabilities */
    bool want_lp;                 /* the request asked for them */
    uint32_t n_samples, n_best;   /* best_of samples drawn, n returned */
    uint32_t n_done;
    sample *s;
    phase ph;                     /* PH_TEXT while samples stream, then usage, [DONE] */
    char *out;                    /* prepared bytes not yet read, from out_off */
    size_t out_len, out_off;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

job *job_create(const api_format *f, bool stream, bool include_usage, uint32_t n_samples, uint32_t n_best,
                srv_metrics *metrics)
{
    job *j = calloc(1, sizeof *j);
    if (j) j->s = calloc(n_samples, sizeof *j->s);
    if (!j || !j->s) {
        free(j);
        return NULL;
    }
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->owners = 1;
    j->fmt = *f;
    j->stream = stream;
    j->include_usage = include_usage;
    j->metrics = metrics;
    j->n_samples = n_samples;
    j->n_best = n_best;
    j->ph = PH_TEXT;
    for (uint32_t i = 0; i < n_samples; i++)
        j->s[i] = (sample){.j = j, .index = i, .ph = f->kind == API_CHAT ? PH_ROLE : PH_TEXT};
    return j;
}

static void release(job *j)
{
    pthread_mutex_lock(&j->mu);
    bool last = --j->owners == 0;
    pthread_mutex_unlock(&j->mu);
    if (!last) return;
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    for (uint32_t i = 0; i < j->n_samples; i++) {
        free(j->s[i].text);
        free(j->s[i].lp);
    }
    free(j->s);
    free(j->out);
    free(j);
}

/* ---- the engine's side ------------------------------------------------------------------- */

static int on_token(void *user, ember_request_id id, uint32_t tok, const char *text, size_t len)
{
    sample *x = user;
    job *j = x->j;
    double t = now_s();
    pthread_mutex_lock(&j->mu);
    if (x->n_gen++) srv_metrics_inter_token(j->metrics, t - x->t_last);
    x->t_last = t;
    if (x->len + len > x->cap) {
        size_t cap = 2 * (x->len + len) + 64;
        char *s = realloc(x->text, cap);
        if (!s) len = 0; /* text lost, the request goes on: never fail the engine's thread */
        else x->text = s, x->cap = cap;
    }
    if (len) { /* an empty piece (held back for a stop string) may come before any text: NULL */
        memcpy(x->text + x->len, text, len);
        x->len += len;
    }
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return 0;
}

static void add_logprobs(sample *x, const ember_logprobs *lp, bool prompt)
{
    pthread_mutex_lock(&x->j->mu);
    if (x->n_lp == x->cap_lp) {
        size_t cap = x->cap_lp ? 2 * x->cap_lp : 64;
        ember_logprobs *p = realloc(x->lp, cap * sizeof *p);
        if (p) x->lp = p, x->cap_lp = cap;
    }
    if (x->n_lp < x->cap_lp) x->lp[x->n_lp++] = *lp; /* else lost: never fail the engine's thread */
    if (prompt) x->n_prompt_lp++;
    else x->sum_lp += lp->chosen.logprob;
    pthread_mutex_unlock(&x->j->mu);
}

static void on_logprobs(void *user, ember_request_id id, const ember_logprobs *lp)
{
    add_logprobs(user, lp, false);
}

static void on_prompt_logprobs(void *user, ember_request_id id, const ember_logprobs *lp)
{
    add_logprobs(user, lp, true);
}

/* A request that failed after its 200 went out: the client is told why in the body (a
 * stream's error event, a response's "error"), 503 device_lost when the GPU is gone. */
static void failed(job *j, const char *why, api_error *err)
{
    ember_engine_stats st;
    ember_engine_get_stats(j->engine, &st);
    api_fail(err, st.device_lost ? 503 : 500, "server_error", NULL, st.device_lost ? "device_lost" : NULL, "%s",
             why ? why : "the request failed");
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    sample *x = user;
    job *j = x->j;
    srv_metrics_request_done(j->metrics, why, m);
    api_error err = {0};
    if (why == EMBER_FINISH_ERROR) failed(j, m->error, &err);
    pthread_mutex_lock(&j->mu);
    if (!x->ended) { /* else the reply has its end already (job_end) */
        x->done = true;
        x->why = why;
        x->err = err;
        j->n_done++;
    }
    j->fmt.n_prompt = m->n_prompt;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    release(j);
}

bool job_echo(job *j, const char *text, size_t len)
{
    for (uint32_t i = 0; i < j->n_samples; i++) {
        sample *x = &j->s[i];
        if (!(x->text = malloc(len + 1))) return false;
        memcpy(x->text, text, len);
        x->len = len, x->cap = len + 1;
    }
    return true;
}

void job_attach(job *j, uint32_t i, ember_request_desc *desc, ember_engine *e, ember_model *model, bool logprobs,
                bool echo)
{
    j->engine = e;
    j->model = model;
    j->want_lp = logprobs;
    bool rank = j->n_best < j->n_samples; /* best_of: every sample's tokens are scored */
    desc->on_token = on_token;
    desc->on_done = on_done;
    desc->on_logprobs = logprobs || rank ? on_logprobs : NULL;
    desc->on_prompt_logprobs = logprobs && echo ? on_prompt_logprobs : NULL;
    desc->user = &j->s[i];
    pthread_mutex_lock(&j->mu);
    j->owners++;
    pthread_mutex_unlock(&j->mu);
}

void job_submitted(job *j, uint32_t i, ember_request_id id)
{
    if (!id) {
        release(j);
        return;
    }
    pthread_mutex_lock(&j->mu);
    j->s[i].id = id;
    pthread_mutex_unlock(&j->mu);
}

void job_closed(job *j, ember_engine *e)
{
    for (uint32_t i = 0; i < j->n_samples; i++) {
        pthread_mutex_lock(&j->mu);
        ember_request_id id = j->s[i].done ? 0 : j->s[i].id;
        pthread_mutex_unlock(&j->mu);
        if (id) ember_cancel(e, id); /* NOT_FOUND when it finished meanwhile: fine */
    }
    release(j);
}

void job_end(job *j, const api_error *why)
{
    ember_request_id ids[API_MAX_SAMPLES];
    uint32_t n = 0;
    pthread_mutex_lock(&j->mu);
    for (uint32_t i = 0; i < j->n_samples; i++) {
        sample *x = &j->s[i];
        if (x->done) continue;
        if (x->id) ids[n++] = x->id;
        x->ended = x->done = true;
        x->why = EMBER_FINISH_ERROR;
        x->err = *why;
        j->n_done++;
    }
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    for (uint32_t i = 0; i < n; i++) ember_cancel(j->engine, ids[i]); /* their on_done still lets go of j */
}

/* ---- the connection's side ----------------------------------------------------------------- */

/* The log-probabilities of x's tokens delivered and not yet sent (NULL: none asked, or
 * none new for a stream's chunk). A token's entry comes just before its text does, so
 * only those whose token callback ran go (n_gen of them). */
static cJSON *pending_logprobs(job *j, sample *x)
{
    size_t ready = (size_t)x->n_prompt_lp + x->n_gen, upto = x->n_lp < ready ? x->n_lp : ready;
    if (!j->want_lp || (j->stream && upto == x->lp_sent)) return NULL;
    cJSON *o = api_logprobs(j->fmt.kind, j->model, x->lp + x->lp_sent, upto - x->lp_sent, &x->lp_offset);
    x->lp_sent = upto;
    return o;
}

/* x's next stream event, or NULL when it has none yet (or none left: PH_FINISHED). */
static char *sample_event(job *j, sample *x)
{
    if (x->ph == PH_ROLE) {
        x->ph = PH_TEXT;
        return api_chunk(&j->fmt, x->index, true, "", 0, NULL, NULL);
    }
    if (x->ph != PH_TEXT) return NULL;
    /* with tools, content goes out only up to where a call may begin; once the reply is
     * done the calls are read out of it and sent after the content before them */
    size_t limit = x->done ? x->len : srv_utf8_whole(x->text, api_tool_safe_len(&j->fmt, x->text, x->len));
    cJSON *calls = NULL;
    if (x->done && j->fmt.tools && !x->calls_sent && x->why != EMBER_FINISH_ERROR)
        calls = api_tool_calls(&j->fmt, x->text, x->len, &limit);
    if (x->sent < limit) {
        cJSON_Delete(calls);
        size_t n = limit - x->sent;
        if (n > PIECE_MAX) n = srv_utf8_whole(x->text + x->sent, PIECE_MAX);
        char *e = api_chunk(&j->fmt, x->index, false, x->text + x->sent, n, NULL, pending_logprobs(j, x));
        x->sent += n;
        return e;
    }
    if (calls) {
        x->calls_sent = true;
        x->sent = x->len; /* the calls' text is in the tool_calls delta */
        char *e = api_tool_calls_chunk(&j->fmt, x->index, calls);
        cJSON_Delete(calls);
        return e;
    }
    if (!x->done) return NULL;
    x->ph = PH_FINISHED;
    if (x->why == EMBER_FINISH_ERROR) return api_error_event(&x->err); /* as vLLM: then [DONE] */
    return api_chunk(&j->fmt, x->index, false, "", 0, x->calls_sent ? "tool_calls" : api_finish_reason(x->why),
                     pending_logprobs(j, x));
}

/* Generated tokens of all samples (usage counts each sample's, the prompt once). */
static uint32_t total_gen(const job *j)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < j->n_samples; i++) n += j->s[i].n_gen;
    return n;
}

/* The first failed sample's error, or NULL. */
static const api_error *failure(const job *j)
{
    for (uint32_t i = 0; i < j->n_samples; i++)
        if (j->s[i].why == EMBER_FINISH_ERROR) return &j->s[i].err;
    return NULL;
}

/* The next stream event, or NULL when there is none yet (or none left: ph == PH_END).
 * The samples' events go in index order as they are ready; usage and [DONE] once all
 * have finished (no usage after an error, as vLLM). */
static char *next_event(job *j)
{
    if (j->ph == PH_TEXT) {
        bool all = true;
        for (uint32_t i = 0; i < j->n_samples; i++) {
            char *e = sample_event(j, &j->s[i]);
            if (e) return e;
            all = all && j->s[i].ph == PH_FINISHED;
        }
        if (!all) return NULL;
        j->ph = j->include_usage && !failure(j) ? PH_USAGE : PH_DONE;
    }
    if (j->ph == PH_USAGE) {
        j->ph = PH_DONE;
        return api_usage_chunk(&j->fmt, total_gen(j));
    }
    if (j->ph == PH_DONE) {
        j->ph = PH_END;
        return strdup("data: [DONE]\n\n");
    }
    return NULL;
}

/* best_of: the n samples whose generated tokens are most likely (the sum of their
 * log-probabilities), best first; else all of them in order. */
static void rank(const job *j, uint32_t *order)
{
    for (uint32_t i = 0; i < j->n_samples; i++) order[i] = i;
    if (j->n_best == j->n_samples) return;
    for (uint32_t i = 1; i < j->n_samples; i++) /* insertion sort: stable, at most 128 */
        for (uint32_t k = i; k > 0 && j->s[order[k]].sum_lp > j->s[order[k - 1]].sum_lp; k--) {
            uint32_t t = order[k];
            order[k] = order[k - 1];
            order[k - 1] = t;
        }
}

/* The whole response, once every sample is done. */
static char *response(job *j)
{
    uint32_t order[API_MAX_SAMPLES];
    rank(j, order);
    cJSON *choices = cJSON_CreateArray();
    for (uint32_t k = 0; choices && k < j->n_best; k++) {
        sample *x = &j->s[order[k]];
        cJSON *c = api_choice(&j->fmt, k, x->text ? x->text : "", x->len, x->why, pending_logprobs(j, x));
        if (c) cJSON_AddItemToArray(choices, c);
    }
    return api_response(&j->fmt, choices, total_gen(j), failure(j));
}

/* Prepares the next bytes in j->out; false when there are none yet. */
static bool prepare(job *j)
{
    char *s = NULL;
    if (j->stream) {
        s = next_event(j);
    } else if (j->n_done == j->n_samples && j->ph != PH_END) {
        s = response(j);
        j->ph = PH_END;
    }
    if (!s || !(s = srv_utf8_valid(s))) return false;
    free(j->out);
    j->out = s;
    j->out_len = strlen(s);
    j->out_off = 0;
    return true;
}

/* Waits until something can be prepared or KEEPALIVE_MS have passed (token callbacks
 * that brought no text wake it early: it goes back to waiting). */
static bool wait_for_output(job *j)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += KEEPALIVE_MS * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    while (!prepare(j) && j->ph != PH_END)
        if (pthread_cond_timedwait(&j->cv, &j->mu, &ts) != 0) return prepare(j) || j->ph == PH_END;
    return true;
}

ssize_t job_read(job *j, char *buf, size_t max)
{
    pthread_mutex_lock(&j->mu);
    if (j->out_off == j->out_len && !wait_for_output(j)) {
        /* Nothing for a while: bytes the format ignores, so that a client that went away
         * is noticed (the write fails) and its request cancelled. */
        pthread_mutex_unlock(&j->mu);
        const char *ka = j->stream ? ":\n\n" : " ";
        size_t n = strlen(ka) < max ? strlen(ka) : max;
        memcpy(buf, ka, n);
        return (ssize_t)n;
    }
    ssize_t n = -1;
    if (j->out_off < j->out_len) {
        size_t k = j->out_len - j->out_off < max ? j->out_len - j->out_off : max;
        memcpy(buf, j->out + j->out_off, k);
        j->out_off += k;
        n = (ssize_t)k;
    }
    pthread_mutex_unlock(&j->mu);
    return n;
}
