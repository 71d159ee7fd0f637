/* cmd_chat.c — `ember chat`: a terminal chat with the model's chat template. User lines
 * come from stdin (a terminal or a pipe; end of input ends the chat), replies stream to
 * stdout. One engine and one ember_chat serve the whole conversation: each turn submits
 * the full conversation as token ids, and the engine's prefix cache finds the earlier
 * turns' KV blocks, so only the new part is computed (docs/chat.md).
 *
 * A conversation longer than the context goes on: the chat drops its oldest turns (the
 * system message stays) and says so in one line; --overflow refuse keeps the old rule
 * (a full context is the end of the conversation until /reset).
 *
 * Ctrl-C (SIGINT) stops the reply being generated and goes back to the prompt; at the
 * prompt it says how to leave, and a second one in a row leaves, as shells and REPLs do.
 * A line that is one of the commands (/reset, /exit, /help) is not sent to the model; any
 * other line starting with / is answered with the list of commands ("//" sends a "/").
 * On a terminal the line is edited as in readline (chat/line_edit.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chat/line_edit.h"
#include "chat_file.h"
#include "cli.h"
#include "commands.h"
#include "platform/os_file.h"
#include "platform/os_signal.h"

typedef struct chat_args {
    cli_model_args model;
    const char *template_name;  /* NULL = the model's */
    const char *system;
    long n;
    ember_sampling sampling;
    ember_logit_bias bias[CLI_MAX_BIAS]; /* sampling.logit_bias */
    long kv_blocks;             /* 0 = the engine's default (a whole context at least) */
    ember_chat_overflow overflow;
    cli_grammar grammar;        /* --grammar, --json-schema: every reply follows it */
    bool verbose, help;
    cli_habits habits;          /* -c N: the context the conversation is fitted to; -t: a note */
} chat_args;

/* One turn's reply as it arrives. */
typedef struct turn {
    uint32_t *ids;
    size_t n_ids, cap;
    bool done, oom;
    bool cut;                   /* -c lowered max_tokens to the room the prompt leaves */
    ember_finish why;
    ember_request_metrics m;
} turn;

/* The conversation and what the loop needs between turns. */
typedef struct session {
    ember_model *model;
    ember_engine *e;
    ember_chat *chat;
    const chat_args *a;
    uint32_t ctx;               /* what the conversation may hold: the context, or the KV pool */
    int n_turn;
    bool full;                  /* refused for want of room: only /reset goes on */
    bool restore;               /* a chat was loaded: its KV state goes with the next turn */
    line_edit edit;             /* the terminal's line and history; plain reads when off */
    bool plain;                 /* the terminal could not be put in raw mode: plain reads */
} session;

static const char *const value_flags[] = {"--chat-template", "--system", "-n", "--kv-blocks", "--overflow", "--grammar",
                                          "--json-schema", NULL};

static int usage(FILE *out, int code)
{
    fprintf(out, "usage: ember chat -m MODEL.gguf [options] [sampling]\n"
                 "  --chat-template NAME  chatml, llama2, llama3, llama3.1, mistral, zephyr, gemma, phi3\n"
                 "                        (default: the model's own; see docs/chat.md)\n"
                 "  --system TEXT         the system message (default none)\n"
                 "  -n N                  tokens per reply at most (default 256)\n"
                 "  -c, --ctx-size N      the context the conversation is fitted to (default 0: the model's)\n"
                 "  -t, --threads N       accepted and ignored: Vulkan needs no thread count\n"
                 "  --overflow drop|refuse  past the context: drop the oldest turns, the system message\n"
                 "                        stays (default drop), or end the conversation there (until /reset)\n"
                 "  --kv-blocks N         KV blocks of 16 tokens (default: one whole context, or -c's)\n"
                 "  --backend vulkan|cpu  (default vulkan)   --device N (default: the best; ember info)\n"
                 "  --verbose             say which chat template is used (default off)\n"
                 "  --grammar FILE.gbnf | --json-schema FILE.json  every reply follows it (default none)\n"
                 "%s"
                 "One message per line on stdin; on a terminal the line can be edited (arrows, Home/End,\n"
                 "Backspace; Up/Down: earlier lines). Ctrl-C stops a reply. Commands: /reset starts a new\n"
                 "conversation; /save FILE writes the conversation and its KV cache, /load FILE continues one;\n"
                 "/help; /exit, Ctrl-D (end of input) or Ctrl-C twice at the prompt leaves.\n",
            cli_sampling_help);
    return code;
}

