/* bench_http.c — see bench_http.h. One thread runs a curl multi loop: it adds a
 * request's easy handle when the request is due (and a slot is free), and curl hands
 * every stream's bytes to on_data as they are read. on_data splits them into
 * Server-Sent Events lines and parses them at once, so an event's timestamp is when its
 * bytes arrived, not when the loop got round to it. */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_http.h"

/* A stream silent this long is taken as broken. A live server is never that quiet: it
 * sends a ":" keep-alive line every 0.5 s while a request waits or computes. */
#define STALL_S 60
#define CONNECT_S 10
#define REPLY_MAX 4096 /* bytes of a non-200 reply kept for its error message */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- small pieces ------------------------------------------------------------------------ */

typedef struct buf { /* a growing NUL-terminated byte string */
    char *s;
    size_t len, cap;
} buf;

static bool buf_add(buf *b, const char *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = 2 * (b->len + n + 1) + 64;
        char *s = realloc(b->s, cap);
        if (!s) return false;
        b->s = s, b->cap = cap;
    }
    memcpy(b->s + b->len, p, n);
    b->len += n;
    b->s[b->len] = 0;
    return true;
}

/* Keeps the first reason a request failed: later ones are usually its consequences. */
static void fail(bench_http_req *r, const char *fmt, ...)
{
    if (r->error[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
}

/* The message of an OpenAI-style error body ({"error": {"message": ...}}), else the body. */
static void reply_message(const char *body, char *out, size_t cap)
{
    cJSON *o = body ? cJSON_Parse(body) : NULL;
    cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "error"), "message");
    snprintf(out, cap, "%s", cJSON_IsString(m) ? m->valuestring : body ? body : "(no body)");
    cJSON_Delete(o);
}

/* The options every exchange shares; url + path is the address. */
static struct curl_slist *setup(CURL *h, const bench_http_opts *o, const char *path, char *errbuf)
{
    char *url = malloc(strlen(o->url) + strlen(path) + 1);
    if (!url) return NULL;
    size_t n = strlen(o->url);
    while (n && o->url[n - 1] == '/') n--;
    memcpy(url, o->url, n);
    strcpy(url + n, path);
    curl_easy_setopt(h, CURLOPT_URL, url); /* curl keeps its own copy */
    free(url);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)CONNECT_S);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)STALL_S);
    /* "Expect:" off: curl would otherwise hold a long prompt's body back for a
     * round trip, waiting for "100 Continue", and that would count as TTFT. */
    struct curl_slist *hd = curl_slist_append(NULL, "Expect:");
    hd = hd ? curl_slist_append(hd, "Content-Type: application/json") : NULL;
    if (hd && o->api_key) {
        char *auth = malloc(strlen(o->api_key) + 32);
        if (auth) sprintf(auth, "Authorization: Bearer %s", o->api_key);
        struct curl_slist *more = auth ? curl_slist_append(hd, auth) : NULL;
        free(auth);
        if (!more) curl_slist_free_all(hd);
        hd = more;
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    return hd;
}

/* ---- the model ---------------------------------------------------------------------------- */

static size_t collect(char *p, size_t size, size_t n, void *user)
{
    buf *b = user;
    return b->len + n > REPLY_MAX * 16 || !buf_add(b, p, n) ? 0 : n;
}

/* From a /v1/models reply: o->model if listed, else (o->model NULL) the first id. */
static char *choose_model(const bench_http_opts *o, const char *reply, uint32_t *vocab)
{
    cJSON *j = cJSON_Parse(reply), *m;
    const char *first = NULL, *found = NULL;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(j, "data")) {
        cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
        if (!cJSON_IsString(id)) continue;
        bool chosen = o->model ? strcmp(o->model, id->valuestring) == 0 : !first;
        if (!first) first = id->valuestring;
        if (o->model && chosen) found = id->valuestring;
        cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "vocab_size");
        if (chosen && cJSON_IsNumber(v) && v->valuedouble > 3 && v->valuedouble < 1e9) *vocab = (uint32_t)v->valuedouble;
    }
    char *pick = NULL;
    if (!first)
        fprintf(stderr, "ember bench: %s/v1/models lists no model\n", o->url);
    else if (o->model && !found)
        fprintf(stderr, "ember bench: %s serves '%s', not '%s' (--model)\n", o->url, first, o->model);
    else if (!(pick = strdup(found ? found : first)))
        fprintf(stderr, "ember bench: out of memory\n");
    cJSON_Delete(j);
    return pick;
}

