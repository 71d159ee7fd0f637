/* cmd_generate.c — `ember generate`: one prompt, one continuation, streamed to stdout or
 * reported as one JSON object. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "platform/os_thread.h"

typedef struct gen_args {
    cli_model_args model;
    const char *prompt;
    long n;
    ember_sampling sampling;
    ember_logit_bias bias[CLI_MAX_BIAS]; /* sampling.logit_bias */
    const char *stop[EMBER_MAX_STOP + 1];
    int n_stop;
    bool json, no_bos, ignore_eos, help, profile;
    long max_batch_tokens;
    long kv_blocks;                    /* 0 = the engine's default (one whole context at least) */
    ember_kv_type kv_type;
    ember_sample_from sample_from;
    const char *draft;          /* --draft: path of a draft model */
    cli_grammar grammar;        /* --grammar, --json-schema (freed by ember_cmd_generate) */
    ember_speculation spec;
    long logprobs;              /* --logprobs K: -1 = off, else 0..20 alternatives */
    cli_habits habits;          /* -c N: the context; -t: a note */
} gen_args;

typedef struct gen_state {
    bool json;
    cli_output out;
    ember_finish why;
    ember_request_metrics m;
    bool done, spec;
    double load_ms;             /* ember_model_load (and the draft's), wall time */
    uint64_t weight_bytes;      /* device memory once the model was loaded: its weights */
    uint64_t device_bytes;      /* ... and once the engine was made: weights, KV, activations */
    const ember_profile *prof;  /* --profile: the engine's, read once the request ended */
    bool logprobs;              /* --logprobs given */
    ember_logprobs *lp;         /* one per generated token */
    size_t n_lp, cap_lp;
    bool cut;                   /* -c cut max_tokens to the room the prompt leaves */
} gen_state;

/* The options that take a value, besides the model's, sampling's and speculation's. */
static const char *const value_flags[] = {"-p", "--prompt", "-n", "--stop", "--max-batch-tokens", "--kv-type",
                                          "--kv-blocks", "--sample-from", "--logprobs", NULL};

static int usage(FILE *out, int code)
{
    fprintf(out, "usage: ember generate -m MODEL.gguf [-p TEXT] [-n N] [sampling] [--stop STR]...\n"
                 "  -p, --prompt TEXT     the text to continue (default: empty, BOS alone)\n"
                 "  -n N                  tokens to generate at most (default 64)\n"
                 "  -c, --ctx-size N      the context: prompt and reply together (default 0: the model's);\n"
                 "                        the KV cache is sized for it, and the reply ends where it is full\n"
                 "  -t, --threads N       accepted and ignored: Vulkan needs no thread count\n"
                 "  --stop STR            end the reply before STR (up to 8; default none)\n"
                 "  --no-bos, --ignore-eos  no BOS before the prompt; go on past end-of-sequence (default off)\n"
                 "  --backend vulkan|cpu  (default vulkan)   --device N (default: the best; ember info)\n"
                 "  --max-batch-tokens T  (default 256)   --kv-type f32|f16|q8_0 (default f32)\n"
                 "  --kv-blocks N         KV blocks of 16 tokens (default: one whole context, or -c's)\n"
                 "  --profile, --json     GPU time per kernel; one JSON object instead of the text (default off)\n"
                 "  --sample-from auto|candidates|rows (default auto)\n"
                 "  --logprobs K          with --json: each token's log-probability and the K most likely,\n"
                 "                        K 0..20, under the model's own distribution (default off)\n"
                 "%s"
                 "speculation (default off): --draft MODEL.gguf --draft-k K (4) | --ngram N [--draft-k K] [--adaptive]\n"
                 "constrained (default none): --grammar FILE.gbnf | --json-schema FILE.json  (docs/grammar.md)\n"
                 "other: --memory auto|discrete (auto) --memory-budget MIB (none) --kernels LIST (see docs/cli.md)\n",
            cli_sampling_help);
    return code;
}

