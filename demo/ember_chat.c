/* ember_chat.c — ember-chat, the SDL2 chat demo of Ember: conversation panels side by
 * side, all served at once by one engine (continuous batching), the replies streamed
 * token by token while the window keeps its frame rate. It uses only include/ember.h, as
 * an application outside the project would. docs/ember-chat.md.
 *
 * This file: start-up and shut-down, the frame loop, driving the engine (a frame budget,
 * a worker thread, or a blocking step per frame), and the headless hooks (--say,
 * --screenshot, --quit-after-reply) the test and the benchmark use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "chat_ui.h"
#include "controls.h"
#include "png.h"
#include "sessions.h"

#define BODY_PX 15
#define SMALL_PX 13
/* What the frame-budget mode leaves of a frame for the wake-up from SDL_Delay and the
 * callbacks of a step that ends at the deadline. */
#define SLACK_MS 1.0

double app_now_ms(void) { return (double)SDL_GetPerformanceCounter() * 1000.0 / (double)SDL_GetPerformanceFrequency(); }

/* ---- start-up ------------------------------------------------------------------------ */

/* The fonts for what the main font lacks (CJK, emoji); without them such text shows as
 * boxes, and stderr says what to install. --verbose says which font draws 中 and 😀. */
static void open_fallbacks(app *a)
{
    static const char *const kinds[FALLBACKS] = {"CJK", "emoji"};
    char path[FALLBACKS][1024];
    for (int k = 0; k < FALLBACKS; k++) {
        if (!font_find_fallback(k, path[k], sizeof path[k])) {
            fprintf(stderr, "ember-chat: %s\n", path[k]);
            path[k][0] = 0;
        } else if (font_add_fallback(&a->body, k, path[k]) != 0 || font_add_fallback(&a->small, k, path[k]) != 0) {
            fprintf(stderr, "ember-chat: cannot open the %s font %s: %s\n", kinds[k], path[k], TTF_GetError());
            path[k][0] = 0;
        } else {
            fprintf(stderr, "ember-chat: %s font %s\n", kinds[k], path[k]);
        }
    }
    static const uint32_t probes[] = {0x4E2D, 0x1F600};
    for (size_t i = 0; a->opt.verbose && i < sizeof probes / sizeof *probes; i++) {
        int k;
        font_source(&a->body, probes[i], &k);
        fprintf(stderr, "ember-chat: U+%04X drawn by %s\n", (unsigned)probes[i], k < 0 ? "the main font" : path[k]);
    }
}

static int open_fonts(app *a)
{
    char path[1024], err[1200];
    if (TTF_Init() != 0) {
        fprintf(stderr, "ember-chat: SDL_ttf: %s\n", TTF_GetError());
        return -1;
    }
    if (!font_find(a->opt.font, path, sizeof path)) {
        fprintf(stderr, "ember-chat: %s\n", path);
        return -1;
    }
    if (font_open(&a->body, path, BODY_PX, err, sizeof err) != 0 ||
        font_open(&a->small, path, SMALL_PX, err, sizeof err) != 0) {
        fprintf(stderr, "ember-chat: %s\n", err);
        return -1;
    }
    fprintf(stderr, "ember-chat: font %s\n", path);
    open_fallbacks(a);
    return 0;
}

static int open_window(app *a)
{
    if (SDL_Init(SDL_INIT_VIDEO) != 0) {
        fprintf(stderr, "ember-chat: cannot open a window: %s (no display? headless: xvfb-run -a ember-chat ...)\n",
                SDL_GetError());
        return -1;
    }
    a->window = SDL_CreateWindow("ember-chat", SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, a->opt.width,
                                 a->opt.height, SDL_WINDOW_RESIZABLE);
    if (!a->window) {
        fprintf(stderr, "ember-chat: cannot open a window: %s\n", SDL_GetError());
        return -1;
    }
    /* Frames are paced by SDL_Delay, not vsync, so the frame times measure the demo. */
    SDL_SetHint(SDL_HINT_RENDER_VSYNC, "0");
    if (a->opt.renderer) SDL_SetHint(SDL_HINT_RENDER_DRIVER, a->opt.renderer);
    a->renderer = SDL_CreateRenderer(a->window, -1, 0);
    if (!a->renderer) {
        fprintf(stderr, "ember-chat: renderer: %s; using the software renderer\n", SDL_GetError());
        SDL_SetHint(SDL_HINT_RENDER_DRIVER, "software");
        a->renderer = SDL_CreateRenderer(a->window, -1, SDL_RENDERER_SOFTWARE);
    }
    if (!a->renderer) {
        fprintf(stderr, "ember-chat: no renderer: %s\n", SDL_GetError());
        return -1;
    }
    SDL_RendererInfo info;
    if (SDL_GetRendererInfo(a->renderer, &info) == 0) fprintf(stderr, "ember-chat: renderer %s\n", info.name);
    SDL_StartTextInput();
    return 0;
}

