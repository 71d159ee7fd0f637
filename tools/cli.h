/* cli.h — small helpers shared by the subcommands: argument parsing, model loading from
 * the common flags, and a JSON string writer. */
#ifndef EMBER_CLI_H
#define EMBER_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ember.h"

/* Exit codes of every command: 0 done (and --help), 1 the work failed (a file that cannot
 * be read, a model that does not load, a request that failed), 2 the command line is
 * wrong (an unknown option, a bad value, a missing argument); docs/cli.md. */
enum { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };

/* Returns the value after flag argv[*i] and advances *i, or NULL (with a message) when
 * it is missing. */
const char *cli_value(int argc, char **argv, int *i);
/* Whether arg is -h or --help (where an option may stand). */
bool cli_is_help(const char *arg);
/* Whether flag is one of list (NULL-terminated). */
bool cli_flag_in(const char *flag, const char *const *list);
/* Says on stderr that `ember cmd` does not take arg: "unknown option --x" for an option,
 * "unexpected argument 'x'" for anything else. */
void cli_unknown(const char *cmd, const char *arg);
/* The flags cli_sampling_flag and cli_spec_flag take (each with a value). */
extern const char *const cli_sampling_flags[];
extern const char *const cli_spec_flags[];
/* Parses an integer / float; false (with a message naming flag) when malformed. */
bool cli_int(const char *flag, const char *s, long lo, long hi, long *out);
bool cli_float(const char *flag, const char *s, float *out);

/* Options common to every command that loads a model. */
typedef struct cli_model_args {
    const char *path;
    ember_backend backend;
    int device;          /* --device N or EMBER_DEVICE; 0 = auto */
    ember_memory_mode memory; /* --memory auto|discrete (discrete: staging copies, as on a
                                 discrete GPU, whatever the device) */
    long budget_mib;     /* --memory-budget MIB: ember_model_opts.memory_budget_mib; 0 = none */
    bool vocab_only;     /* load the vocabulary alone (tokenize) */
    ember_kernel_opts kernels; /* --kernels LIST: variants forced (ember_model_opts.kernels) */
    const char *role;    /* "draft model": said before a load error; NULL for the model */
    const char *device_flag; /* the flag that gave device, for messages; NULL: --device */
} cli_model_args;

/* Handles -m/--model, --backend, --device, --memory, --memory-budget at argv[*i]; returns 1 when consumed,
 * 0 when not one of them, -1 on a bad value. */
int cli_model_flag(int argc, char **argv, int *i, cli_model_args *a);
/* Loads the model (validation on when EMBER_VALIDATION=1; the device from --device, else
 * EMBER_DEVICE); prints the error and returns NULL on failure, a bad EMBER_DEVICE
 * included. */
ember_model *cli_load_model(const cli_model_args *a);
/* Frees the model; returns exit code 1 (with a message) if the validation layer spoke. */
int cli_free_model(ember_model *m, int code);
/* Loads the model and, when draft_path is set, a draft model on the same backend and
 * device (*draft, else NULL). NULL (nothing left loaded) on failure. */
ember_model *cli_load_with_draft(const cli_model_args *a, const char *draft_path, ember_model **draft);
/* Frees the draft (may be NULL) and the model; the exit code as cli_free_model. */
int cli_free_with_draft(ember_model *m, ember_model *draft, int code);

/* llama.cpp's habits that the commands running a model take (docs/coming-from-llama.md):
 * -c/--ctx-size/--ctx N, the context (0 = the model's), and -t/--threads N, accepted and
 * set aside with a note on stderr: Vulkan schedules its own work (lavapipe's CPU threads
 * are LP_NUM_THREADS=N). Zero is neither given. */
typedef struct cli_habits {
    long ctx;          /* -c N; 0 = the model's context */
    bool ctx_given;
} cli_habits;
/* Handles -c, --ctx-size, --ctx, -t, --threads with its value at argv[*i] for `ember
 * cmd`: 1 when consumed, 0 when not one of them, -1 on a bad value (with a message). */
int cli_habit_flag(const char *cmd, int argc, char **argv, int *i, cli_habits *h);
/* The context to run with: asked (0 = the model's), capped at the model's model_ctx with
 * a note on stderr naming cmd, as llama.cpp warns past n_ctx_train. */
uint32_t cli_context(const char *cmd, long asked, uint32_t model_ctx);
/* A progress bar on stderr, drawn over the last one: "WHAT [####    ]  47% TAIL" (tail may be
 * NULL); at fraction 1 the line is cleared, so that what follows starts clean. Only when
 * stderr is a terminal: piped or logged, long work prints its result alone. */