static bool parse(int argc, char **argv, gen_args *a)
{
    *a = (gen_args){.prompt = "", .n = 64, .logprobs = -1};
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i], *v;
        int r = cli_model_flag(argc, argv, &i, &a->model);
        if (r < 0) return false;
        if (r > 0) continue;
        if ((r = cli_habit_flag("generate", argc, argv, &i, &a->habits)) < 0) return false;
        if (r > 0) continue;
        if (cli_is_help(f)) return a->help = true;
        if (strcmp(f, "--json") == 0) a->json = true;
        else if (strcmp(f, "--no-bos") == 0) a->no_bos = true;
        else if (strcmp(f, "--ignore-eos") == 0) a->ignore_eos = true;
        else if (strcmp(f, "--adaptive") == 0) a->spec.adaptive = 1;
        else if (strcmp(f, "--profile") == 0) a->profile = true;
        else if (!cli_flag_in(f, value_flags) && !cli_flag_in(f, cli_sampling_flags) && !cli_flag_in(f, cli_spec_flags) &&
                 !cli_flag_in(f, cli_grammar_flags)) {
            cli_unknown("generate", f);
            return false;
        }
        else if (!(v = cli_value(argc, argv, &i))) return false;
        else if (strcmp(f, "-p") == 0 || strcmp(f, "--prompt") == 0) a->prompt = v;
        else if (strcmp(f, "-n") == 0) { if (!cli_int(f, v, 1, 1 << 20, &a->n)) return false; }
        else if (strcmp(f, "--stop") == 0) {
            if (a->n_stop == EMBER_MAX_STOP) {
                fprintf(stderr, "ember generate: at most %d --stop strings\n", EMBER_MAX_STOP);
                return false;
            }
            a->stop[a->n_stop++] = v;
        }
        else if (!cli_sampling_flag(f, v, &a->sampling, a->bias, &r)) return false;
        else if (r) continue;
        else if ((r = cli_spec_flag(f, v, &a->spec, &a->draft)) < 0) return false;
        else if (r) continue;
        else if ((r = cli_grammar_flag("generate", f, v, &a->grammar)) < 0) return false;
        else if (r) continue;
        else if (strcmp(f, "--max-batch-tokens") == 0) { if (!cli_int(f, v, 1, 1 << 16, &a->max_batch_tokens)) return false; }
        else if (strcmp(f, "--kv-type") == 0) { if (!cli_kv_type(f, v, &a->kv_type)) return false; }
        else if (strcmp(f, "--kv-blocks") == 0) { if (!cli_int(f, v, 1, 1 << 24, &a->kv_blocks)) return false; }
        else if (strcmp(f, "--sample-from") == 0) { if (!cli_sample_from(f, v, &a->sample_from)) return false; }
        else if (strcmp(f, "--logprobs") == 0) { if (!cli_int(f, v, 0, EMBER_MAX_TOP_LOGPROBS, &a->logprobs)) return false; }
    }
    if (!a->model.path) fprintf(stderr, "ember generate: no model given (-m MODEL.gguf)\n");
    return a->model.path != NULL;
}

static int on_token(void *user, ember_request_id id, uint32_t token, const char *piece, size_t len)
{
    gen_state *g = user;
    if (!cli_output_add(&g->out, token, piece, len)) return 1;
    if (!g->json) {
        fwrite(piece, 1, len, stdout);
        fflush(stdout);
    }
    return 0;
}

static void on_logprobs(void *user, ember_request_id id, const ember_logprobs *lp)
{
    gen_state *g = user;
    if (g->n_lp == g->cap_lp) {
        size_t cap = g->cap_lp ? 2 * g->cap_lp : 64;
        ember_logprobs *p = realloc(g->lp, cap * sizeof *p);
        if (!p) return; /* reported as fewer entries than tokens */
        g->lp = p, g->cap_lp = cap;
    }
    g->lp[g->n_lp++] = *lp;
}

