/* cmd_batch.c — `ember batch`: every line of a file is a request; all are served
 * together by one engine (continuous batching); results come back in input order. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"

typedef struct slot {
    uint32_t *tokens;
    size_t n, cap;
    char *text;
    size_t len, text_cap;
    ember_finish why;
    ember_request_metrics m;
    bool done;
} slot;

static bool push(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static int on_token(void *user, ember_request_id id, uint32_t tok, const char *text, size_t len)
{
    slot *s = user;
    if (!push((void **)&s->tokens, &s->cap, s->n + 1, sizeof *s->tokens) ||
        !push((void **)&s->text, &s->text_cap, s->len + len + 1, 1))
        return 1;
    s->tokens[s->n++] = tok;
    memcpy(s->text + s->len, text, len);
    s->len += len;
    s->text[s->len] = 0;
    return 0;
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    slot *s = user;
    s->why = why;
    s->m = *m;
    s->done = true;
}

/* Reads non-empty lines; returns the count (lines[] owned by the caller). */
static size_t read_lines(const char *path, char ***out)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char **lines = NULL, *line = NULL;
    size_t n = 0, cap = 0, lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (len == 0) continue;
        if (!push((void **)&lines, &cap, n + 1, sizeof *lines)) break;
        if (!(lines[n] = strdup(line))) break;
        n++;
    }
    free(line);
    fclose(f);
    *out = lines;
    return n;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void print_results(const slot *s, size_t n, double secs, bool json, bool spec)
{
    size_t total = 0, drafted = 0, accepted = 0;
    for (size_t i = 0; i < n; i++) {
        total += s[i].n;
        drafted += s[i].m.n_drafted;
        accepted += s[i].m.n_accepted;
    }
    if (!json) {
        for (size_t i = 0; i < n; i++) printf("[%zu] %s\n", i, s[i].text ? s[i].text : "");
        fprintf(stderr, "%zu requests, %zu tokens in %.2f s: %.1f tok/s\n", n, total, secs, total / secs);
        return;
    }
    printf("{\"results\": [");
    for (size_t i = 0; i < n; i++) {
        printf("%s{\"tokens\": [", i ? ", " : "");
        for (size_t j = 0; j < s[i].n; j++) printf("%s%u", j ? ", " : "", s[i].tokens[j]);
        printf("], \"text\": ");
        cli_json_string(stdout, s[i].text ? s[i].text : "", s[i].len);
        printf(", \"finish\": \"%s\"", cli_finish_name(s[i].why));
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

static int serve(ember_model *m, char **lines, size_t n, const ember_request_desc *base, ember_engine_opts eo,
                 bool json)
{
    ember_engine *e = NULL;
    slot *s = calloc(n, sizeof *s);
    ember_status st = s ? ember_engine_create(m, &eo, &e) : EMBER_ERR_OUT_OF_MEMORY;
    double t0 = now_s();
    for (size_t i = 0; st == EMBER_OK && i < n; i++) {
        ember_request_desc d = *base;
        d.prompt = lines[i];
        d.user = &s[i];
        st = ember_submit(e, &d, NULL);
    }
    while (st == EMBER_OK) st = ember_engine_step(e);
    int code = 0;
    if (st != EMBER_IDLE) {
        fprintf(stderr, "ember: %s\n", e ? ember_engine_error(e) : "out of memory");
        code = 1;
    } else {
        print_results(s, n, now_s() - t0, json, base->spec.draft_k > 0);
    }
    ember_engine_destroy(e);
    for (size_t i = 0; s && i < n; i++) free(s[i].tokens), free(s[i].text);
    free(s);
    return code;
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
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(argc, argv, &i, &ma);
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *f = argv[i], *v;
        if (strcmp(f, "--json") == 0) { json = true; continue; }
        if (strcmp(f, "--ignore-eos") == 0) { base.ignore_eos = 1; continue; }
        if (!(v = cli_value(argc, argv, &i))) return 2;
        if (strcmp(f, "-f") == 0) file = v;
        else if (strcmp(f, "-n") == 0) { if (!cli_int(f, v, 1, 1 << 20, &n)) return 2; }
        else if (strcmp(f, "--max-seqs") == 0) { if (!cli_int(f, v, 1, 1024, &max_seqs)) return 2; }
        else if (strcmp(f, "--kv-type") == 0) { if (!cli_kv_type(f, v, &kv_type)) return 2; }
        else if (strcmp(f, "--kv-blocks") == 0) { if (!cli_int(f, v, 1, 1 << 24, &kv_blocks)) return 2; }
        else if (!cli_sampling_flag(f, v, &base.sampling, &r)) return 2;
        else if (!r && (r = cli_spec_flag(f, v, &base.spec, &draft_path)) < 0) return 2;
        else if (!r) {
            fprintf(stderr, "usage: ember batch -m MODEL.gguf -f PROMPTS [-n N] [--max-seqs S] [--kv-type f32|q8_0] [--kv-blocks B]\n"
                            "                   [sampling] [--draft M2 --draft-k K | --ngram N] [--json]\n");
            return 2;
        }
    }
    base.max_tokens = (uint32_t)n;
    char **lines = NULL;
    size_t count = file ? read_lines(file, &lines) : 0;
    if (!count) {
        fprintf(stderr, "ember: no prompts read from %s\n", file ? file : "(no -f FILE given)");
        return file ? 1 : 2;
    }
    ember_model *draft, *m = cli_load_with_draft(&ma, draft_path, &draft);
    int code = 1;
    if (m) {
        ember_engine_opts eo = {.max_seqs = (uint32_t)max_seqs, .kv_type = kv_type, .kv_blocks = (uint32_t)kv_blocks,
                                .draft = draft};
        code = cli_free_with_draft(m, draft, serve(m, lines, count, &base, eo, json));
    }
    for (size_t i = 0; i < count; i++) free(lines[i]);
    free(lines);
    return code;
}