static bool parse_overflow(const char *v, ember_chat_overflow *o)
{
    if (strcmp(v, "drop") == 0) *o = EMBER_CHAT_DROP_OLDEST;
    else if (strcmp(v, "refuse") == 0) *o = EMBER_CHAT_REFUSE;
    else fprintf(stderr, "ember chat: --overflow is drop or refuse, got '%s'\n", v);
    return strcmp(v, "drop") == 0 || strcmp(v, "refuse") == 0;
}

static bool parse(int argc, char **argv, chat_args *a)
{
    *a = (chat_args){.n = 256};
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        int r = cli_model_flag(argc, argv, &i, &a->model);
        if (r < 0) return false;
        if (r > 0) continue;
        if ((r = cli_habit_flag("chat", argc, argv, &i, &a->habits)) < 0) return false;
        if (r > 0) continue;
        if (cli_is_help(f)) return a->help = true;
        if (strcmp(f, "--verbose") == 0 || strcmp(f, "-v") == 0) a->verbose = true;
        else if (!cli_flag_in(f, value_flags) && !cli_flag_in(f, cli_sampling_flags)) {
            cli_unknown("chat", f);
            return false;
        }
        else if (!(v = cli_value(argc, argv, &i))) return false;
        else if (strcmp(f, "--chat-template") == 0) a->template_name = v;
        else if (strcmp(f, "--system") == 0) a->system = v;
        else if (strcmp(f, "-n") == 0) { if (!cli_int(f, v, 1, 1 << 20, &a->n)) return false; }
        else if (strcmp(f, "--kv-blocks") == 0) { if (!cli_int(f, v, 1, 1 << 24, &a->kv_blocks)) return false; }
        else if (strcmp(f, "--overflow") == 0) { if (!parse_overflow(v, &a->overflow)) return false; }
        else if ((r = cli_grammar_flag("chat", f, v, &a->grammar)) < 0) return false;
        else if (r) continue;
        else if (!cli_sampling_flag(f, v, &a->sampling, a->bias, &r)) return false;
    }
    if (!a->model.path) fprintf(stderr, "ember chat: no model given (-m MODEL.gguf)\n");
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
    t->why = t->cut && why == EMBER_FINISH_LENGTH ? EMBER_FINISH_CONTEXT : why;
    t->m = *m;
    t->done = true;
}

typedef enum line_status { LINE_OK, LINE_EOF, LINE_INTERRUPTED } line_status;

/* Reads one line without its line end into *line. A Ctrl-C interrupts the read
 * (ember_interrupt_catch at the prompt). */
static line_status read_plain(char **line, size_t *cap, bool tty)
{
    if (tty) {
        fputs("> ", stdout);
        fflush(stdout);
    }
    errno = 0;
    long n = ember_interrupt_take() ? -2 : cli_get_line(line, cap, stdin);
    if (n < 0) {
        bool intr = n == -2 || ember_interrupt_take() || errno == EINTR;
        clearerr(stdin);
        return intr ? LINE_INTERRUPTED : LINE_EOF;
    }
    while (n > 0 && ((*line)[n - 1] == '\n' || (*line)[n - 1] == '\r')) (*line)[--n] = 0;
    return LINE_OK;
}

/* The next line: edited on a terminal (s->edit.buf holds it), else read plainly. */
static line_status read_line(session *s, char **line, size_t *cap, bool tty)
{
    ember_interrupt_catch(true);
    if (!tty || s->plain) return read_plain(line, cap, tty);
    long n = ember_interrupt_take() ? -2 : line_edit_read(&s->edit, "> ", stdout);
    if (n == -3) { /* no raw mode: plain reads from now on */
        s->plain = true;
        return read_plain(line, cap, tty);
    }
    if (n == -2) (void)ember_interrupt_take();
    if (n < 0) return n == -2 ? LINE_INTERRUPTED : LINE_EOF;
    if (!cli_grow((void **)line, cap, (size_t)n + 1, 1)) return LINE_EOF;
    memcpy(*line, s->edit.buf, (size_t)n + 1);
    return LINE_OK;
}