/* "logprobs": [{"token", "logprob", "top": [{"token", "logprob"}...]}...] */
static void print_logprobs(const gen_state *g)
{
    printf(", \"logprobs\": [");
    for (size_t i = 0; i < g->n_lp; i++) {
        const ember_logprobs *lp = &g->lp[i];
        printf("%s{\"token\": %u, \"logprob\": %.9g, \"top\": [", i ? ", " : "", lp->chosen.token, lp->chosen.logprob);
        for (uint32_t j = 0; j < lp->n_top; j++)
            printf("%s{\"token\": %u, \"logprob\": %.9g}", j ? ", " : "", lp->top[j].token, lp->top[j].logprob);
        printf("]}");
    }
    printf("]");
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    gen_state *g = user;
    g->why = g->cut && why == EMBER_FINISH_LENGTH ? EMBER_FINISH_CONTEXT : why; /* what llama.cpp stops for */
    g->m = *m;
    g->done = true;
}

static double rate(double n, double ms) { return ms > 0 ? n * 1000.0 / ms : 0.0; }

static void report(const gen_state *g)
{
    const ember_request_metrics *m = &g->m;
    double prefill = rate(m->n_prompt - m->n_cached, m->prefill_ms);
    double decode = rate(m->n_gen > 1 ? m->n_gen - 1 : 0, m->decode_ms);
    if (!g->json) {
        fprintf(stderr,
                "\n[%u prompt tokens, %u generated; load %.1f ms; ttft %.1f ms; prefill %.1f tok/s; "
                "decode %.1f tok/s]\n",
                m->n_prompt, m->n_gen, g->load_ms, m->ttft_ms, prefill, decode);
        if (g->prof) cli_profile_text(stderr, g->prof);
        return;
    }
    printf("{\"tokens\": [");
    for (size_t i = 0; i < g->out.n; i++) printf("%s%u", i ? ", " : "", g->out.tokens[i]);
    printf("], \"text\": ");
    cli_json_string(stdout, g->out.text ? g->out.text : "", g->out.len);
    printf(", \"n_prompt\": %u, \"n_gen\": %u, \"load_ms\": %.3f, \"ttft_ms\": %.3f, \"prefill_tok_s\": %.3f, "
           "\"decode_tok_s\": %.3f, \"prefill_ms\": %.3f, \"decode_ms\": %.3f, \"finish\": \"%s\"",
           m->n_prompt, m->n_gen, g->load_ms, m->ttft_ms, prefill, decode, m->prefill_ms, m->decode_ms,
           ember_finish_name(g->why));
    printf(", \"weight_bytes\": %llu, \"device_bytes\": %llu", (unsigned long long)g->weight_bytes,
           (unsigned long long)g->device_bytes);
    if (g->spec) {
        double steps = m->n_decode_steps ? m->n_decode_steps : 1;
        printf(", \"drafted\": %u, \"accepted\": %u, \"acceptance_rate\": %.4f, \"tokens_per_step\": %.4f",
               m->n_drafted, m->n_accepted, m->n_drafted ? (double)m->n_accepted / m->n_drafted : 0.0,
               m->n_gen > 1 ? (m->n_gen - 1) / steps : 0.0);
    }
    if (g->prof) printf(", \"profile\": "), cli_profile_json(stdout, g->prof);
    if (g->logprobs) print_logprobs(g);
    printf("}\n");
}

static uint64_t device_bytes(const ember_model *m)
{
    ember_model_info info;
    ember_model_get_info(m, &info);
    return info.device_bytes;
}

/* -c N: the KV pool sized for N tokens (and the draft's lookahead), and the reply cut
 * where prompt and reply fill them; the engine itself stops only at the model's context.
 * *cut: max_tokens was lowered. False (with a message) when the prompt alone fills N. */
static bool fit_context(ember_model *m, const gen_args *a, ember_engine_opts *eo, uint32_t *max_tokens, bool *cut)
{
    *max_tokens = (uint32_t)a->n;
    *cut = false;
    if (!a->habits.ctx_given) return true;
    ember_model_info info;
    ember_model_get_info(m, &info);
    uint32_t ctx = cli_context("generate", a->habits.ctx, info.ctx_len);
    size_t n = 0;
    if (ember_tokenize(m, a->prompt, strlen(a->prompt), a->no_bos ? 0 : EMBER_TOKENIZE_ADD_BOS, NULL, 0, &n) !=
        EMBER_OK) {
        fprintf(stderr, "ember: %s\n", ember_model_error(m));
        return false;
    }
    if (n >= ctx) {
        fprintf(stderr, "ember generate: the prompt is %zu tokens: it leaves no room in the context of %u (-c)\n", n,
                ctx);
        return false;
    }
    if (ctx - n < *max_tokens) *max_tokens = (uint32_t)(ctx - n), *cut = true;
    if (!eo->kv_blocks) eo->kv_blocks = (ctx + a->spec.draft_k + 15) / 16; /* the engine's blocks of 16 */
    return true;
}

