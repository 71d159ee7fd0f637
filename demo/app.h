/* app.h — the demo's state, one struct handed to every part (no globals). */
#ifndef APP_H
#define APP_H

#include <SDL.h>

#include "ember.h"
#include "events.h"
#include "font.h"
#include "input_line.h"
#include "loader.h"
#include "options.h"
#include "panel.h"
#include "stats.h"
#include "stats_bar.h"

typedef enum load_state { LOAD_RUNNING, LOAD_READY, LOAD_FAILED } load_state;

/* The view's own textures (chat_ui.c). */
typedef struct ui_cache {
    stats_bar bar;
    text_tex input_label, input_text, placeholder, loading, copied;
    message banner;       /* the load error, word-wrapped like a message */
    int input_scroll;     /* px of the input text hidden on the left */
    /* what the last drawn frame showed, to tell whether the next must be drawn */
    int drawn_tick;
    load_state drawn_state;
    unsigned drawn_input;
} ui_cache;

typedef struct app {
    options opt;
    SDL_Window *window;
    SDL_Renderer *renderer;
    font body, small;
    /* the model */
    loader load;
    load_state state;
    ember_model *model, *draft;
    ember_engine *engine;
    int worker_started;       /* --threaded: ember_engine_start succeeded */
    int engine_failed;        /* a step failed with a lost device: no more stepping */
    char engine_error[512];   /* shown in the stats bar */
    /* the conversations */
    event_queue queue;
    event_buf batch;
    panel panels[MAX_PANELS];
    int n_panels, focus;
    input_line input;
    reply_opts reply;
    /* figures */
    gen_stats gen;
    frame_stats frames;
    ember_engine_stats engine_stats;
    /* the headless hooks */
    int said, shot_taken, quit, exit_code;
    int shot_requested, n_shots;   /* F12: ember-chat-N.png in the working directory */
    double now_ms;
    ui_cache ui;
} app;

/* Milliseconds since SDL started, with sub-millisecond resolution. */
double app_now_ms(void);

#endif
