/* options.h — ember-chat's command line, the default model (the one scripts/run.sh would
 * take) and the characters file (--characters: who speaks in which panel). */
#ifndef OPTIONS_H
#define OPTIONS_H

#include <stddef.h>

#define MAX_PANELS 8

/* One speaker: a panel takes character i mod count. */
typedef struct character {
    char *name;
    char *system;        /* the system prompt; NULL = none */
    char *schema;        /* a JSON Schema its replies follow (JSON text); NULL = free text */
    float temperature;
} character;

typedef enum drive_mode {
    DRIVE_BUDGET,    /* ember_engine_run_for once per frame (default) */
    DRIVE_THREADED,  /* ember_engine_start: the engine's own worker thread */
    DRIVE_BLOCKING,  /* ember_engine_step once per frame: the baseline */
} drive_mode;

typedef struct options {
    char *model;             /* malloc'd path */
    const char *model_why;   /* how it was chosen, for the message on stderr */
    const char *font, *characters, *system, *draft, *say, *screenshot, *renderer;
    const char *sessions;    /* --sessions DIR: conversations restored at start, saved at quit */
    int panels, ngram, max_tokens, quit_after_reply, width, height, fps;
    int progress;            /* --progress N: a stderr line every N tokens of a reply; 0 = none */
    int verbose;             /* --verbose: the layout on stderr with each screenshot (for the tests) */
    int device;              /* --device N: the Nth device of `ember info`; -1 = automatic */
    float temperature;
    double budget_ms;        /* run_for's budget; < 0 = what the frame has left */
    drive_mode mode;
    character *chars;
    int n_chars;
} options;

/* Parses argv. 0: go on; 1: --help was printed (exit 0); 2: a usage error was printed
 * (exit 2). */
int options_parse(int argc, char **argv, options *o);
void options_free(options *o);
/* The character of panel i (i mod the count); never NULL. */
const character *options_character(const options *o, int panel);

#endif
