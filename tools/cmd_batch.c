/* cmd_batch.c — `ember batch`: every line of a file is a request; all are served
 * together by one engine (continuous batching); results come back in input order. A
 * prompt the engine refuses (longer than the context) gets its error in its place, the
 * others still run, and the exit status is then 1. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "platform/os_thread.h"

/* One prompt of the file and what became of it. */
typedef struct slot {
    char *prompt;
    size_t line;       /* in the file, from 1 (empty lines are skipped but counted) */
    cli_output out;
    ember_finish why;
    ember_request_metrics m;
    bool done;
    char error[256];   /* why the engine refused the prompt; "" when it ran */
} slot;

static int on_token(void *user, ember_request_id id, uint32_t tok, const char *text, size_t len)
{
    return cli_output_add(&((slot *)user)->out, tok, text, len) ? 0 : 1;
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    slot *s = user;
    s->why = why;
    s->m = *m;
    s->done = true;
}

static void free_slots(slot *s, size_t n)
{
    for (size_t i = 0; s && i < n; i++) free(s[i].prompt), cli_output_free(&s[i].out);
    free(s);
}

/* Appends a prompt; false when out of memory. */
static bool add_prompt(slot **s, size_t *n, size_t *cap, const char *text, size_t line)
{
    if (!cli_grow((void **)s, cap, *n + 1, sizeof **s)) return false;
    (*s)[*n] = (slot){.prompt = strdup(text), .line = line};
    return (*s)[(*n)++].prompt != NULL;
}

/* Reads the non-empty lines of path into *out (count *n). A file that cannot be opened,
 * a directory and a file without a prompt each get a message of their own; false then. */
static bool read_prompts(const char *path, slot **out, size_t *n)
{
    FILE *f = cli_open_input("batch", path, "r", "a file with one prompt per line");
    *out = NULL, *n = 0;
    if (!f) return false;
    char *line = NULL;
    size_t lcap = 0, cap = 0, number = 0;
    long len;
    bool ok = true;
    while (ok && (len = cli_get_line(&line, &lcap, f)) >= 0) {
        number++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (len > 0) ok = add_prompt(out, n, &cap, line, number);
    }
    if (!ok) fprintf(stderr, "ember batch: out of memory reading %s\n", path);
    else if (ferror(f)) fprintf(stderr, "ember batch: cannot read %s: %s\n", path, strerror(errno)), ok = false;
    else if (*n == 0 && number == 0)
        fprintf(stderr, "ember batch: %s is empty; -f wants a file with one prompt per line\n", path), ok = false;
    else if (*n == 0)
        fprintf(stderr, "ember batch: %s holds no prompts (%zu line%s, all empty); -f wants one prompt per line\n",
                path, number, number == 1 ? "" : "s"), ok = false;
    free(line);
    fclose(f);
    if (!ok) free_slots(*out, *n), *out = NULL, *n = 0;
    return ok;
}

static double now_s(void) { return ember_now_ms() / 1e3; }

static void print_text(const slot *s, size_t n, size_t total, double secs, size_t failed)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i].error[0]) printf("[%zu] error: line %zu: %s\n", i, s[i].line, s[i].error);
        else printf("[%zu] %s\n", i, s[i].out.text ? s[i].out.text : "");
    }
    fprintf(stderr, "%zu requests, %zu tokens in %.2f s: %.1f tok/s\n", n - failed, total, secs, total / secs);
    if (failed) fprintf(stderr, "ember batch: %zu of %zu prompts refused (see their lines above)\n", failed, n);
}

static void print_json(const slot *s, size_t n, size_t total, double secs, bool spec)
{
    size_t drafted = 0, accepted = 0;
    printf("{\"results\": [");
    for (size_t i = 0; i < n; i++) {
        drafted += s[i].m.n_drafted;
        accepted += s[i].m.n_accepted;
        printf("%s{\"tokens\": [", i ? ", " : "");
        for (size_t j = 0; j < s[i].out.n; j++) printf("%s%u", j ? ", " : "", s[i].out.tokens[j]);
        printf("], \"text\": ");
        cli_json_string(stdout, s[i].out.text ? s[i].out.text : "", s[i].out.len);
        printf(", \"line\": %zu", s[i].line);
        if (s[i].error[0]) {
            printf(", \"finish\": \"error\", \"error\": ");
            cli_json_string(stdout, s[i].error, strlen(s[i].error));
        } else {
            printf(", \"finish\": \"%s\"", ember_finish_name(s[i].why));
        }
        if (spec) printf(", \"drafted\": %u, \"accepted\": %u", s[i].m.n_drafted, s[i].m.n_accepted);
        printf("}");
    }
    printf("], \"requests\": %zu, \"output_tokens\": %zu, \"duration_s\": %.3f, \"throughput_tok_s\": %.3f", n,
           total, secs, total / secs);
    if (spec)
        printf(", \"drafted\": %zu, \"accepted\": %zu, \"acceptance_rate\": %.4f", drafted, accepted,
               drafted ? (double)accepted / drafted : 0.0);
    printf("}\n");
}

/* A refused submission stays with its prompt; any other error ends the batch. */
static bool refused(ember_status st)
{
    return st == EMBER_ERR_CONTEXT_FULL || st == EMBER_ERR_INVALID_ARG;
}