static double rate(double n, double ms) { return ms > 0 ? n * 1000.0 / ms : 0.0; }

/* The chat refused the prompt: the context (or, under --overflow drop, the system
 * message and this line alone) leaves no room for a reply. */
static void say_full(session *s)
{
    s->full = true;
    fprintf(stderr, "[the context is full: %s; /reset starts a new conversation, /exit leaves]\n",
            ember_chat_error(s->chat));
}

static void say_dropped(const session *s)
{
    ember_chat_info ci;
    ember_chat_get_info(s->chat, &ci);
    if (ci.dropped_turns == 1) fprintf(stderr, "[dropped the oldest turn to fit the context of %u tokens]\n", ci.n_ctx);
    else if (ci.dropped_turns > 1)
        fprintf(stderr, "[dropped the %u oldest turns to fit the context of %u tokens]\n", ci.dropped_turns, ci.n_ctx);
}

/* Submits the conversation and steps until the reply ends; Ctrl-C cancels it. */
static ember_status generate(session *s, const uint32_t *ids, size_t n, turn *t, bool *stopped)
{
    uint32_t max = (uint32_t)s->a->n; /* -c: the reply ends where the context does, as in llama.cpp */
    if (s->a->habits.ctx_given && n < s->ctx && s->ctx - n < max) max = (uint32_t)(s->ctx - n), t->cut = true;
    ember_request_desc d = {.tokens = ids, .n_tokens = n, .max_tokens = max,
                            .sampling = s->a->sampling, .on_token = on_token, .on_done = on_done, .user = t,
                            .grammar = s->a->grammar.gbnf, .json_schema = s->a->grammar.json_schema};
    if (s->restore) ember_chat_kv_state(s->chat, &d.state, &d.state_len); /* after /load */
    ember_request_id id;
    ember_interrupt_catch(false); /* the flag is read between steps */
    (void)ember_interrupt_take();
    ember_status st = ember_submit(s->e, &d, &id);
    while (st == EMBER_OK && !t->done) {
        if (!*stopped && ember_interrupt_take()) {
            *stopped = true;
            ember_cancel(s->e, id); /* the next step ends it (EMBER_FINISH_CANCELLED) */
        }
        st = ember_engine_step(s->e);
    }
    fputc('\n', stdout);
    fflush(stdout);
    return st;
}

/* Runs one turn: submits the conversation, streams the reply, adds it to the chat (a
 * reply stopped by Ctrl-C too: it is what the user saw). 1 on an error that ends the chat. */
static int run_turn(session *s)
{
    const uint32_t *ids;
    size_t n;
    ember_status ps = ember_chat_prompt(s->chat, &ids, &n);
    if (ps == EMBER_ERR_CONTEXT_FULL) {
        if (s->a->overflow == EMBER_CHAT_REFUSE) say_full(s);
        else fprintf(stderr, "[not sent: %s; the conversation goes on without it]\n", ember_chat_error(s->chat));
        ember_chat_take_back(s->chat);
        return 0;
    }
    if (ps != EMBER_OK) {
        fprintf(stderr, "ember chat: %s\n", ember_chat_error(s->chat));
        return 1;
    }
    say_dropped(s);
    turn t = {0};
    bool stopped = false;
    ember_status st = generate(s, ids, n, &t, &stopped);
    s->restore = false;
    int code = 0;
    if (st == EMBER_ERR_CONTEXT_FULL) { /* refused by the engine: its KV pool (--kv-blocks) */
        fprintf(stderr, "[not sent: %s; the conversation goes on without it]\n", ember_engine_error(s->e));
        ember_chat_take_back(s->chat);
    } else if (st < 0 || !t.done || t.oom || t.why == EMBER_FINISH_ERROR) { /* EMBER_IDLE after the end is fine */
        fprintf(stderr, "ember chat: %s\n", t.oom ? "out of memory" : st < 0 || t.done ? ember_engine_error(s->e)
                                                                       : "the engine stopped with the reply pending");
        code = 1;
    } else if (ember_chat_add_reply(s->chat, t.ids, t.n_ids) != EMBER_OK) {
        fprintf(stderr, "ember chat: %s\n", ember_chat_error(s->chat));
        code = 1;
    } else {
        const ember_request_metrics *m = &t.m;
        char restored[48] = "";
        if (m->n_restored) snprintf(restored, sizeof restored, ", %u restored", m->n_restored);
        fprintf(stderr, "[turn %d: %u prompt tokens, %u from cache%s, %u generated, %.1f tok/s%s]\n", ++s->n_turn,
                m->n_prompt, m->n_cached, restored, m->n_gen, rate(m->n_gen > 1 ? m->n_gen - 1 : 0, m->decode_ms),
                stopped                           ? "; stopped by Ctrl-C"
                : t.why == EMBER_FINISH_CONTEXT ? "; cut at the end of the context"
                : t.why == EMBER_FINISH_KV_FULL ? "; cut: the KV cache (--kv-blocks) is full"
                                                : "");
    }
    free(t.ids);
    return code;
}