static int init_state(app *a)
{
    a->n_panels = a->opt.panels;
    a->reply.max_tokens = (uint32_t)a->opt.max_tokens;
    a->reply.progress = (uint32_t)a->opt.progress;
    if (a->opt.ngram) a->reply.spec = (ember_speculation){.draft_k = 4, .ngram = (uint32_t)a->opt.ngram};
    if (a->opt.draft) a->reply.spec = (ember_speculation){.draft_k = 4};
    if (event_queue_init(&a->queue) != 0 || input_init(&a->input) != 0) return -1;
    for (int i = 0; i < a->n_panels; i++)
        if (panel_init(&a->panels[i], i, options_character(&a->opt, i), &a->reply, &a->queue) != 0) return -1;
    return 0;
}

static void start_loading(app *a)
{
    const char *v = getenv("EMBER_VALIDATION");
    ember_model_opts mo = {.device_index = a->opt.device >= 0 ? a->opt.device + 1 : 0,
                           .enable_validation = v && strcmp(v, "1") == 0};
    /* One sequence per panel: each panel has at most one reply in flight. */
    ember_engine_opts eo = {.max_seqs = (uint32_t)a->n_panels};
    a->state = LOAD_RUNNING;
    loader_start(&a->load, a->opt.model, a->opt.draft, &mo, &eo);
}

/* Shows why the model did not load, in the window and on stderr. */
static void load_failed(app *a)
{
    char msg[sizeof a->load.error + 128];
    const char *hint = " (--device N is the library's device_index N + 1: ember info lists devices from 0)";
    snprintf(msg, sizeof msg, "%s%s", a->load.error, a->opt.device >= 0 ? hint : "");
    fprintf(stderr, "ember-chat: %s\n", msg);
    message *m = &a->ui.banner;
    m->role = MSG_NOTE;
    message_append(m, msg, strlen(msg));
    a->state = LOAD_FAILED;
    a->exit_code = 1;
}

/* --threaded: the engine's worker thread; without one, the frame budget takes over. */
static void start_worker(app *a)
{
    if (ember_engine_start(a->engine) == EMBER_OK) {
        a->worker_started = 1;
        return;
    }
    snprintf(a->engine_error, sizeof a->engine_error, "worker thread: %s", ember_engine_error(a->engine));
    fprintf(stderr, "ember-chat: %s; stepping once per frame instead\n", a->engine_error);
    a->opt.mode = DRIVE_BUDGET;
}

/* Takes the loader's results once its thread is done. */
static void poll_loader(app *a)
{
    if (a->state != LOAD_RUNNING || !loader_finished(&a->load)) return;
    loader_join(&a->load);
    a->model = a->load.model, a->draft = a->load.draft, a->engine = a->load.engine;
    if (a->load.status != EMBER_OK) {
        load_failed(a);
        return;
    }
    if (a->opt.mode == DRIVE_THREADED) start_worker(a);
    for (int i = 0; i < a->n_panels; i++) panel_open_chat(&a->panels[i], a->model);
    sessions_restore(a);
    ember_model_info info;
    ember_model_get_info(a->model, &info);
    fprintf(stderr, "ember-chat: ready: %s on %s, context %u, chat template %s\n", info.arch, info.device_name,
            info.ctx_len, a->panels[0].chat ? ember_chat_template_name(a->panels[0].chat) : "-");
    a->state = LOAD_READY;
}

/* ---- the engine ------------------------------------------------------------------------ */

static void engine_failed(app *a, ember_status s)
{
    char msg[512];
    snprintf(msg, sizeof msg, "step failed: %s: %s", ember_status_name(s), ember_engine_error(a->engine));
    if (strcmp(msg, a->engine_error) != 0) fprintf(stderr, "ember-chat: %s\n", msg);
    snprintf(a->engine_error, sizeof a->engine_error, "%s", msg);
    /* A lost device cannot be stepped again; other errors ended only that step's requests. */
    if (s == EMBER_ERR_DEVICE_LOST) a->engine_failed = 1;
}

/* Once per frame, after the frame is presented: the frame-budget helper with the time
 * the frame has left before its deadline (the GPU works on the step while the next frame
 * is drawn), or a fixed --budget, or one blocking step (the baseline). With --threaded
 * the worker steps and this does nothing. Tokens it delivers show in the next frame. */
