/* job.c — see job.h. A stream is: chat's role chunk, a chunk per piece of text as it
 * arrives, the chunk with finish_reason (for a request that failed: an error event
 * instead, as vLLM sends), the usage chunk when asked for, "data: [DONE]". */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "job.h"

#define KEEPALIVE_MS 500
#define PIECE_MAX 1024 /* text bytes per chunk */

typedef enum phase { PH_ROLE, PH_TEXT, PH_USAGE, PH_DONE, PH_END } phase;

struct job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int owners;
    api_format fmt;
    bool stream, include_usage;
    srv_metrics *metrics;
    ember_request_id id;
    /* from the engine */
    char *text;
    size_t len, cap;
    uint32_t n_gen;
    double t_last;                /* the last token's time, for inter-token latency */
    ember_engine *engine;
    bool done;
    ember_finish why;
    api_error err;                /* why, when why is EMBER_FINISH_ERROR */
    ember_model *model;           /* for the tokens' text in log-probabilities */
    bool want_lp;                 /* the request asked for them */
    uint32_t n_prompt_lp;         /* entries of lp that are the echoed prompt's */
    ember_logprobs *lp;           /* one per token, when the request asked for them */
    size_t n_lp, cap_lp;
    /* to the connection */
    size_t sent;                  /* text bytes already in chunks */
    size_t lp_sent, lp_offset;    /* log-probabilities already in chunks; text_offset next */
    bool calls_sent;              /* a stream's tool calls went out (fmt.tools) */
    phase ph;
    char *out;                    /* prepared bytes not yet read, from out_off */
    size_t out_len, out_off;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

job *job_create(const api_format *f, bool stream, bool include_usage, srv_metrics *metrics)
{
    job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->owners = 1;
    j->fmt = *f;
    j->stream = stream;
    j->include_usage = include_usage;
    j->metrics = metrics;
    j->ph = f->kind == API_CHAT ? PH_ROLE : PH_TEXT;
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
    free(j->text);
    free(j->out);
    free(j->lp);
    free(j);
}

/* ---- the engine's side ------------------------------------------------------------------- */

static int on_token(void *user, ember_request_id id, uint32_t tok, const char *text, size_t len)
{
    job *j = user;
    double t = now_s();
    pthread_mutex_lock(&j->mu);
    if (j->n_gen++) srv_metrics_inter_token(j->metrics, t - j->t_last);
    j->t_last = t;
    if (j->len + len > j->cap) {
        size_t cap = 2 * (j->len + len) + 64;
        char *s = realloc(j->text, cap);
        if (!s) len = 0; /* text lost, the request goes on: never fail the engine's thread */
        else j->text = s, j->cap = cap;
    }
    if (len) { /* an empty piece (held back for a stop string) may come before any text: NULL */
        memcpy(j->text + j->len, text, len);
        j->len += len;
    }
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return 0;
}

static void add_logprobs(job *j, const ember_logprobs *lp, bool prompt)
{
    pthread_mutex_lock(&j->mu);
    if (j->n_lp == j->cap_lp) {
        size_t cap = j->cap_lp ? 2 * j->cap_lp : 64;
        ember_logprobs *p = realloc(j->lp, cap * sizeof *p);
        if (p) j->lp = p, j->cap_lp = cap;
    }
    if (j->n_lp < j->cap_lp) j->lp[j->n_lp++] = *lp; /* else lost: never fail the engine's thread */
    if (prompt) j->n_prompt_lp++;
    pthread_mutex_unlock(&j->mu);
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
    job *j = user;
    srv_metrics_request_done(j->metrics, why, m);
    api_error err = {0};
    if (why == EMBER_FINISH_ERROR) failed(j, m->error, &err);
    pthread_mutex_lock(&j->mu);
    j->done = true;
    j->why = why;
    j->err = err;
    j->fmt.n_prompt = m->n_prompt;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    release(j);
}

bool job_echo(job *j, const char *text, size_t len)
{
    if (!(j->text = malloc(len + 1))) return false;
    memcpy(j->text, text, len);
    j->len = len, j->cap = len + 1;
    return true;
}

void job_attach(job *j, ember_request_desc *desc, ember_engine *e, ember_model *model, bool logprobs, bool echo)
{
    j->engine = e;
    j->model = model;
    j->want_lp = logprobs;
    desc->on_token = on_token;
    desc->on_done = on_done;
    desc->on_logprobs = logprobs ? on_logprobs : NULL;
    desc->on_prompt_logprobs = logprobs && echo ? on_prompt_logprobs : NULL;
    desc->user = j;
    pthread_mutex_lock(&j->mu);
    j->owners++;
    pthread_mutex_unlock(&j->mu);
}

