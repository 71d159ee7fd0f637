/* game_loop.c — Ember inside a game's frame loop.
 *
 * A game renders with its own Vulkan device (examples/game_vk.c: an SDL window, a
 * swapchain, a clear per frame) and hands that device and its one queue to Ember, so that
 * there is one device and one pool of VRAM. Between frames it lets Ember generate a few
 * NPCs' lines for at most --budget-ms per frame (ember_engine_run_for), or, with
 * --blocking, one whole engine step per frame (ember_engine_step), to show what that
 * does to frame times. At exit it prints one line (tests/test_game_loop.sh reads it):
 *     frames 240  frame_ms p50 16.7 p90 17.0 p99 21.3 max 25.0  tokens 96  tok_s 55.1  validation 0
 * docs/embedding.md explains the three ways to drive an engine and the device sharing.
 *
 * Run: game_loop -m MODEL.gguf [--requests 3] [-n 32] [--budget-ms 4 | --blocking]
 *                [--batch-tokens N] [--min-frames 120] [--fps 60] [--own-device] [--validation] */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember.h"
#include "game_vk.h"

struct options {
    const char *model;
    uint32_t requests, max_tokens, min_frames;
    uint32_t batch_tokens; /* ember_engine_opts.max_batch_tokens: the size of one step */
    double budget_ms;   /* per frame, for ember_engine_run_for */
    double fps;         /* frame cap; 0 = only the FIFO swapchain paces */
    double max_seconds; /* give up (exit 1) when generation takes longer */
    int blocking, own_device, validation;
};

/* One NPC line being generated: its request's callbacks write here. */
struct npc {
    const char *name, *prompt;
    const char *schema; /* the JSON its reply must be (the merchant's); NULL = free text */
    struct world *world;
    char text[4096];
    size_t len;
};

struct world {
    struct npc *npcs;
    uint32_t n_npcs, n_done;
    uint64_t tokens;
    double t_submit, t_last_done; /* ms, for tokens per second */
};

struct frame_times {
    double *ms;
    size_t n, cap;
};

static const char *const npc_names[] = {"guard", "merchant", "blacksmith", "innkeeper", "bard", "witch"};
static const char *const npc_prompts[] = {
    "The guard at the gate said:", "The old merchant leaned in and whispered:",
    "The blacksmith wiped his hands and laughed:", "The innkeeper poured a drink and told a story:",
    "The bard tuned his lute and sang:", "The witch stirred the pot and warned:"};
#define N_NPC_KINDS (sizeof npc_names / sizeof npc_names[0])

/* The merchant answers with what the game can act on: an action from a fixed list and a
 * short line to show (ember_request_desc.json_schema; docs/embedding.md). */
static const char MERCHANT_SCHEMA[] =
    "{\"type\": \"object\", \"properties\": {"
    "\"action\": {\"enum\": [\"trade\", \"haggle\", \"refuse\"]},"
    "\"line\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 24}},"
    "\"required\": [\"action\", \"line\"], \"additionalProperties\": false}";

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_until_ms(double t)
{
    double left = t - now_ms();
    if (left <= 0) return;
    struct timespec ts = {.tv_sec = (time_t)(left / 1e3), .tv_nsec = (long)(fmod(left, 1e3) * 1e6)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* ---- options ---------------------------------------------------------------------- */

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s -m MODEL.gguf [options]\n"
            "  --requests N      NPC lines generated together (default 3)\n"
            "  -n N              tokens per line (default 32)\n"
            "  --budget-ms MS    Ember's time per frame, ember_engine_run_for (default 4)\n"
            "  --blocking        one ember_engine_step per frame instead\n"
            "  --batch-tokens N  tokens per engine step (max_batch_tokens; default 0 = Ember's 256)\n"
            "  --min-frames N    draw at least N frames (default 120)\n"
            "  --fps N           frame cap besides FIFO, which Xvfb does not pace (default 60; 0 = none)\n"
            "  --max-seconds S   fail when not done after S seconds (default 300)\n"
            "  --own-device      let Ember create its own Vulkan device instead of the game's\n"
            "  --validation      enable VK_LAYER_KHRONOS_validation and count its messages\n",
            prog);
}

/* One command-line option: a flag, or where its value goes. */
struct option_spec {
    const char *name;
    int *flag;
    uint32_t *count;
    double *number;
    const char **text;
};