static void drive_engine(app *a, double deadline_ms)
{
    if (a->state != LOAD_READY || a->engine_failed || a->opt.mode == DRIVE_THREADED) return;
    if (ember_engine_pending(a->engine) == 0) return;
    ember_status s;
    if (a->opt.mode == DRIVE_BLOCKING) {
        s = ember_engine_step(a->engine);
    } else {
        double budget = a->opt.budget_ms >= 0 ? a->opt.budget_ms : deadline_ms - app_now_ms() - SLACK_MS;
        s = ember_engine_run_for(a->engine, budget > 0 ? budget : 0);
    }
    if (s < 0) engine_failed(a, s);
}

/* Hands what the callbacks queued to the panels; the number of events. */
static size_t apply_events(app *a)
{
    event_take(&a->queue, &a->batch);
    for (size_t i = 0; i < a->batch.n; i++) {
        const chat_event *ev = &a->batch.ev[i];
        if (panel_apply(&a->panels[ev->panel], ev, a->batch.text + ev->text_off, a->engine, &a->gen, a->now_ms))
            stats_bar_refresh_soon(&a->ui.bar); /* a reply ended: its figures show at once */
    }
    if (a->queue.lost) {
        fprintf(stderr, "ember-chat: out of memory: %d streamed events were lost\n", a->queue.lost);
        a->queue.lost = 0;
    }
    if (a->engine) ember_engine_get_stats(a->engine, &a->engine_stats);
    for (int i = 0; i < a->n_panels; i++) rate_meter_tick(&a->panels[i].meter, a->now_ms);
    return a->batch.n;
}

/* ---- headless hooks --------------------------------------------------------------------- */

static void say(app *a)
{
    if (!a->opt.say || a->said || a->state != LOAD_READY) return;
    for (int i = 0; i < a->n_panels; i++) app_send(a, i, a->opt.say);
    a->said = 1;
}

/* Whether every panel's turn is over (and --say was sent): the screenshot and
 * --quit-after-reply wait for it. A model that did not load is over at once. */
static int replies_complete(const app *a)
{
    if (a->state == LOAD_FAILED) return 1;
    if (a->state != LOAD_READY || (a->opt.say && !a->said)) return 0;
    for (int i = 0; i < a->n_panels; i++)
        if (a->panels[i].busy || a->panels[i].turns_ended == 0) return 0;
    return 1;
}

/* --verbose: where the frame just drawn put things, for the tests that check the
 * pixels of a screenshot and that everything fits the window. */
static void print_layout(const app *a, const layout *l)
{
    const stats_bar *b = &a->ui.bar;
    fprintf(stderr, "ember-chat: stats bar %d px of %d, %d of %d fields\n", b->right_px, l->stats.w, b->n_shown, b->n);
    for (int i = 0; i < l->n; i++) {
        const panel *p = &a->panels[i];
        fprintf(stderr, "ember-chat: panel %d messages %d %d %d %d\n", i + 1, l->messages[i].x, l->messages[i].y,
                l->messages[i].w, l->messages[i].h);
        fprintf(stderr, "ember-chat: panel %d title %d %d: name to %d, status %d to %d\n", i + 1, l->title[i].x,
                l->title[i].w, p->title_x1, p->status_x0, p->status_x1);
    }
}

static void screenshot(app *a, const layout *l, const char *path)
{
    int w, h;
    char err[512];
    SDL_GetRendererOutputSize(a->renderer, &w, &h);
    uint8_t *px = malloc((size_t)w * (size_t)h * 3);
    if (!px || SDL_RenderReadPixels(a->renderer, NULL, SDL_PIXELFORMAT_RGB24, px, w * 3) != 0) {
        fprintf(stderr, "ember-chat: screenshot: %s\n", px ? SDL_GetError() : "out of memory");
        a->exit_code = 1;
    } else if (png_write_rgb(path, px, w, h, w * 3, err, sizeof err) != 0) {
        fprintf(stderr, "ember-chat: %s\n", err);
        a->exit_code = 1;
    } else {
        fprintf(stderr, "ember-chat: screenshot %s (%dx%d)\n", path, w, h);
        if (a->opt.verbose) print_layout(a, l);
    }
    free(px);
}

/* ---- the frame loop ----------------------------------------------------------------------- */

/* Whether the picture may have changed since it was last drawn: input, streamed text, a
 * change of state, or the quarter-second tick that refreshes the stats and blinks the
 * cursors. Frames that change nothing are not redrawn (they still count as frames). */
