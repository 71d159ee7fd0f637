/* options.c — command line, default model and characters file (options.h). */
#include "options.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef EMBER_DEMO_SOURCE_DIR
#define EMBER_DEMO_SOURCE_DIR "."
#endif

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ember-chat [-m MODEL.gguf] [--panels N] [--characters FILE.json | --system TEXT]\n"
            "                  [-n MAX_TOKENS] [--temp T] [--draft MODEL.gguf | --ngram N] [--device N]\n"
            "                  [--threaded | --blocking | --budget MS] [--font FILE.ttf] [--size WxH]\n"
            "                  [--fps N] [--renderer NAME] [--say TEXT] [--screenshot FILE.png]\n"
            "                  [--quit-after-reply] [--progress N] [--sessions DIR] [--verbose]\n"
            "Side-by-side chats served by one Ember engine (docs/ember-chat.md). A conversation that\n"
            "outgrows the model's context drops its oldest turns (the panel says so).\n"
            "stderr: a line per reply as it ends (finish, prompt tokens, from cache, generated, turns\n"
            "kept, dropped); --progress N adds one every N tokens streamed (for scripts).\n"
            "--verbose: with each screenshot, where the layout put things (for the tests).\n"
            "Keys and mouse:\n"
            "  Enter                   send the input line to the focused panel\n"
            "  Tab / Shift+Tab, click  focus the next / previous panel, the panel clicked\n"
            "  Esc, the Stop button    stop the focused panel's reply\n"
            "  Left/Right, Home/End, Backspace/Delete   edit the input line\n"
            "  Up/Down                 recall the lines sent before\n"
            "  wheel, PageUp/PageDown  scroll a panel\n"
            "  click on a message      copy its text to the clipboard\n"
            "  Ctrl+V                  paste into the input line\n"
            "  Ctrl+L                  clear the focused panel's conversation\n"
            "  Ctrl+S                  save the conversations (--sessions DIR: restored at start, saved at quit)\n"
            "  Ctrl+Q, closing the window   quit (saving first with --sessions)\n"
            "  F12                     save the window as ember-chat-N.png\n");
}

static int exists(const char *path) { return access(path, R_OK) == 0; }

/* The model scripts/run.sh would choose, in its order. */
static int default_model(options *o)
{
    const char *env = getenv("EMBER_MODEL");
    if (env && *env) {
        o->model = strdup(env);
        o->model_why = "$EMBER_MODEL";
        return o->model != NULL;
    }
    static const char *const best[] = {"qwen2.5-0.5b-instruct-q8_0.gguf", "tinyllama-1.1b-chat-v1.0.Q8_0.gguf",
                                       "SmolLM2-135M-Instruct-Q8_0.gguf"};
    const char *cache = getenv("EMBER_CACHE"), *home = getenv("HOME");
    char dir[2048], path[4096];
    if (cache && *cache) snprintf(dir, sizeof dir, "%s", cache);
    else snprintf(dir, sizeof dir, "%s/.cache/ember", home ? home : ".");
    for (size_t i = 0; i < sizeof best / sizeof *best; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, best[i]);
        if (exists(path)) {
            o->model = strdup(path);
            o->model_why = "the best model in ~/.cache/ember";
            return o->model != NULL;
        }
    }
    /* run.sh looks for ../shared next to the repository; so do we, from the source tree
     * this was built from and from the working directory. */
    static const char *const shared = "../shared/models/stories260K/stories260K-f32.v3.gguf";
    const char *roots[] = {EMBER_DEMO_SOURCE_DIR, "."};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", roots[i], shared);
        if (exists(path)) {
            o->model = strdup(path);
            o->model_why = "stories260K from ../shared/models (scripts/get-model.sh fetches bigger ones)";
            return o->model != NULL;
        }
    }
    return 0;
}

/* Reads a whole file into a NUL-terminated buffer. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 8192;
            char *p = realloc(buf, cap);
            if (!p) break;
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    if (buf) buf[n] = 0;
    return buf;
}

/* One {"name", "system", "temperature", "schema"} entry; 0 with a message when it is not
 * one. */