static int run(ember_model *model, ember_model *draft, const gen_args *a, double load_ms)
{
    uint64_t weights = device_bytes(model);
    ember_engine_opts eo = {.max_batch_tokens = (uint32_t)a->max_batch_tokens, .max_seqs = 1, .draft = draft,
                            .kv_type = a->kv_type, .kv_blocks = (uint32_t)a->kv_blocks, .profile = a->profile,
                            .sample_from = a->sample_from};
    uint32_t max_tokens;
    bool cut;
    if (!fit_context(model, a, &eo, &max_tokens, &cut)) return 1;
    ember_engine *e = NULL;
    if (ember_engine_create(model, &eo, &e) != EMBER_OK) {
        fprintf(stderr, "ember: %s\n", ember_engine_error(e));
        ember_engine_destroy(e);
        return 1;
    }
    gen_state g = {.json = a->json, .spec = a->spec.draft_k > 0, .load_ms = load_ms, .weight_bytes = weights,
                   .device_bytes = device_bytes(model), .logprobs = a->logprobs >= 0, .cut = cut};
    ember_request_desc d = {.prompt = a->prompt, .no_bos = a->no_bos, .max_tokens = max_tokens,
                            .sampling = a->sampling, .ignore_eos = a->ignore_eos,
                            .on_token = on_token, .on_done = on_done, .user = &g, .spec = a->spec,
                            .grammar = a->grammar.gbnf, .json_schema = a->grammar.json_schema};
    memcpy(d.stop, a->stop, sizeof d.stop);
    if (g.logprobs) d.on_logprobs = on_logprobs, d.top_logprobs = (uint32_t)a->logprobs;
    ember_status s = ember_submit(e, &d, NULL);
    if (s == EMBER_OK && !a->json) fputs(a->prompt, stdout);
    while (s == EMBER_OK && !g.done) s = ember_engine_step(e);
    int code = 0;
    if (s < 0 || !g.done) { /* EMBER_IDLE is fine once the request ended */
        if (!a->json) puts(""); /* end the text streamed so far before the message */
        fflush(stdout);
        fprintf(stderr, "ember: %s\n", s < 0 ? ember_engine_error(e) : "the engine stopped with the request pending");
        code = 1;
    } else {
        ember_profile *prof = a->profile ? malloc(sizeof *prof) : NULL;
        if (prof && ember_engine_get_profile(e, prof) == EMBER_OK) g.prof = prof;
        report(&g);
        free(prof);
        if (g.why == EMBER_FINISH_KV_FULL) {
            ember_engine_stats st;
            ember_engine_get_stats(e, &st);
            fprintf(stderr, "ember generate: the KV cache (%u block%s of %u tokens) could not hold the sequence; "
                    "--kv-blocks N raises it\n", st.kv_blocks_total, st.kv_blocks_total == 1 ? "" : "s",
                    st.kv_block_size);
            code = 1;
        }
    }
    ember_engine_destroy(e);
    cli_output_free(&g.out);
    free(g.lp);
    return code;
}

int ember_cmd_generate(int argc, char **argv)
{
    gen_args a;
    int code;
    if (!parse(argc, argv, &a)) code = usage(stderr, CLI_USAGE);
    else if (a.help) code = usage(stdout, CLI_OK);
    else {
        double t0 = ember_now_ms();
        ember_model *draft, *m = cli_load_with_draft(&a.model, a.draft, &draft);
        double load_ms = ember_now_ms() - t0;
        code = m ? cli_free_with_draft(m, draft, run(m, draft, &a, load_ms)) : 1;
    }
    cli_grammar_free(&a.grammar);
    return code;
}
