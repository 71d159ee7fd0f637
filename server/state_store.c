/* state_store.c — see state_store.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_store.h"

/* One save or restore request, waited for by the connection's thread (the callbacks run
 * on the engine's). */
typedef struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    ember_finish why;
    ember_request_metrics m;
    char error[256];
    void *state;              /* a save's state, copied */
    size_t len;
} waiter;

static void on_state(void *user, ember_request_id id, const void *state, size_t len)
{
    waiter *w = user;
    if ((w->state = malloc(len))) memcpy(w->state, state, len), w->len = len;
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    waiter *w = user;
    pthread_mutex_lock(&w->mu);
    w->why = why;
    w->m = *m;
    snprintf(w->error, sizeof w->error, "%s", m->error ? m->error : "");
    w->done = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Submits desc (prompt_only, pointed at w) and waits for its end; false with *err. */
static bool run(ember_engine *e, ember_request_desc *desc, waiter *w, api_error *err)
{
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    desc->prompt_only = 1;
    desc->on_done = on_done;
    desc->user = w;
    ember_status s = ember_submit(e, desc, NULL);
    if (s != EMBER_OK) {
        char why[320];
        ember_engine_copy_error(e, why, sizeof why);
        api_fail(err, s == EMBER_ERR_OUT_OF_MEMORY || s == EMBER_ERR_DEVICE_LOST ? 503 : 400,
                 s == EMBER_ERR_OUT_OF_MEMORY || s == EMBER_ERR_DEVICE_LOST ? "server_error" : "invalid_request_error",
                 NULL, NULL, "%s", why);
    }
    pthread_mutex_lock(&w->mu);
    while (s == EMBER_OK && !w->done) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    if (s == EMBER_OK && w->why == EMBER_FINISH_ERROR)
        api_fail(err, 500, "server_error", NULL, NULL, "%s", w->error[0] ? w->error : "the request failed");
    return s == EMBER_OK && w->why != EMBER_FINISH_ERROR;
}

bool state_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 128 || name[0] == '.') return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", name[i])) return false;
    return true;
}

static void path_of(const state_store *st, const char *name, const char *suffix, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s%s", st->dir, name, suffix);
}

/* Writes buf to dir/name through name.tmp and a rename, so that no reader sees half. */
static bool write_file(const state_store *st, const char *name, const void *buf, size_t len, api_error *err)
{
    char tmp[4200], path[4200];
    path_of(st, name, ".tmp", tmp, sizeof tmp);
    path_of(st, name, "", path, sizeof path);
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(buf, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = false;
    if (ok && rename(tmp, path) != 0) ok = false;
    if (!ok) {
        remove(tmp);
        api_fail(err, 500, "server_error", NULL, NULL, "cannot write the state file '%s': %s", name, strerror(errno));
    }
    return ok;
}

void *state_compute(ember_engine *e, ember_request_desc *desc, uint64_t max_bytes, size_t *len, uint32_t *n_tokens,
                    api_error *err)
{
    waiter w = {0};
    desc->on_state = on_state;
    bool ok = run(e, desc, &w, err);
    if (ok && !w.state) ok = false, api_fail(err, 500, "server_error", NULL, NULL, "out of memory for the state");
    if (ok && w.len > max_bytes)
        ok = false, api_fail(err, 400, "invalid_request_error", "prompt", NULL,
                             "the state of %u tokens takes %zu bytes, more than --max-state-mib allows", w.m.n_prompt,
                             w.len);
    *n_tokens = w.m.n_prompt;
    *len = ok ? w.len : 0;
    if (!ok) free(w.state);
    return ok ? w.state : NULL;
}

bool state_save(const state_store *st, ember_engine *e, ember_request_desc *desc, const char *name,
                uint32_t *n_tokens, size_t *bytes, api_error *err)
{
    void *state = state_compute(e, desc, st->max_bytes, bytes, n_tokens, err);
    bool ok = state && write_file(st, name, state, *bytes, err);
    free(state);
    return ok;
}

/* The whole of dir/name, at most max_bytes; NULL with *err (404 when it is not there). */
static void *read_file(const state_store *st, const char *name, size_t *len, api_error *err)
{
    char path[4200];
    path_of(st, name, "", path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        api_fail(err, 404, "invalid_request_error", "filename", "state_not_found", "no state file '%s'", name);
        return NULL;
    }
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *buf = size >= 0 && (uint64_t)size <= st->max_bytes ? malloc(size ? (size_t)size : 1) : NULL;
    bool ok = buf && fseek(f, 0, SEEK_SET) == 0 && fread(buf, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    if (!ok) {
        free(buf);
        if (size >= 0 && (uint64_t)size > st->max_bytes)
            api_fail(err, 400, "invalid_request_error", "filename", NULL, "the state file '%s' is larger than "
                     "--max-state-mib allows", name);
        else
            api_fail(err, 500, "server_error", NULL, NULL, "cannot read the state file '%s'", name);
        return NULL;
    }
    *len = (size_t)size;
    return buf;
}

bool state_restore(const state_store *st, ember_engine *e, const char *name, uint32_t *n_tokens,
                   uint32_t *n_restored, api_error *err)
{
    size_t len = 0;
    void *buf = read_file(st, name, &len, err);
    if (!buf) return false;
    waiter w = {0};
    ember_request_desc d = {.state = buf, .state_len = len};
    bool ok = run(e, &d, &w, err);
    free(buf);
    *n_tokens = w.m.n_prompt;
    *n_restored = w.m.n_restored;
    return ok;
}