void job_submitted(job *j, ember_request_id id)
{
    if (!id) {
        release(j);
        return;
    }
    pthread_mutex_lock(&j->mu);
    j->id = id;
    pthread_mutex_unlock(&j->mu);
}

void job_closed(job *j, ember_engine *e)
{
    pthread_mutex_lock(&j->mu);
    ember_request_id id = j->done ? 0 : j->id;
    pthread_mutex_unlock(&j->mu);
    if (id) ember_cancel(e, id); /* NOT_FOUND when it finished meanwhile: fine */
    release(j);
}

/* ---- the connection's side ----------------------------------------------------------------- */

/* The length of text[0..n) cut back to a whole UTF-8 character. */
static size_t utf8_cut(const char *s, size_t n)
{
    size_t k = n;
    while (k > 0 && ((unsigned char)s[k - 1] & 0xC0) == 0x80) k--; /* continuation bytes */
    if (k == 0) return n;
    unsigned char lead = (unsigned char)s[k - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return n - (k - 1) >= need ? n : k - 1;
}

/* The log-probabilities of the tokens delivered and not yet sent (NULL: none asked, or
 * none new for a stream's chunk). A token's entry comes just before its text does, so
 * only those whose token callback ran go (n_gen of them). */
static cJSON *pending_logprobs(job *j)
{
    size_t ready = (size_t)j->n_prompt_lp + j->n_gen, upto = j->n_lp < ready ? j->n_lp : ready;
    if (!j->want_lp || (j->stream && upto == j->lp_sent)) return NULL;
    cJSON *o = api_logprobs(j->fmt.kind, j->model, j->lp + j->lp_sent, upto - j->lp_sent, &j->lp_offset);
    j->lp_sent = upto;
    return o;
}

/* The next stream event, or NULL when there is none yet (or none left: ph == PH_END). */
static char *next_event(job *j)
{
    if (j->ph == PH_ROLE) {
        j->ph = PH_TEXT;
        return api_chunk(&j->fmt, true, "", 0, NULL, NULL);
    }
    /* with tools, content goes out only up to where a call may begin; once the reply is
     * done the calls are read out of it and sent after the content before them */
    size_t limit = j->done ? j->len : api_tool_safe_len(&j->fmt, j->text, j->len);
    cJSON *calls = NULL;
    if (j->done && j->fmt.tools && !j->calls_sent && j->why != EMBER_FINISH_ERROR)
        calls = api_tool_calls(&j->fmt, j->text, j->len, &limit);
    if (j->ph == PH_TEXT && j->sent < limit) {
        cJSON_Delete(calls);
        size_t n = limit - j->sent;
        if (n > PIECE_MAX) n = utf8_cut(j->text + j->sent, PIECE_MAX);
        char *e = api_chunk(&j->fmt, false, j->text + j->sent, n, NULL, pending_logprobs(j));
        j->sent += n;
        return e;
    }
    if (j->ph == PH_TEXT && calls) {
        j->calls_sent = true;
        j->sent = j->len; /* the calls' text is in the tool_calls delta */
        char *e = api_tool_calls_chunk(&j->fmt, calls);
        cJSON_Delete(calls);
        return e;
    }
    if (j->ph == PH_TEXT && j->done && j->why == EMBER_FINISH_ERROR) {
        j->ph = PH_DONE; /* as vLLM: the error event, then [DONE] */
        return api_error_event(&j->err);
    }
    if (j->ph == PH_TEXT && j->done) {
        j->ph = j->include_usage ? PH_USAGE : PH_DONE;
        return api_chunk(&j->fmt, false, "", 0, j->calls_sent ? "tool_calls" : api_finish_reason(j->why),
                         pending_logprobs(j));
    }
    if (j->ph == PH_USAGE) {
        j->ph = PH_DONE;
        return api_usage_chunk(&j->fmt, j->n_gen);
    }
    if (j->ph == PH_DONE) {
        j->ph = PH_END;
        return strdup("data: [DONE]\n\n");
    }
    return NULL;
}

/* Prepares the next bytes in j->out; false when there are none yet. */
static bool prepare(job *j)
{
    char *s = NULL;
    if (j->stream) {
        s = next_event(j);
    } else if (j->done && j->ph != PH_END) {
        s = api_response(&j->fmt, j->text ? j->text : "", j->len, j->why, j->n_gen,
                         j->why == EMBER_FINISH_ERROR ? &j->err : NULL, pending_logprobs(j));
        j->ph = PH_END;
    }
    if (!s) return false;
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