static int parse_character(const cJSON *item, int i, character *c, const char *path, float default_temp)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "name");
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(item, "system");
    const cJSON *temp = cJSON_GetObjectItemCaseSensitive(item, "temperature");
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(item, "schema");
    if (!cJSON_IsObject(item) || !cJSON_IsString(name) || (sys && !cJSON_IsString(sys)) ||
        (temp && !cJSON_IsNumber(temp)) || (schema && !cJSON_IsObject(schema))) {
        fprintf(stderr, "ember-chat: %s: entry %d must be {\"name\": TEXT, \"system\": TEXT, "
                        "\"temperature\": NUMBER, \"schema\": JSON SCHEMA}\n", path, i);
        return 0;
    }
    c->name = strdup(name->valuestring);
    c->system = sys ? strdup(sys->valuestring) : NULL;
    c->schema = schema ? cJSON_PrintUnformatted(schema) : NULL;
    c->temperature = temp ? (float)temp->valuedouble : default_temp;
    if (c->temperature < 0 || c->temperature > 5) {
        fprintf(stderr, "ember-chat: %s: entry %d: temperature %g is outside 0..5\n", path, i, c->temperature);
        return 0;
    }
    return c->name != NULL;
}

static int load_characters(options *o, const char *path)
{
    char *text = slurp(path);
    if (!text) {
        fprintf(stderr, "ember-chat: cannot read %s: %s\n", path, strerror(errno));
        return 0;
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    int n = cJSON_IsArray(root) ? cJSON_GetArraySize(root) : 0;
    if (n <= 0) {
        fprintf(stderr, "ember-chat: %s: expected a non-empty JSON list of characters%s\n", path,
                root ? "" : " (the file is not valid JSON)");
        cJSON_Delete(root);
        return 0;
    }
    o->chars = calloc((size_t)n, sizeof *o->chars);
    int ok = o->chars != NULL;
    for (int i = 0; ok && i < n; i++, o->n_chars++)
        ok = parse_character(cJSON_GetArrayItem(root, i), i, &o->chars[i], path, o->temperature);
    cJSON_Delete(root);
    return ok;
}

/* The value after flag argv[*i]; NULL with a message when the flag is unknown or has
 * no value. */
static const char *value(int argc, char **argv, int *i)
{
    static const char *const valued[] = {"-m", "--model", "--panels", "--characters", "--system", "--draft",
                                         "--ngram", "--device", "-n", "--temp", "--budget", "--fps", "--font",
                                         "--renderer", "--say", "--screenshot", "--size", "--progress",
                                         "--sessions"};
    int known = 0;
    for (size_t k = 0; k < sizeof valued / sizeof *valued; k++) known |= strcmp(argv[*i], valued[k]) == 0;
    if (!known) {
        fprintf(stderr, "ember-chat: unknown option '%s' (--help lists them)\n", argv[*i]);
        return NULL;
    }
    if (*i + 1 >= argc) {
        fprintf(stderr, "ember-chat: %s needs a value\n", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

static int int_value(const char *flag, const char *v, int lo, int hi, int *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (*v == 0 || *end || n < lo || n > hi) {
        fprintf(stderr, "ember-chat: %s takes a whole number from %d to %d, not '%s'\n", flag, lo, hi, v);
        return 0;
    }
    *out = (int)n;
    return 1;
}

static int num_value(const char *flag, const char *v, double lo, double hi, double *out)
{
    char *end;
    double x = strtod(v, &end);
    if (*v == 0 || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "ember-chat: %s takes a number from %g to %g, not '%s'\n", flag, lo, hi, v);
        return 0;
    }
    *out = x;
    return 1;
}

/* Flags that take a value; 0 = a usage error was printed. */
static int parse_valued(options *o, const char *f, const char *v)
{
    double x;
    if (strcmp(f, "-m") == 0 || strcmp(f, "--model") == 0) return (free(o->model), o->model = strdup(v)) != NULL;
    if (strcmp(f, "--panels") == 0) return int_value(f, v, 1, MAX_PANELS, &o->panels);
    if (strcmp(f, "--characters") == 0) return (o->characters = v), 1;
    if (strcmp(f, "--system") == 0) return (o->system = v), 1;
    if (strcmp(f, "--draft") == 0) return (o->draft = v), 1;
    if (strcmp(f, "--ngram") == 0) return int_value(f, v, 1, 16, &o->ngram);
    if (strcmp(f, "--device") == 0) return int_value(f, v, 0, 63, &o->device);
    if (strcmp(f, "-n") == 0) return int_value(f, v, 1, 1 << 20, &o->max_tokens);
    if (strcmp(f, "--temp") == 0) return num_value(f, v, 0, 5, &x) && ((o->temperature = (float)x), 1);
    if (strcmp(f, "--budget") == 0) return num_value(f, v, 0, 1000, &o->budget_ms);
    if (strcmp(f, "--fps") == 0) return int_value(f, v, 1, 1000, &o->fps);
    if (strcmp(f, "--progress") == 0) return int_value(f, v, 1, 1 << 20, &o->progress);
    if (strcmp(f, "--font") == 0) return (o->font = v), 1;
    if (strcmp(f, "--renderer") == 0) return (o->renderer = v), 1;
    if (strcmp(f, "--say") == 0) return (o->say = v), 1;
    if (strcmp(f, "--screenshot") == 0) return (o->screenshot = v), 1;
    if (strcmp(f, "--sessions") == 0) return (o->sessions = v), 1;
    if (strcmp(f, "--size") == 0) {
        if (sscanf(v, "%dx%d", &o->width, &o->height) == 2 && o->width >= 320 && o->height >= 240 &&
            o->width <= 16384 && o->height <= 16384)
            return 1;
        fprintf(stderr, "ember-chat: --size takes WIDTHxHEIGHT (at least 320x240), not '%s'\n", v);
        return 0;
    }
    fprintf(stderr, "ember-chat: unknown option '%s' (--help lists them)\n", f);
    return 0;
}

/* Without a characters file every panel is an assistant of its own, with --system. */
static int default_characters(options *o)
{
    o->chars = calloc((size_t)o->panels, sizeof *o->chars);
    if (!o->chars) return 0;
    for (int i = 0; i < o->panels; i++, o->n_chars++) {
        char name[32];
        if (o->panels > 1) snprintf(name, sizeof name, "Assistant %d", i + 1);
        else snprintf(name, sizeof name, "Assistant");
        o->chars[i].name = strdup(name);
        o->chars[i].system = o->system ? strdup(o->system) : NULL;
        o->chars[i].temperature = o->temperature;
        if (!o->chars[i].name || (o->system && !o->chars[i].system)) return 0;
    }
    return 1;
}

/* Checks what the flags say together and fills in the defaults. */
static int finish(options *o)
{
    if (o->draft && o->ngram) {
        fprintf(stderr, "ember-chat: --draft and --ngram are two kinds of speculation; pick one\n");
        return 0;
    }
    if (o->characters && !load_characters(o, o->characters)) return 0;
    if (!o->characters && !default_characters(o)) return 0;
    if (!o->model && !default_model(o)) {
        fprintf(stderr, "ember-chat: no model: pass -m MODEL.gguf (or set $EMBER_MODEL; scripts/get-model.sh "
                        "fetches models into ~/.cache/ember)\n");
        return 0;
    }
    fprintf(stderr, "ember-chat: model %s (%s)\n", o->model, o->model_why);
    return 1;
}

int options_parse(int argc, char **argv, options *o)
{
    *o = (options){.panels = 1, .device = -1, .max_tokens = 128, .width = 1280, .height = 720, .fps = 60, .temperature = 0.7f,
                   .budget_ms = -1.0, .mode = DRIVE_BUDGET, .model_why = "given"};
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(f, "--threaded") == 0) o->mode = DRIVE_THREADED;
        else if (strcmp(f, "--blocking") == 0) o->mode = DRIVE_BLOCKING;
        else if (strcmp(f, "--quit-after-reply") == 0) o->quit_after_reply = 1;
        else if (strcmp(f, "--verbose") == 0) o->verbose = 1;
        else if (!(v = value(argc, argv, &i)) || !parse_valued(o, f, v)) return 2;
    }
    return finish(o) ? 0 : 2;
}

void options_free(options *o)
{
    for (int i = 0; i < o->n_chars; i++) {
        free(o->chars[i].name);
        free(o->chars[i].system);
        free(o->chars[i].schema);
    }
    free(o->chars);
    free(o->model);
    *o = (options){0};
}

const character *options_character(const options *o, int panel)
{
    return &o->chars[panel % o->n_chars];
}
