/* events.c — the queue from the engine's callbacks to the UI thread (events.h). */
#include "events.h"

#include <stdlib.h>
#include <string.h>

int event_queue_init(event_queue *q)
{
    *q = (event_queue){0};
    q->mu = SDL_CreateMutex();
    return q->mu ? 0 : -1;
}

void event_buf_free(event_buf *b)
{
    free(b->ev);
    free(b->text);
    *b = (event_buf){0};
}

void event_queue_free(event_queue *q)
{
    if (q->mu) SDL_DestroyMutex(q->mu);
    event_buf_free(&q->pending);
    *q = (event_queue){0};
}

/* Appends under the queue's lock (held by the caller); 0 when memory ran out. */
static int push(event_buf *b, const chat_event *e, const char *text, size_t len)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        chat_event *p = realloc(b->ev, cap * sizeof *p);
        if (!p) return 0;
        b->ev = p, b->cap = cap;
    }
    if (b->text_n + len > b->text_cap) {
        size_t cap = b->text_cap ? b->text_cap : 256;
        while (cap < b->text_n + len) cap *= 2;
        char *p = realloc(b->text, cap);
        if (!p) return 0;
        b->text = p, b->text_cap = cap;
    }
    chat_event *d = &b->ev[b->n++];
    *d = *e;
    d->text_off = b->text_n;
    d->text_len = len;
    if (len) memcpy(b->text + b->text_n, text, len);
    b->text_n += len;
    return 1;
}

static void push_locked(event_queue *q, const chat_event *e, const char *text, size_t len)
{
    SDL_LockMutex(q->mu);
    if (!push(&q->pending, e, text, len)) q->lost++;
    SDL_UnlockMutex(q->mu);
}

int event_on_token(void *user, ember_request_id id, uint32_t token, const char *text, size_t len)
{
    const request_slot *s = user;
    chat_event e = {.kind = EV_TOKEN, .panel = s->panel, .token = token};
    push_locked(s->q, &e, text, len);
    return 0; /* stopping goes through ember_cancel (Esc, the Stop button) */
}

void event_on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    const request_slot *s = user;
    chat_event e = {.kind = EV_DONE, .panel = s->panel, .why = why, .m = *m};
    push_locked(s->q, &e, NULL, 0);
}

void event_on_state(void *user, ember_request_id id, const void *state, size_t len)
{
    const request_slot *s = user;
    chat_event e = {.kind = EV_STATE, .panel = s->panel};
    push_locked(s->q, &e, state, len);
}

void event_take(event_queue *q, event_buf *out)
{
    out->n = out->text_n = 0;
    SDL_LockMutex(q->mu);
    event_buf t = q->pending;
    q->pending = *out;   /* the emptied buffer is reused for the next batch */
    *out = t;
    SDL_UnlockMutex(q->mu);
}
