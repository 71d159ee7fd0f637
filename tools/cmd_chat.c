/* cmd_chat.c — `ember chat`: a terminal chat with the model's chat template. User lines
 * come from stdin (a terminal or a pipe; end of input ends the chat), replies stream to
 * stdout. One engine and one ember_chat serve the whole conversation: each turn submits
 * the full conversation as token ids, and the engine's prefix cache finds the earlier
 * turns' KV blocks, so only the new part is computed (docs/chat.md). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"

typedef struct chat_args {
    cli_model_args model;
    const char *template_name;  /* NULL = the model's */
    const char *system;
    long n;
    ember_sampling sampling;
    long kv_blocks;             /* 0 = the engine's default (a whole context at least) */
    bool verbose;
} chat_args;

/* One turn's reply as it arrives. */
typedef struct turn {
    uint32_t *ids;
    size_t n_ids, cap;
    bool done, oom;
    ember_finish why;
    ember_request_metrics m;
} turn;

static int usage(void)
{
    fprintf(stderr, "usage: ember chat -m MODEL.gguf [--chat-template NAME] [--system TEXT] [-n MAX_PER_TURN]\n"
                    "                  [sampling] [--kv-blocks N] [--backend vulkan|cpu] [--device N] [--verbose]\n"
                    "templates: chatml, llama2, llama3, llama3.1, mistral, zephyr, gemma, phi3\n"
                    "           (default: the model's own; see docs/chat.md)\n"
                    "sampling: --temp T (0 = greedy) --top-k K --top-p P --min-p P --repeat-penalty R\n"
                    "          --frequency-penalty F --presence-penalty P --seed S\n");
    return 2;
}

static bool parse(int argc, char **argv, chat_args *a)
{
    *a = (chat_args){.n = 256};
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        int r = cli_model_flag(argc, argv, &i, &a->model);
        if (r < 0) return false;
        if (r > 0) continue;
        if (strcmp(f, "--verbose") == 0 || strcmp(f, "-v") == 0) a->verbose = true;
        else if (!(v = cli_value(argc, argv, &i))) return false;
        else if (strcmp(f, "--chat-template") == 0) a->template_name = v;
        else if (strcmp(f, "--system") == 0) a->system = v;
        else if (strcmp(f, "-n") == 0) { if (!cli_int(f, v, 1, 1 << 20, &a->n)) return false; }
        else if (strcmp(f, "--kv-blocks") == 0) { if (!cli_int(f, v, 1, 1 << 24, &a->kv_blocks)) return false; }
        else if (!cli_sampling_flag(f, v, &a->sampling, &r)) return false;
        else if (r) continue;
        else {
            fprintf(stderr, "ember chat: unknown option '%s'\n", f);
            return false;
        }
    }
    if (!a->model.path) fprintf(stderr, "ember chat: no model (-m MODEL.gguf)\n");
    return a->model.path != NULL;
}

static int on_token(void *user, ember_request_id id, uint32_t token, const char *text, size_t len)
{
    turn *t = user;
    if (t->n_ids == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        uint32_t *p = realloc(t->ids, cap * sizeof *p);
        if (!p) {
            t->oom = true;
            return 1;
        }
        t->ids = p, t->cap = cap;
    }
    t->ids[t->n_ids++] = token;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0;
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    turn *t = user;
    t->why = why;
    t->m = *m;
    t->done = true;
}

/* Reads one line without its line end into *line (getline's buffer); false at EOF. */
static bool read_line(char **line, size_t *cap, bool tty)
{
    if (tty) {
        fputs("> ", stdout);
        fflush(stdout);
    }
    ssize_t n = getline(line, cap, stdin);
    if (n < 0) return false;
    while (n > 0 && ((*line)[n - 1] == '\n' || (*line)[n - 1] == '\r')) (*line)[--n] = 0;
    return true;
}

static double rate(double n, double ms) { return ms > 0 ? n * 1000.0 / ms : 0.0; }