/* A new ember_chat with the system message, fitted to what the engine holds: what
 * /reset and the start make. */
static bool new_chat(session *s)
{
    ember_chat_free(s->chat);
    s->chat = NULL;
    s->full = false;
    ember_chat_fit fit = {.overflow = s->a->overflow, .max_tokens = (uint32_t)s->a->n, .n_ctx = s->ctx};
    if (ember_chat_create(s->model, s->a->template_name, &s->chat) != EMBER_OK ||
        ember_chat_set_fit(s->chat, &fit) != EMBER_OK ||
        (s->a->system && ember_chat_add(s->chat, "system", s->a->system) != EMBER_OK)) {
        fprintf(stderr, "ember chat: %s\n", ember_chat_error(s->chat));
        return false;
    }
    return true;
}

typedef enum command { CMD_NONE, CMD_EXIT, CMD_RESET, CMD_HELP, CMD_SAVE, CMD_LOAD, CMD_UNKNOWN } command;

/* The command a line is; *arg: the file of /save and /load (NULL when none is given). */
static command parse_command(const char *line, const char **arg)
{
    *arg = NULL;
    if (strcmp(line, "/exit") == 0 || strcmp(line, "/quit") == 0) return CMD_EXIT;
    if (strcmp(line, "/reset") == 0) return CMD_RESET;
    if (strcmp(line, "/help") == 0) return CMD_HELP;
    const char *names[2] = {"/save", "/load"};
    for (int i = 0; i < 2; i++) {
        size_t k = strlen(names[i]);
        if (strncmp(line, names[i], k) || (line[k] && line[k] != ' ')) continue;
        for (line += k; *line == ' '; line++) {}
        *arg = *line ? line : NULL;
        return i ? CMD_LOAD : CMD_SAVE;
    }
    return line[0] == '/' && line[1] != '/' ? CMD_UNKNOWN : CMD_NONE;
}

/* /load FILE: the saved conversation replaces this one; its KV cache goes with the next
 * turn. */
static void load(session *s, const char *path)
{
    ember_chat *c = chat_file_load(s->model, s->a->template_name, path);
    if (!c) return;
    ember_chat_free(s->chat);
    s->chat = c;
    s->full = false;
    s->restore = true;
    ember_chat_info ci;
    ember_chat_get_info(c, &ci);
    fprintf(stderr, "[loaded %s: %zu messages, %zu tokens]\n", path, ci.n_messages, ci.n_tokens);
}

static void banner(const session *s)
{
    fprintf(stderr, "ember chat: %s template, context %u tokens. Type a message and Enter.\n"
                    "  Ctrl-C stops a reply; /reset starts a new conversation; /save FILE and /load FILE keep\n"
                    "  it (with its KV cache) for later; /exit or Ctrl-D leaves.\n",
            ember_chat_template_name(s->chat), s->ctx);
}

/* The user's line: a command or a message. 1 when the chat must end with an error, -1
 * when the user leaves. */