static int serve(ember_model *m, slot *s, size_t n, const ember_request_desc *base, ember_engine_opts eo, bool json)
{
    ember_engine *e = NULL;
    ember_status st = ember_engine_create(m, &eo, &e);
    size_t failed = 0;
    double t0 = now_s();
    for (size_t i = 0; st == EMBER_OK && i < n; i++) {
        ember_request_desc d = *base;
        d.prompt = s[i].prompt;
        d.user = &s[i];
        st = ember_submit(e, &d, NULL);
        if (refused(st)) {
            snprintf(s[i].error, sizeof s[i].error, "%s", ember_engine_error(e));
            failed++;
            st = EMBER_OK;
        }
    }
    while (st == EMBER_OK) st = ember_engine_step(e);
    int code = failed ? 1 : 0;
    if (st != EMBER_IDLE) {
        fprintf(stderr, "ember: %s\n", e ? ember_engine_error(e) : "out of memory");
        code = 1;
    } else {
        size_t total = 0;
        for (size_t i = 0; i < n; i++) total += s[i].out.n;
        double secs = now_s() - t0;
        if (json) print_json(s, n, total, secs, base->spec.draft_k > 0);
        else print_text(s, n, total, secs, failed);
        if (json && failed) fprintf(stderr, "ember batch: %zu of %zu prompts refused (their entries carry \"error\")\n",
                                    failed, n);
    }
    ember_engine_destroy(e);
    return code;
}

static const char *const value_flags[] = {"-f", "-n", "--max-seqs", "--kv-type", "--kv-blocks", NULL};

static int usage(FILE *out, int code)
{
    fprintf(out, "usage: ember batch -m MODEL.gguf -f PROMPTS [-n N] [--max-seqs S] [--kv-type f32|f16|q8_0] [--kv-blocks B]\n"
                 "                   [sampling] [--draft M2 --draft-k K | --ngram N] [--ignore-eos] [--json]\n"
                 "                   [--grammar FILE.gbnf | --json-schema FILE.json]  (every reply follows it)\n"
                 "PROMPTS: one prompt per line (empty lines skipped); all are served together.\n"
                 "defaults: -n 64 tokens a reply, --max-seqs 16 served at once, --kv-type f32,\n"
                 "          --kv-blocks 0 (enough for S sequences of 1024 tokens and one of the whole context)\n"
                 "%s", cli_sampling_help);
    return code;
}

/* The usage on stderr, once what the flags read is freed. */
static int batch_usage(cli_grammar *grammar)
{
    cli_grammar_free(grammar);
    return usage(stderr, CLI_USAGE);
}

int ember_cmd_batch(int argc, char **argv)
{
    cli_model_args ma = {0};
    const char *file = NULL;
    long n = 64, max_seqs = 16, kv_blocks = 0;
    bool json = false;
    ember_kv_type kv_type = EMBER_KV_F32;
    const char *draft_path = NULL;
    ember_request_desc base = {.on_token = on_token, .on_done = on_done};
    cli_grammar grammar = {0}; /* --grammar, --json-schema: every request's */
    ember_logit_bias bias[CLI_MAX_BIAS]; /* base.sampling.logit_bias */
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(argc, argv, &i, &ma);
        if (r < 0) return usage(stderr, CLI_USAGE);
        if (r > 0) continue;
        const char *f = argv[i], *v;
        if (cli_is_help(f)) return usage(stdout, CLI_OK);
        if (strcmp(f, "--json") == 0) { json = true; continue; }
        if (strcmp(f, "--ignore-eos") == 0) { base.ignore_eos = 1; continue; }
        if (!cli_flag_in(f, value_flags) && !cli_flag_in(f, cli_sampling_flags) && !cli_flag_in(f, cli_spec_flags) &&
            !cli_flag_in(f, cli_grammar_flags)) {
            cli_unknown("batch", f);
            return batch_usage(&grammar);
        }
        if (!(v = cli_value(argc, argv, &i))) return batch_usage(&grammar);
        bool ok = true;
        if (strcmp(f, "-f") == 0) file = v;
        else if (strcmp(f, "-n") == 0) ok = cli_int(f, v, 1, 1 << 20, &n);
        else if (strcmp(f, "--max-seqs") == 0) ok = cli_int(f, v, 1, 1024, &max_seqs);
        else if (strcmp(f, "--kv-type") == 0) ok = cli_kv_type(f, v, &kv_type);
        else if (strcmp(f, "--kv-blocks") == 0) ok = cli_int(f, v, 1, 1 << 24, &kv_blocks);
        else if (!cli_sampling_flag(f, v, &base.sampling, bias, &r)) ok = false;
        else if (!r && (r = cli_grammar_flag("batch", f, v, &grammar)) < 0) ok = false;
        else if (!r) ok = cli_spec_flag(f, v, &base.spec, &draft_path) > 0;
        if (!ok) return batch_usage(&grammar);
    }
    if (!ma.path || !file) {
        fprintf(stderr, "ember batch: %s\n", !ma.path ? "no model given (-m MODEL.gguf)" : "no prompts given (-f FILE)");
        return batch_usage(&grammar);
    }
    base.max_tokens = (uint32_t)n;
    base.grammar = grammar.gbnf, base.json_schema = grammar.json_schema;
    slot *s;
    size_t count;
    if (!read_prompts(file, &s, &count)) {
        cli_grammar_free(&grammar);
        return CLI_FAILED;
    }
    ember_model *draft, *m = cli_load_with_draft(&ma, draft_path, &draft);
    int code = CLI_FAILED;
    if (m) {
        ember_engine_opts eo = {.max_seqs = (uint32_t)max_seqs, .kv_type = kv_type, .kv_blocks = (uint32_t)kv_blocks,
                                .draft = draft};
        code = cli_free_with_draft(m, draft, serve(m, s, count, &base, eo, json));
    }
    free_slots(s, count);
    cli_grammar_free(&grammar);
    return code;
}