char *bench_http_pick_model(const bench_http_opts *o, uint32_t *vocab)
{
    *vocab = 0;
    char err[CURL_ERROR_SIZE] = "", msg[512];
    buf reply = {0};
    long code = 0;
    char *pick = NULL;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *h = curl_easy_init();
    struct curl_slist *hd = h ? setup(h, o, "/v1/models", err) : NULL;
    if (!hd) {
        fprintf(stderr, "ember bench: cannot set up an HTTP client (out of memory)\n");
        goto done;
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK) {
        fprintf(stderr, "ember bench: cannot reach %s: %s\n", o->url, err[0] ? err : curl_easy_strerror(rc));
    } else if (code != 200) {
        reply_message(reply.s, msg, sizeof msg);
        fprintf(stderr, "ember bench: %s/v1/models answered HTTP %ld: %s\n", o->url, code, msg);
    } else {
        pick = choose_model(o, reply.s ? reply.s : "", vocab);
    }
done:
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    curl_global_cleanup();
    free(reply.s);
    return pick;
}

/* ---- one streamed request --------------------------------------------------------------- */

typedef struct stream {
    bench_http_req *r;
    CURL *h;
    struct curl_slist *headers;
    char *body;                   /* the request body: curl reads it from here as it sends */
    buf line;                     /* the event line being received */
    buf reply;                    /* a reply that is not a 200 stream, for its message */
    bool done;                    /* "data: [DONE]" came */
    char err[CURL_ERROR_SIZE];
} stream;

static char *request_body(const bench_http_opts *o, const bench_http_req *r)
{
    cJSON *b = cJSON_CreateObject();
    if (o->model) cJSON_AddStringToObject(b, "model", o->model);
    cJSON *p = cJSON_AddArrayToObject(b, "prompt");
    for (uint32_t i = 0; p && i < r->n_prompt; i++) cJSON_AddItemToArray(p, cJSON_CreateNumber(r->prompt[i]));
    cJSON_AddNumberToObject(b, "max_tokens", r->n_gen);
    cJSON_AddNumberToObject(b, "temperature", 0);
    cJSON_AddBoolToObject(b, "ignore_eos", 1);
    cJSON_AddBoolToObject(b, "stream", 1);
    cJSON_AddBoolToObject(cJSON_AddObjectToObject(b, "stream_options"), "include_usage", 1);
    char *s = b ? cJSON_PrintUnformatted(b) : NULL;
    cJSON_Delete(b);
    return s;
}

static void add_chunk(bench_http_req *r, double t)
{
    if (r->n_chunks == r->cap_chunks) {
        uint32_t cap = 2 * r->cap_chunks + 16;
        double *c = realloc(r->chunk_ms, cap * sizeof *c);
        if (!c) {
            fail(r, "out of memory");
            return;
        }
        r->chunk_ms = c, r->cap_chunks = cap;
    }
    r->chunk_ms[r->n_chunks++] = t;
}

/* One "data: {json}" event of a completion stream. */
static void on_event(stream *s, const char *json, double t)
{
    bench_http_req *r = s->r;
    cJSON *o = cJSON_Parse(json);
    if (!o) {
        fail(r, "an event that is not JSON: %.80s", json);
        return;
    }
    cJSON *err = cJSON_GetObjectItemCaseSensitive(o, "error");
    if (err) {
        char *e = cJSON_PrintUnformatted(err);
        fail(r, "the stream reported an error: %s", e ? e : "?");
        cJSON_free(e);
    }
    cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0);
    cJSON *text = cJSON_GetObjectItemCaseSensitive(c0, "text");
    cJSON *why = cJSON_GetObjectItemCaseSensitive(c0, "finish_reason");
    cJSON *usage = cJSON_GetObjectItemCaseSensitive(o, "usage");
    cJSON *n = cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens");
    if (cJSON_IsString(text) && text->valuestring[0]) add_chunk(r, t);
    if (cJSON_IsString(why)) r->length = strcmp(why->valuestring, "length") == 0;
    if (cJSON_IsNumber(n) && n->valuedouble >= 0) r->n_tokens = (uint32_t)n->valuedouble;
    cJSON_Delete(o);
}

/* One line of the stream, without its "\n". Blank lines end events and ":" lines are
 * comments (the server's keep-alives); of the fields only "data" is used by this API. */
static void on_line(stream *s, char *line, size_t len, double t)
{
    if (len && line[len - 1] == '\r') line[--len] = 0;
    if (!len || line[0] == ':' || strncmp(line, "data:", 5) != 0) return;
    const char *d = line[5] == ' ' ? line + 6 : line + 5;
    if (strcmp(d, "[DONE]") == 0) s->done = true;
    else if (s->done) fail(s->r, "an event after data: [DONE]");
    else on_event(s, d, t);
}

static size_t on_data(char *p, size_t size, size_t n, void *user)
{
    stream *s = user;
    double t = now_ms();
    long code = 0;
    curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
    if (code != 200) /* an error reply: keep its start for the message */
        return s->reply.len > REPLY_MAX || buf_add(&s->reply, p, n) ? n : 0;
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(p + i, '\n', n - i);
        size_t k = nl ? (size_t)(nl - (p + i)) : n - i;
        if (!buf_add(&s->line, p + i, k)) return 0; /* curl ends the transfer: a write error */
        i += k;
        if (nl) {
            on_line(s, s->line.s, s->line.len, t);
            s->line.len = 0;
            i++;
        }
    }
    return n;
}