/* Applies argv[*i], and the value after it when the option takes one. */
static int apply_option(const struct option_spec *spec, size_t n, int argc, char **argv, int *i)
{
    for (size_t k = 0; k < n; k++) {
        const struct option_spec *s = &spec[k];
        if (strcmp(argv[*i], s->name) != 0) continue;
        if (s->flag) {
            *s->flag = 1;
            return 0;
        }
        if (*i + 1 >= argc) {
            fprintf(stderr, "game_loop: %s needs a value\n", s->name);
            return -1;
        }
        const char *v = argv[++*i];
        if (s->count) *s->count = (uint32_t)strtoul(v, NULL, 10);
        else if (s->number) *s->number = atof(v);
        else *s->text = v;
        return 0;
    }
    fprintf(stderr, "game_loop: unknown option %s\n", argv[*i]);
    return -1;
}

static int parse_args(int argc, char **argv, struct options *o)
{
    *o = (struct options){.requests = 3, .max_tokens = 32, .min_frames = 120, .budget_ms = 4, .fps = 60,
                          .max_seconds = 300};
    const struct option_spec spec[] = {
        {"-m", .text = &o->model},
        {"--requests", .count = &o->requests},
        {"-n", .count = &o->max_tokens},
        {"--batch-tokens", .count = &o->batch_tokens},
        {"--min-frames", .count = &o->min_frames},
        {"--budget-ms", .number = &o->budget_ms},
        {"--fps", .number = &o->fps},
        {"--max-seconds", .number = &o->max_seconds},
        {"--blocking", .flag = &o->blocking},
        {"--own-device", .flag = &o->own_device},
        {"--validation", .flag = &o->validation},
    };
    for (int i = 1; i < argc; i++)
        if (apply_option(spec, sizeof spec / sizeof spec[0], argc, argv, &i) != 0) return -1;
    if (!o->model || o->requests == 0 || o->max_tokens == 0 || o->budget_ms < 0 || o->fps < 0) return -1;
    return 0;
}

/* ---- NPC requests ------------------------------------------------------------------- */

