/* loader.c — model loading off the UI thread (loader.h). */
#include "loader.h"

#include <stdio.h>
#include <string.h>

/* The share of the bar each file takes: the target model first, then the draft. */
typedef struct stage {
    loader *l;
    float base, span;
} stage;

/* ember_model_opts.progress: called on the loader thread. */
static void on_progress(void *user, float fraction)
{
    const stage *s = user;
    SDL_AtomicSet(&s->l->progress, (int)((s->base + s->span * fraction) * 10000.0f));
}

static ember_status load_one(loader *l, const char *path, const char *what, stage *st, ember_model **out)
{
    ember_model_opts o = l->opts;
    o.progress = on_progress;
    o.progress_user = st;
    ember_status s = ember_model_load(path, &o, out);
    if (s != EMBER_OK) {
        const char *msg = *out ? ember_model_error(*out) : "out of memory";
        if (strstr(msg, path)) snprintf(l->error, sizeof l->error, "cannot load the %s: %s", what, msg);
        else snprintf(l->error, sizeof l->error, "cannot load the %s %s: %s", what, path, msg);
        ember_model_free(*out);
        *out = NULL;
    }
    return s;
}

static int run(void *arg)
{
    loader *l = arg;
    stage main_stage = {l, 0.0f, l->draft_path ? 0.8f : 1.0f}, draft_stage = {l, 0.8f, 0.2f};
    l->status = load_one(l, l->path, "model", &main_stage, &l->model);
    if (l->status == EMBER_OK && l->draft_path)
        l->status = load_one(l, l->draft_path, "draft model", &draft_stage, &l->draft);
    if (l->status == EMBER_OK) {
        ember_engine_opts eo = l->engine_opts;
        eo.draft = l->draft;
        l->status = ember_engine_create(l->model, &eo, &l->engine);
        if (l->status != EMBER_OK) {
            snprintf(l->error, sizeof l->error, "cannot create the engine: %s",
                     l->engine ? ember_engine_error(l->engine) : "out of memory");
            ember_engine_destroy(l->engine);
            l->engine = NULL;
        }
    }
    SDL_AtomicSet(&l->progress, 10000);
    SDL_AtomicSet(&l->finished, 1);
    return 0;
}

int loader_start(loader *l, const char *path, const char *draft_path, const ember_model_opts *mo,
                 const ember_engine_opts *eo)
{
    memset(l, 0, sizeof *l);
    l->path = path;
    l->draft_path = draft_path;
    l->opts = *mo;
    l->engine_opts = *eo;
    l->thread = SDL_CreateThread(run, "ember-load", l);
    if (!l->thread) {
        snprintf(l->error, sizeof l->error, "cannot start the loading thread: %s", SDL_GetError());
        l->status = EMBER_ERR_OUT_OF_MEMORY;
        SDL_AtomicSet(&l->finished, 1);
        return -1;
    }
    return 0;
}

float loader_progress(loader *l) { return (float)SDL_AtomicGet(&l->progress) / 10000.0f; }

int loader_finished(loader *l) { return SDL_AtomicGet(&l->finished); }

void loader_join(loader *l)
{
    if (l->thread) SDL_WaitThread(l->thread, NULL);
    l->thread = NULL;
}