/* Runs one turn: submits the conversation, streams the reply, adds it to the chat. */
static int run_turn(ember_engine *e, ember_chat *chat, const chat_args *a, uint32_t ctx, int n_turn)
{
    const uint32_t *ids;
    size_t n;
    if (ember_chat_prompt(chat, &ids, &n) != EMBER_OK) {
        fprintf(stderr, "ember chat: %s\n", ember_chat_error(chat));
        return 1;
    }
    if (n >= ctx) {
        fprintf(stderr, "ember chat: the conversation (%zu tokens) no longer fits the context of %u tokens\n", n, ctx);
        return 1;
    }
    turn t = {0};
    ember_request_desc d = {.tokens = ids, .n_tokens = n, .max_tokens = (uint32_t)a->n, .sampling = a->sampling,
                            .on_token = on_token, .on_done = on_done, .user = &t};
    ember_status s = ember_submit(e, &d, NULL);
    while (s == EMBER_OK && !t.done) s = ember_engine_step(e);
    fputc('\n', stdout);
    fflush(stdout);
    int code = 0;
    if (s < 0 || !t.done || t.oom || t.why == EMBER_FINISH_ERROR) { /* EMBER_IDLE after the end is fine */
        fprintf(stderr, "ember chat: %s\n", t.oom ? "out of memory" : s < 0 || t.done ? ember_engine_error(e)
                                                                      : "the engine stopped with the reply pending");
        code = 1;
    } else if (ember_chat_add_reply(chat, t.ids, t.n_ids) != EMBER_OK) {
        fprintf(stderr, "ember chat: %s\n", ember_chat_error(chat));
        code = 1;
    } else {
        const ember_request_metrics *m = &t.m;
        fprintf(stderr, "[turn %d: %u prompt tokens, %u from cache, %u generated, %.1f tok/s]\n", n_turn,
                m->n_prompt, m->n_cached, m->n_gen, rate(m->n_gen > 1 ? m->n_gen - 1 : 0, m->decode_ms));
    }
    free(t.ids);
    return code;
}

static int converse(ember_model *model, ember_engine *e, ember_chat *chat, const chat_args *a)
{
    ember_model_info info;
    ember_model_get_info(model, &info);
    if (a->verbose) fprintf(stderr, "[chat template: %s]\n", ember_chat_template_name(chat));
    if (a->system && ember_chat_add(chat, "system", a->system) != EMBER_OK) {
        fprintf(stderr, "ember chat: %s\n", ember_chat_error(chat));
        return 1;
    }
    bool tty = isatty(fileno(stdin));
    char *line = NULL;
    size_t cap = 0;
    int code = 0, n_turn = 0;
    while (code == 0 && read_line(&line, &cap, tty)) {
        if (line[0] == 0) continue;
        if (ember_chat_add(chat, "user", line) != EMBER_OK) {
            fprintf(stderr, "ember chat: %s\n", ember_chat_error(chat));
            code = 1;
        } else {
            code = run_turn(e, chat, a, info.ctx_len, ++n_turn);
        }
    }
    if (tty && code == 0) fputc('\n', stdout);
    free(line);
    return code;
}

static int run(ember_model *model, const chat_args *a)
{
    ember_chat *chat = NULL;
    if (ember_chat_create(model, a->template_name, &chat) != EMBER_OK) {
        fprintf(stderr, "ember chat: %s\n", ember_chat_error(chat));
        ember_chat_free(chat);
        return 1;
    }
    ember_engine_opts eo = {.max_seqs = 1, .kv_blocks = (uint32_t)a->kv_blocks};
    ember_engine *e = NULL;
    int code = 1;
    if (ember_engine_create(model, &eo, &e) != EMBER_OK) fprintf(stderr, "ember chat: %s\n", ember_engine_error(e));
    else code = converse(model, e, chat, a);
    ember_engine_destroy(e);
    ember_chat_free(chat);
    return code;
}

int ember_cmd_chat(int argc, char **argv)
{
    chat_args a;
    if (!parse(argc, argv, &a)) return usage();
    ember_model *m = cli_load_model(&a.model);
    if (!m) return 1;
    return cli_free_model(m, run(m, &a));
}