/* Runs on the thread that steps the engine: here the game's own, between frames. */
static int on_token(void *user, ember_request_id id, uint32_t token, const char *text, size_t len)
{
    (void)id, (void)token;
    struct npc *npc = user;
    size_t room = sizeof npc->text - 1 - npc->len;
    if (len > room) len = room;
    memcpy(npc->text + npc->len, text, len);
    npc->len += len;
    npc->text[npc->len] = '\0';
    npc->world->tokens++;
    return 0;
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    (void)id;
    struct npc *npc = user;
    npc->world->n_done++;
    npc->world->t_last_done = now_ms();
    for (char *c = npc->text; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' '; /* one log line per NPC */
    printf("[%s] %s%s (%u tokens, first after %.0f ms, %s)\n", npc->name, npc->schema ? "" : npc->prompt, npc->text,
           m->n_gen, m->ttft_ms, ember_finish_name(why)); /* a structured reply alone: JSON the game parses */
    fflush(stdout);
}

static int submit_npcs(ember_engine *engine, struct world *w, uint32_t max_tokens)
{
    w->t_submit = now_ms();
    for (uint32_t i = 0; i < w->n_npcs; i++) {
        struct npc *npc = &w->npcs[i];
        npc->name = npc_names[i % N_NPC_KINDS];
        npc->prompt = npc_prompts[i % N_NPC_KINDS];
        npc->schema = i % N_NPC_KINDS == 1 ? MERCHANT_SCHEMA : NULL;
        npc->world = w;
        ember_request_desc req = {.prompt = npc->prompt, .max_tokens = npc->schema && max_tokens < 96 ? 96 : max_tokens,
                                  .sampling = {.temperature = 0.8f, .top_p = 0.95f, .seed = i + 1},
                                  .json_schema = npc->schema, /* its reply ends when the JSON does */
                                  .on_token = on_token, .on_done = on_done, .user = npc};
        if (ember_submit(engine, &req, NULL) != EMBER_OK) {
            fprintf(stderr, "game_loop: submit: %s\n", ember_engine_error(engine));
            return -1;
        }
    }
    return 0;
}

/* ---- Ember on the game's device ---------------------------------------------------- */

/* The game's device as Ember wants it. Ember will submit to the game's one queue, so it
 * takes the same mutex as the game's own submit and present (game_vk_lock_queue). */
static ember_vulkan_device share_device(game_vk *g)
{
    game_vk_handles h;
    game_vk_get_handles(g, &h);
    return (ember_vulkan_device){.instance = h.instance, .physical_device = h.physical_device,
                                 .device = h.device, .queue_family = h.queue_family,
                                 .queue_index = h.queue_index, .api_version = h.api_version,
                                 .enabled_features = h.features, .lock_queue = game_vk_lock_queue,
                                 .unlock_queue = game_vk_unlock_queue, .queue_user = g};
}

static int load_model(const struct options *o, game_vk *g, ember_model **model)
{
    ember_vulkan_device dev = share_device(g); /* borrowed: read during the load only */
    ember_model_opts mo = {.vulkan = o->own_device ? NULL : &dev, .enable_validation = o->validation};
    if (ember_model_load(o->model, &mo, model) != EMBER_OK) {
        fprintf(stderr, "game_loop: load %s: %s\n", o->model, *model ? ember_model_error(*model) : "out of memory");
        return -1;
    }
    ember_model_info info;
    ember_model_get_info(*model, &info);
    game_vk_handles h;
    game_vk_get_handles(g, &h);
    printf("game_loop: game on %s (%s present), Ember on %s (%s device)\n", h.device_name, h.present_mode,
           info.device_name, o->own_device ? "its own" : "the game's");
    if (o->blocking) printf("game_loop: per frame, one blocking ember_engine_step\n");
    else printf("game_loop: per frame, ember_engine_run_for(%.1f ms)\n", o->budget_ms);
    return 0;
}

/* ---- frames -------------------------------------------------------------------------- */

static int frame_times_add(struct frame_times *ft, double ms)
{
    if (ft->n == ft->cap) {
        size_t cap = ft->cap ? ft->cap * 2 : 1024;
        double *p = realloc(ft->ms, cap * sizeof *p);
        if (!p) return -1;
        ft->ms = p;
        ft->cap = cap;
    }
    ft->ms[ft->n++] = ms;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest rank on sorted values. */
static double percentile(const double *sorted, size_t n, double p)
{
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    return n ? sorted[rank ? rank - 1 : 0] : 0;
}

/* A colour that drifts over time: a frozen colour on screen is a frozen game. */
static void colour_at(double t_ms, float rgba[4])
{
    double t = t_ms / 1000.0;
    rgba[0] = (float)(0.5 + 0.5 * sin(t * 1.3));
    rgba[1] = (float)(0.5 + 0.5 * sin(t * 1.3 + 2.1));
    rgba[2] = (float)(0.5 + 0.5 * sin(t * 1.3 + 4.2));
    rgba[3] = 1.0f;
}

static int quit_requested(void)
{
    SDL_Event ev;
    int quit = 0;
    while (SDL_PollEvent(&ev)) quit |= ev.type == SDL_QUIT;
    return quit;
}

/* What Ember may do this frame: a bounded slice, or (--blocking) a whole step. */
static int run_ember(ember_engine *engine, const struct options *o)
{
    ember_status s = o->blocking ? ember_engine_step(engine) : ember_engine_run_for(engine, o->budget_ms);
    if (s >= 0) return 0; /* EMBER_OK, EMBER_IDLE, EMBER_NOT_READY */
    fprintf(stderr, "game_loop: %s: %s\n", ember_status_name(s), ember_engine_error(engine));
    return -1;
}

/* Draws frames until every NPC is done and min_frames were drawn (or the window closes).
 * A frame's time runs from the start of one to the start of the next. */
static int frame_loop(game_vk *g, ember_engine *engine, struct world *w, const struct options *o,
                      struct frame_times *ft)
{
    double t0 = now_ms(), start = t0;
    for (;;) {
        if (quit_requested()) return 0;
        float rgba[4];
        colour_at(start - t0, rgba);
        if (game_vk_draw(g, rgba) != 0) return -1;
        if (w->n_done < w->n_npcs && run_ember(engine, o) != 0) return -1;
        /* FIFO paces frames to a display's refresh, but Xvfb presents at once: the cap
         * stands in for the display (and idles the CPU, as a game at 60 fps would). */
        if (o->fps > 0) sleep_until_ms(start + 1000.0 / o->fps);
        double next = now_ms();
        if (frame_times_add(ft, next - start) != 0) return -1;
        start = next;
        if (w->n_done == w->n_npcs && ft->n >= o->min_frames) return 0;
        if (start - t0 > o->max_seconds * 1000.0) {
            fprintf(stderr, "game_loop: %u of %u NPCs done after %.0f s\n", w->n_done, w->n_npcs, o->max_seconds);
            return -1;
        }
    }
}

/* What the program prints at exit, after everything is destroyed (destroying a device
 * is when the validation layer reports leaked objects). */
struct report {
    struct frame_times ft;
    uint64_t tokens;
    double tok_s;
    uint32_t validation; /* Ember's own instance (--own-device); the game's are added at exit */
};

static void print_summary(struct report *r)
{
    struct frame_times *ft = &r->ft;
    qsort(ft->ms, ft->n, sizeof *ft->ms, cmp_double);
    printf("frames %zu  frame_ms p50 %.1f p90 %.1f p99 %.1f max %.1f  tokens %llu  tok_s %.1f  validation %u\n",
           ft->n, percentile(ft->ms, ft->n, 50), percentile(ft->ms, ft->n, 90), percentile(ft->ms, ft->n, 99),
           ft->n ? ft->ms[ft->n - 1] : 0.0, (unsigned long long)r->tokens, r->tok_s, r->validation);
}

/* ---- main ------------------------------------------------------------------------------ */

/* Ember after the game's setup and before its teardown: the device must outlive the
 * model, and Ember never destroys it. */
static int run_game(const struct options *o, game_vk *g, struct report *r)
{
    ember_model *model = NULL;
    ember_engine *engine = NULL;
    struct world w = {.n_npcs = o->requests};
    int rc = -1;
    w.npcs = calloc(o->requests, sizeof *w.npcs);
    if (!w.npcs || load_model(o, g, &model) != 0) goto out;
    /* On one shared queue the game's frame waits behind the step in flight, so the size
     * of a step (a prompt chunk above all) bounds the worst frame: docs/embedding.md. */
    ember_engine_opts eo = {.max_batch_tokens = o->batch_tokens};
    if (ember_engine_create(model, &eo, &engine) != EMBER_OK) {
        fprintf(stderr, "game_loop: engine: %s\n", engine ? ember_engine_error(engine) : "out of memory");
        goto out;
    }
    if (submit_npcs(engine, &w, o->max_tokens) != 0) goto out;
    rc = frame_loop(g, engine, &w, o, &r->ft);
    r->tokens = w.tokens;
    double gen_s = (w.t_last_done - w.t_submit) / 1000.0;
    r->tok_s = w.n_done && gen_s > 0 ? (double)w.tokens / gen_s : 0.0;
out:
    ember_engine_destroy(engine); /* first the engine, then the model, then (caller) the device */
    char first[1024];
    r->validation = model ? ember_model_validation_messages(model, first, sizeof first) : 0;
    if (r->validation) fprintf(stderr, "game_loop: validation (Ember's instance): %s\n", first);
    ember_model_free(model);
    free(w.npcs);
    return rc;
}

int main(int argc, char **argv)
{
    struct options o;
    if (parse_args(argc, argv, &o) != 0) {
        usage(argv[0]);
        return 2;
    }
    if (SDL_Init(SDL_INIT_VIDEO) != 0) {
        fprintf(stderr, "game_loop: SDL_Init: %s\n", SDL_GetError());
        return 1;
    }
    SDL_Window *window = SDL_CreateWindow("Ember game loop", SDL_WINDOWPOS_UNDEFINED, SDL_WINDOWPOS_UNDEFINED,
                                          640, 480, SDL_WINDOW_VULKAN | SDL_WINDOW_SHOWN);
    game_vk *g = NULL;
    struct report r = {0};
    int rc = 1;
    if (!window) fprintf(stderr, "game_loop: SDL_CreateWindow: %s\n", SDL_GetError());
    else if (game_vk_create(window, o.validation, &g) == 0) rc = run_game(&o, g, &r) == 0 ? 0 : 1;
    char first[1024];
    uint32_t n_game = game_vk_destroy(g, first, sizeof first); /* swapchain, device, surface, instance */
    if (n_game) fprintf(stderr, "game_loop: validation: %s\n", first);
    r.validation += n_game;
    if (r.validation) rc = 1; /* as the ember program: a validation message is a failure */
    if (window) SDL_DestroyWindow(window);
    SDL_Quit();
    if (r.ft.n) print_summary(&r);
    free(r.ft.ms);
    return rc;
}