static int handle_line(session *s, const char *line)
{
    const char *arg;
    switch (parse_command(line, &arg)) {
    case CMD_EXIT: return -1;
    case CMD_SAVE:
    case CMD_LOAD:
        if (!arg) fprintf(stderr, "[/save FILE and /load FILE need a file]\n");
        else if (line[1] == 's') chat_file_save(s->e, s->chat, arg);
        else load(s, arg);
        return 0;
    case CMD_RESET:
        if (!new_chat(s)) return 1;
        fprintf(stderr, "[a new conversation%s]\n", s->a->system ? " (the system message is kept)" : "");
        return 0;
    case CMD_HELP: banner(s); return 0;
    case CMD_UNKNOWN:
        fprintf(stderr, "[unknown command %.*s: the commands are /reset, /save FILE, /load FILE, /help, /exit "
                        "(or /quit); start a line with // to send it with one /]\n", (int)strcspn(line, " "), line);
        return 0;
    case CMD_NONE: break;
    }
    if (line[0] == '/' && line[1] == '/') line++; /* "//x" is the message "/x" */
    if (s->full) {
        fprintf(stderr, "[the context is full: /reset starts a new conversation, /exit leaves]\n");
        return 0;
    }
    if (ember_chat_add(s->chat, "user", line) != EMBER_OK) {
        fprintf(stderr, "ember chat: %s\n", ember_chat_error(s->chat));
        return 1;
    }
    return run_turn(s);
}

static int converse(session *s)
{
    bool tty = ember_is_terminal(stdin);
    if (s->a->verbose) fprintf(stderr, "[chat template: %s]\n", ember_chat_template_name(s->chat));
    if (tty) banner(s);
    char *line = NULL;
    size_t cap = 0;
    int code = 0;
    bool interrupted_before = false; /* the last thing at the prompt was a Ctrl-C */
    for (;;) {
        line_status ls = read_line(s, &line, &cap, tty);
        if (ls == LINE_EOF) break;
        if (ls == LINE_INTERRUPTED) {
            if (interrupted_before) break;
            interrupted_before = true;
            fprintf(stderr, "\n[Ctrl-C again, Ctrl-D or /exit leaves]\n");
            continue;
        }
        interrupted_before = false;
        if (line[0] == 0) continue;
        int r = handle_line(s, line);
        if (r) {
            code = r > 0 ? r : 0;
            break;
        }
    }
    if (tty && code == 0) fputc('\n', stdout);
    free(line);
    return code;
}

/* The tokens a conversation may hold: the model's context, or less when --kv-blocks
 * makes the pool smaller (one block spare for a copy on write). */
static uint32_t room_of(ember_engine *e, uint32_t ctx)
{
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    uint64_t pool = st.kv_blocks_total > 1 ? (uint64_t)(st.kv_blocks_total - 1) * st.kv_block_size : st.kv_block_size;
    return pool < ctx ? (uint32_t)pool : ctx;
}

static int run(ember_model *model, const chat_args *a)
{
    ember_model_info info;
    ember_model_get_info(model, &info);
    session s = {.model = model, .a = a};
    uint32_t ctx = cli_context("chat", a->habits.ctx, info.ctx_len);
    ember_engine_opts eo = {.max_seqs = 1, .kv_blocks = (uint32_t)a->kv_blocks};
    if (a->habits.ctx_given && !eo.kv_blocks) eo.kv_blocks = (ctx + 15) / 16 + 1; /* room_of keeps one spare */
    int code = 1;
    if (ember_engine_create(model, &eo, &s.e) != EMBER_OK) {
        fprintf(stderr, "ember chat: %s\n", ember_engine_error(s.e));
    } else {
        s.ctx = room_of(s.e, ctx);
        if (new_chat(&s)) code = converse(&s);
    }
    ember_engine_destroy(s.e);
    ember_chat_free(s.chat);
    line_edit_free(&s.edit);
    return code;
}

int ember_cmd_chat(int argc, char **argv)
{
    chat_args a;
    int code;
    if (!parse(argc, argv, &a)) code = usage(stderr, CLI_USAGE);
    else if (a.help) code = usage(stdout, CLI_OK);
    else {
        ember_model *m = cli_load_model(&a.model);
        code = m ? cli_free_model(m, run(m, &a)) : 1;
    }
    cli_grammar_free(&a.grammar);
    return code;
}