static bool start(stream *s, const bench_http_opts *o, CURLM *m)
{
    bench_http_req *r = s->r;
    s->body = request_body(o, r);
    s->h = s->body ? curl_easy_init() : NULL;
    s->headers = s->h ? setup(s->h, o, "/v1/completions", s->err) : NULL;
    if (!s->headers) return fail(r, "out of memory"), false;
    curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, s->body);
    curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
    r->send_ms = now_ms();
    if (curl_multi_add_handle(m, s->h) != CURLM_OK) return fail(r, "curl refused the request"), false;
    return true;
}

/* A request's transfer ended (rc): decides whether it is ok. */
static void finish(stream *s, CURLcode rc)
{
    bench_http_req *r = s->r;
    long code = 0;
    char msg[512];
    r->end_ms = now_ms();
    curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK && code == 0) {
        fail(r, "%s", s->err[0] ? s->err : curl_easy_strerror(rc));
    } else if (code != 200) {
        reply_message(s->reply.s, msg, sizeof msg);
        fail(r, "HTTP %ld: %s", code, msg);
    } else if (rc != CURLE_OK) {
        fail(r, "the stream broke after %u text events: %s", r->n_chunks, s->err[0] ? s->err : curl_easy_strerror(rc));
    } else if (!s->done) {
        fail(r, "the stream ended without data: [DONE]");
    } else if (!r->n_tokens) {
        fail(r, "the stream had no usage event with completion_tokens");
    }
    r->ok = !r->error[0];
}

static void release(stream *s)
{
    curl_easy_cleanup(s->h);
    curl_slist_free_all(s->headers);
    cJSON_free(s->body);
    free(s->line.s);
    free(s->reply.s);
    s->h = NULL, s->headers = NULL, s->body = NULL, s->line.s = NULL, s->reply.s = NULL;
}

/* ---- the loop ------------------------------------------------------------------------------- */

/* Finishes the transfers curl has completed; returns how many. */
static uint32_t reap(CURLM *m)
{
    uint32_t k = 0;
    int left;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(m, &left))) {
        if (msg->msg != CURLMSG_DONE) continue;
        CURL *h = msg->easy_handle;
        CURLcode rc = msg->data.result; /* msg is gone once the handle is removed */
        stream *s;
        curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&s);
        curl_multi_remove_handle(m, h);
        finish(s, rc);
        release(s);
        k++;
    }
    return k;
}

/* How long the loop may sleep in curl_multi_poll: until the next arrival, when it could
 * be sent; otherwise until curl has news (the second is only a backstop). */
static int wait_ms(const bench_http_opts *o, const bench_http_req *next, uint32_t in_flight, double t0)
{
    if (!next || (o->concurrency && in_flight >= o->concurrency)) return 1000;
    double ms = next->arrival_s * 1e3 - (now_ms() - t0);
    return ms <= 0 ? 0 : ms >= 1000 ? 1000 : (int)ms + 1;
}

static void loop(const bench_http_opts *o, CURLM *m, stream *s, bench_http_req *r, uint32_t n, double t0)
{
    uint32_t next = 0, done = 0, in_flight = 0;
    if (o->progress) o->progress(o->progress_user, 0, 0);
    while (done < n) {
        double t = (now_ms() - t0) / 1e3;
        for (; next < n && r[next].arrival_s <= t && !(o->concurrency && in_flight >= o->concurrency); next++) {
            s[next].r = &r[next];
            if (start(&s[next], o, m)) {
                in_flight++;
            } else {
                release(&s[next]);
                done++;
            }
        }
        int running;
        curl_multi_perform(m, &running);
        uint32_t k = reap(m);
        done += k, in_flight -= k;
        if (k && o->progress) o->progress(o->progress_user, done, next);
        if (done < n) curl_multi_poll(m, NULL, 0, wait_ms(o, next < n ? &r[next] : NULL, in_flight, t0), NULL);
    }
}

bool bench_http_run(const bench_http_opts *o, bench_http_req *r, uint32_t n, double *duration_s)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *m = curl_multi_init();
    stream *s = calloc(n, sizeof *s);
    bool ok = m && s;
    if (ok) {
        double t0 = now_ms();
        loop(o, m, s, r, n, t0);
        *duration_s = (now_ms() - t0) / 1e3;
    } else {
        fprintf(stderr, "ember bench: cannot set up an HTTP client (out of memory)\n");
    }
    free(s);
    curl_multi_cleanup(m);
    curl_global_cleanup();
    return ok;
}

void bench_http_free(bench_http_req *r, uint32_t n)
{
    for (uint32_t i = 0; r && i < n; i++) {
        free(r[i].chunk_ms);
        r[i].chunk_ms = NULL;
    }
}