static int needs_redraw(app *a, int n_input, size_t n_events)
{
    int tick = (int)(a->now_ms / 250.0);
    int changed = n_input || n_events || a->state == LOAD_RUNNING || a->state != a->ui.drawn_state ||
                  tick != a->ui.drawn_tick || a->input.version != a->ui.drawn_input;
    a->ui.drawn_tick = tick;
    a->ui.drawn_state = a->state;
    a->ui.drawn_input = a->input.version;
    return changed;
}

static void frame(app *a)
{
    int w, h, n_input = 0;
    layout l;
    SDL_GetRendererOutputSize(a->renderer, &w, &h);
    ui_layout(w, h, a->n_panels, &l);
    SDL_Event ev;
    while (SDL_PollEvent(&ev)) {
        controls_handle(a, &l, &ev);
        n_input++;
    }
    poll_loader(a);
    say(a);
    size_t n_events = apply_events(a);
    int done = replies_complete(a);
    int shoot = done && a->opt.screenshot && !a->shot_taken;
    if (needs_redraw(a, n_input, n_events) || shoot || a->shot_requested) {
        ui_draw(a, &l);
        /* read back before present: the back buffer is undefined after it */
        if (shoot) screenshot(a, &l, a->opt.screenshot);
        if (a->shot_requested) {
            char path[64];
            snprintf(path, sizeof path, "ember-chat-%d.png", ++a->n_shots);
            screenshot(a, &l, path);
        }
        a->shot_taken |= shoot;
        a->shot_requested = 0;
        SDL_RenderPresent(a->renderer);
    }
    if (done && a->opt.quit_after_reply) a->quit = 1;
}

static void run_frames(app *a)
{
    double period = 1000.0 / a->opt.fps;
    /* once asked to quit, frames go on until the conversations are saved (--sessions) */
    while (!a->quit || !sessions_ready_to_quit(a)) {
        double start = app_now_ms();
        a->now_ms = start;
        int counted = a->state == LOAD_READY;
        frame(a);
        drive_engine(a, start + period);
        double used = app_now_ms() - start;
        if (used < period) SDL_Delay((Uint32)(period - used + 0.5));
        double end = app_now_ms();
        /* Frame time = start to start of the next frame: what the user sees. */
        if (counted && a->state == LOAD_READY) frame_stats_add(&a->frames, end, end - start);
    }
}

/* ---- shut-down ------------------------------------------------------------------------------ */

/* The engine first (its last callbacks still reach the queue), then the chats, then the
 * models they point into. */
static void free_model_side(app *a)
{
    if (a->state == LOAD_RUNNING) loader_join(&a->load); /* a load cannot be interrupted */
    if (a->state == LOAD_RUNNING) a->model = a->load.model, a->draft = a->load.draft, a->engine = a->load.engine;
    if (a->worker_started) ember_engine_stop(a->engine);
    ember_engine_destroy(a->engine);
    for (int i = 0; i < a->n_panels; i++) panel_free(&a->panels[i]);
    char first[1024];
    uint32_t n = a->model ? ember_model_validation_messages(a->model, first, sizeof first) : 0;
    if (n) {
        fprintf(stderr, "ember-chat: %u Vulkan validation message(s); first: %s\n", n, first);
        a->exit_code = 1;
    }
    ember_model_free(a->draft);
    ember_model_free(a->model);
}

static void close_window(app *a)
{
    ui_free(a);
    input_free(&a->input);
    if (a->renderer) SDL_DestroyRenderer(a->renderer);
    if (a->window) SDL_DestroyWindow(a->window);
    font_close(&a->body);
    font_close(&a->small);
    TTF_Quit();
    SDL_Quit();
}

static int run(app *a)
{
    if (open_fonts(a) != 0) {
        font_close(&a->body);
        TTF_Quit();
        return 1;
    }
    int ok = open_window(a) == 0 && init_state(a) == 0;
    if (ok) {
        start_loading(a);
        run_frames(a);
        stats_print_json(a->n_panels, &a->gen, &a->frames, app_now_ms());
    } else {
        a->exit_code = 1;
    }
    free_model_side(a);
    close_window(a);
    event_queue_free(&a->queue);
    event_buf_free(&a->batch);
    frame_stats_free(&a->frames);
    return a->exit_code;
}

int main(int argc, char **argv)
{
    app *a = calloc(1, sizeof *a);
    if (!a) return 1;
    int rc = options_parse(argc, argv, &a->opt);
    if (rc == 0) rc = run(a);
    else rc = rc == 1 ? 0 : 2;
    options_free(&a->opt);
    free(a);
    return rc;
}
