/* loader.h — loads the model (and a draft model) and creates the engine on a thread of
 * its own, so that the window keeps drawing a progress bar meanwhile. The UI thread polls
 * loader_finished each frame and takes the handles after loader_join. */
#ifndef LOADER_H
#define LOADER_H

#include <SDL.h>

#include "ember.h"

typedef struct loader {
    /* in */
    const char *path, *draft_path;
    ember_model_opts opts;
    ember_engine_opts engine_opts;
    /* shared with the thread: written by it, read by the UI thread */
    SDL_atomic_t progress;   /* fraction done, in 1/10000 */
    SDL_atomic_t finished;   /* 1 once the thread is about to return */
    /* out, valid after loader_join */
    SDL_Thread *thread;
    ember_model *model, *draft;
    ember_engine *engine;
    ember_status status;
    char error[1024];
} loader;

/* Starts the thread; -1 (message in l->error) when it could not be created. */
int loader_start(loader *l, const char *path, const char *draft_path, const ember_model_opts *mo,
                 const ember_engine_opts *eo);
float loader_progress(loader *l);
int loader_finished(loader *l);
/* Waits for the thread (at once when finished). */
void loader_join(loader *l);

#endif