void cli_progress(const char *what, double fraction, const char *tail);
/* The sampling flags' help, defaults included (the CLI is greedy by default), for every
 * command that samples. */
extern const char cli_sampling_help[];

/* Handles a sampling flag (--temp --top-k --top-p --min-p --repeat-penalty
 * --frequency-penalty --presence-penalty --seed --logit-bias) with its value: *matched = 1
 * when flag was one of them; false on a bad value. --logit-bias ID=BIAS (or llama.cpp's
 * ID+BIAS / ID-BIAS; BIAS may be -inf, a ban) may be repeated up to CLI_MAX_BIAS times:
 * the entries go into bias (room for CLI_MAX_BIAS, the caller's; s->logit_bias points
 * there). */
#define CLI_MAX_BIAS 64
bool cli_sampling_flag(const char *flag, const char *value, ember_sampling *s, ember_logit_bias *bias, int *matched);
/* Handles --draft PATH, --draft-k K, --ngram N: 1 when consumed, 0 when not one of
 * them, -1 on a bad value. --ngram or --draft without --draft-k means k = 4. */
int cli_spec_flag(const char *flag, const char *value, ember_speculation *spec, const char **draft_path);
/* The whole of the file at path, NUL-terminated (malloc'd); NULL with a message naming
 * cmd and the reason when it cannot be read (a directory, a missing file). */
char *cli_read_file(const char *cmd, const char *path);
/* The same for bytes that may hold NUL: *len is their count (the NUL after them aside). */
char *cli_read_bytes(const char *cmd, const char *path, size_t *len);
/* The flags cli_grammar_flag takes (each with a value). */
extern const char *const cli_grammar_flags[];
/* What --grammar FILE (GBNF) and --json-schema FILE read (docs/grammar.md): the files'
 * text, malloc'd; zero-initialised is none. ember_request_desc.grammar and .json_schema
 * take them as they are. */
typedef struct cli_grammar {
    char *gbnf, *json_schema;
} cli_grammar;
/* Handles --grammar FILE or --json-schema FILE: reads the file into g (a previous one is
 * freed). 1 when consumed, 0 when flag is neither, -1 when the file cannot be read (with
 * a message naming cmd). */
int cli_grammar_flag(const char *cmd, const char *flag, const char *path, cli_grammar *g);
void cli_grammar_free(cli_grammar *g);
/* Parses the value of a --kv-type flag: "f32" or "q8_0" (false with a message). */
bool cli_kv_type(const char *flag, const char *s, ember_kv_type *out);
/* Parses the value of --sample-from: auto, candidates or rows (false with a message). */
bool cli_sample_from(const char *flag, const char *s, ember_sample_from *out);
/* "f32", "q8_0". */
const char *cli_kv_type_name(ember_kv_type t);
/* bytes in the largest unit that keeps a number of at least 1 ("4.6 GiB", "512 bytes"),
 * into buf (cap bytes); returns buf. */
const char *cli_size(double bytes, char *buf, size_t cap);

/* Opens the file a -f flag names for reading; NULL, with "ember CMD: cannot open PATH:
 * why" or "ember CMD: PATH is a directory; -f wants WANTS" on stderr, when it cannot be
 * read as a file. The caller fcloses it. */
FILE *cli_open_input(const char *cmd, const char *path, const char *mode, const char *wants);

/* Grows *p (an array of *cap elements of elem bytes) to hold need, doubling from 64;
 * false (the array unchanged) when memory runs out. */
bool cli_grow(void **p, size_t *cap, size_t need, size_t elem);
/* One line of f with its line end into *line (grown as needed, *cap its size; free it):
 * its length, or -1 at the end of input, on an error or out of memory before any byte
 * (getline's contract, which not every C library has). */
long cli_get_line(char **line, size_t *cap, FILE *f);

/* A request's output as it streams in: its tokens, and its text NUL-terminated. Zero is
 * empty; cli_output_free releases it. */
typedef struct cli_output {
    uint32_t *tokens;
    size_t n, cap;
    char *text;
    size_t len, text_cap;
} cli_output;
/* Appends a token and its text; false when memory ran out. */
bool cli_output_add(cli_output *o, uint32_t token, const char *text, size_t len);
void cli_output_free(cli_output *o);

/* Writes s as a JSON string literal (with quotes), escaping as needed. */
void cli_json_string(FILE *f, const char *s, size_t len);

/* An engine's profile (--profile, cli_profile.c): as tables for people, or as the value of
 * a JSON "profile" key (docs/profiling.md). */
void cli_profile_text(FILE *f, const ember_profile *p);
void cli_profile_json(FILE *f, const ember_profile *p);

#endif
