/* events.h — what the engine's callbacks hand to the UI thread. The token and done
 * callbacks run on whichever thread steps the engine (the UI thread in the frame-budget
 * and blocking modes, the engine's worker with --threaded); they only append to this
 * queue under its mutex, and the UI thread takes the whole batch once per frame. So panel
 * state is touched by one thread only, in every mode. */
#ifndef EVENTS_H
#define EVENTS_H

#include <SDL.h>

#include "ember.h"

typedef enum chat_event_kind {
    EV_TOKEN,
    EV_STATE,   /* a save's KV state (--sessions, sessions.c): its bytes are the text */
    EV_DONE,
} chat_event_kind;

typedef struct chat_event {
    chat_event_kind kind;
    int panel;
    uint32_t token;              /* EV_TOKEN */
    size_t text_off, text_len;   /* EV_TOKEN, EV_STATE: its bytes, in the batch's text buffer */
    ember_finish why;            /* EV_DONE */
    ember_request_metrics m;     /* EV_DONE */
} chat_event;

/* A batch of events and the bytes of their texts. */
typedef struct event_buf {
    chat_event *ev;
    size_t n, cap;
    char *text;
    size_t text_n, text_cap;
} event_buf;

typedef struct event_queue {
    SDL_mutex *mu;
    event_buf pending;
    int lost;   /* events dropped because memory ran out (reported once by the UI) */
} event_queue;

/* What a request's callbacks get as user: its queue and its panel. */
typedef struct request_slot {
    event_queue *q;
    int panel;
} request_slot;

int event_queue_init(event_queue *q);
void event_queue_free(event_queue *q);
/* The callbacks, for ember_request_desc (user = a request_slot). */
int event_on_token(void *user, ember_request_id id, uint32_t token, const char *text, size_t len);
void event_on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m);
void event_on_state(void *user, ember_request_id id, const void *state, size_t len);
/* Moves every queued event into *out (emptied first; its storage is reused). */
void event_take(event_queue *q, event_buf *out);
void event_buf_free(event_buf *b);

#endif
