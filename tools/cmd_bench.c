/* cmd_bench.c — `ember bench`: a seeded synthetic serving workload (Poisson arrivals,
 * random prompt and output lengths, an optional shared prefix) run through one engine,
 * reporting throughput, latency percentiles (TTFT, TPOT, ITL), goodput under SLOs and KV
 * cache use. --batching static and --kv contiguous run the baselines it is compared to
 * (static: fixed-shape batches, prompts padded to the longest and finished members
 * computing on as padding rows, reported as padding_tokens and not counted in
 * output_tokens or throughput; static-ragged: the same without padded prompts). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"

typedef struct bench_args {
    cli_model_args model;
    long requests, prompt_lo, prompt_hi, gen_lo, gen_hi, shared_prefix, seed;
    double rate;                       /* requests per second; 0 = all at once */
    float slo_ttft_ms, slo_tpot_ms;
    ember_engine_opts eo;
    const char *draft;            /* --draft: a draft model for speculative decoding */
    ember_speculation spec;
    bool json;
} bench_args;

typedef struct req {
    double arrival_s;
    uint32_t *prompt, n_prompt, n_gen;
    double *token_ms;                  /* arrival of each token, for inter-token latency */
    uint32_t n_tokens;
    ember_request_metrics m;
    bool done;
    ember_finish why;
} req;

typedef struct workload {
    req *r;
    uint32_t n, completed;
    double t0;
    ember_speculation spec;
} workload;

/* --batching values and the JSON's "batching", indexed by ember_batching. */
static const char *const batching_name[] = {"continuous", "static", "static-ragged"};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- arguments ------------------------------------------------------------------------ */

static bool range(const char *flag, const char *v, long *lo, long *hi)
{
    char *end;
    *lo = strtol(v, &end, 10);
    *hi = *end == ':' ? strtol(end + 1, &end, 10) : *lo;
    if (*end || *lo < 1 || *hi < *lo) {
        fprintf(stderr, "ember bench: %s wants A:B with 1 <= A <= B, got '%s'\n", flag, v);
        return false;
    }
    return true;
}

static bool bench_flag(const char *f, const char *v, bench_args *a)
{
    long n;
    if (strcmp(f, "--requests") == 0) return cli_int(f, v, 1, 1 << 20, &a->requests);
    if (strcmp(f, "--rate") == 0) {
        float r;
        if (strcmp(v, "inf") == 0) return a->rate = 0, true;
        return cli_float(f, v, &r) && r > 0 && (a->rate = r, true);
    }
    if (strcmp(f, "--prompt-len") == 0) return range(f, v, &a->prompt_lo, &a->prompt_hi);
    if (strcmp(f, "--gen-len") == 0) return range(f, v, &a->gen_lo, &a->gen_hi);
    if (strcmp(f, "--shared-prefix") == 0) return cli_int(f, v, 0, 1 << 20, &a->shared_prefix);
    if (strcmp(f, "--seed") == 0) return cli_int(f, v, 0, 0x7fffffff, &a->seed);
    if (strcmp(f, "--slo-ttft-ms") == 0) return cli_float(f, v, &a->slo_ttft_ms);
    if (strcmp(f, "--slo-tpot-ms") == 0) return cli_float(f, v, &a->slo_tpot_ms);
    if (strcmp(f, "--batching") == 0) {
        for (int b = EMBER_BATCHING_CONTINUOUS; b <= EMBER_BATCHING_STATIC_RAGGED; b++)
            if (strcmp(v, batching_name[b]) == 0) return a->eo.batching = (ember_batching)b, true;
        return false;
    }
    if (strcmp(f, "--kv-type") == 0) return cli_kv_type(f, v, &a->eo.kv_type);
    int spec = cli_spec_flag(f, v, &a->spec, &a->draft);
    if (spec) return spec > 0;
    if (strcmp(f, "--kv") == 0) {
        a->eo.kv_layout = strcmp(v, "contiguous") == 0 ? EMBER_KV_CONTIGUOUS : EMBER_KV_PAGED;
        return strcmp(v, "contiguous") == 0 || strcmp(v, "paged") == 0;
    }
    uint32_t *u = strcmp(f, "--max-seqs") == 0 ? &a->eo.max_seqs
                : strcmp(f, "--max-batch-tokens") == 0 ? &a->eo.max_batch_tokens
                : strcmp(f, "--chunk-ctx") == 0 ? &a->eo.chunk_ctx
                : strcmp(f, "--kv-blocks") == 0 ? &a->eo.kv_blocks
                : strcmp(f, "--kv-block-size") == 0 ? &a->eo.kv_block_size
                : strcmp(f, "--kv-mem") == 0 ? &a->eo.kv_mem_mib : NULL;
    if (!u || !cli_int(f, v, 1, 1 << 24, &n)) {
        if (!u) fprintf(stderr, "ember bench: unknown option '%s'\n", f);
        return false;
    }
    *u = (uint32_t)n;
    return true;
}

static bool parse(int argc, char **argv, bench_args *a)
{
    *a = (bench_args){.requests = 48, .prompt_lo = 8, .prompt_hi = 200, .gen_lo = 8, .gen_hi = 160,
                      .seed = 1, .slo_ttft_ms = 5000, .slo_tpot_ms = 500};
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(argc, argv, &i, &a->model);
        const char *v;
        if (r < 0) return false;
        if (r > 0) continue;
        if (strcmp(argv[i], "--json") == 0) a->json = true;
        else if (strcmp(argv[i], "--no-prefix-cache") == 0) a->eo.no_prefix_cache = 1;
        else if (!(v = cli_value(argc, argv, &i)) || !bench_flag(argv[i - 1], v, a)) return false;
    }
    return true;
}

/* ---- the workload ------------------------------------------------------------------------ */

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static long uniform(uint64_t *s, long lo, long hi) { return lo + (long)(next_rand(s) % (uint64_t)(hi - lo + 1)); }

static bool make_workload(const bench_args *a, uint32_t n_vocab, workload *w)
{
    uint64_t s = (uint64_t)a->seed * 7919 + 1;
    w->n = (uint32_t)a->requests;
    if (!(w->r = calloc(w->n, sizeof *w->r))) return false;
    uint32_t *prefix = calloc((size_t)a->shared_prefix + 1, sizeof *prefix);
    if (!prefix) return false;
    for (long i = 0; i < a->shared_prefix; i++) prefix[i] = 3 + (uint32_t)(next_rand(&s) % (n_vocab - 3));
    double t = 0;
    for (uint32_t i = 0; i < w->n; i++) {
        req *r = &w->r[i];
        if (a->rate > 0) t += -log(1.0 - (next_rand(&s) >> 11) * (1.0 / 9007199254740992.0)) / a->rate;
        r->arrival_s = t;
        r->n_prompt = (uint32_t)(a->shared_prefix + uniform(&s, a->prompt_lo, a->prompt_hi));
        r->n_gen = (uint32_t)uniform(&s, a->gen_lo, a->gen_hi);
        r->prompt = malloc(r->n_prompt * sizeof *r->prompt);
        r->token_ms = malloc(r->n_gen * sizeof *r->token_ms);
        if (!r->prompt || !r->token_ms) return false;
        memcpy(r->prompt, prefix, a->shared_prefix * sizeof *prefix);
        for (uint32_t j = (uint32_t)a->shared_prefix; j < r->n_prompt; j++)
            r->prompt[j] = 3 + (uint32_t)(next_rand(&s) % (n_vocab - 3));
    }
    free(prefix);
    return true;
}

static void free_workload(workload *w)
{
    for (uint32_t i = 0; w->r && i < w->n; i++) free(w->r[i].prompt), free(w->r[i].token_ms);
    free(w->r);
}

static int on_token(void *user, ember_request_id id, uint32_t tok, const char *text, size_t len)
{
    req *r = user;
    if (r->n_tokens < r->n_gen) r->token_ms[r->n_tokens++] = now_ms();
    return 0;
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    req *r = user;
    r->m = *m;
    r->why = why;
    r->done = true;
}

static void progress(const workload *w, uint32_t submitted)
{
    if (!isatty(2)) return;
    int width = 40, filled = (int)((double)w->completed / w->n * width);
    fprintf(stderr, "\rbench [%.*s%*s] %u/%u done, %u submitted", filled, "########################################",
            width - filled, "", w->completed, w->n, submitted);
    if (w->completed == w->n) fputs("\r\033[K", stderr);
    fflush(stderr);
}

/* Submits arrivals as their time comes and steps the engine until all are done. */
static ember_status drive(ember_engine *e, workload *w)
{
    uint32_t next = 0;
    w->t0 = now_ms();
    while (w->completed < w->n) {
        double t = (now_ms() - w->t0) / 1e3;
        for (; next < w->n && w->r[next].arrival_s <= t; next++) {
            req *r = &w->r[next];
            ember_request_desc d = {.tokens = r->prompt, .n_tokens = r->n_prompt, .max_tokens = r->n_gen,
                                    .ignore_eos = 1, .on_token = on_token, .on_done = on_done, .user = r,
                                    .spec = w->spec};
            ember_status s = ember_submit(e, &d, NULL);
            if (s != EMBER_OK) return s;
        }
        ember_status s = ember_engine_step(e);
        if (s == EMBER_IDLE && next < w->n) {
            double wait = w->r[next].arrival_s - (now_ms() - w->t0) / 1e3;
            if (wait > 0) usleep((useconds_t)(wait * 1e6));
        } else if (s != EMBER_OK && s != EMBER_IDLE) {
            return s;
        }
        uint32_t done = 0;
        for (uint32_t i = 0; i < next; i++) done += w->r[i].done;
        if (done != w->completed || s == EMBER_OK) {
            w->completed = done;
            progress(w, next);
        }
    }
    return EMBER_OK;
}

/* ---- the report ------------------------------------------------------------------------- */

typedef struct pct {
    double p50, p90, p99;
} pct;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentiles; sorts v. */
static pct percentiles(double *v, size_t n)
{
    if (!n) return (pct){0, 0, 0};
    qsort(v, n, sizeof *v, cmp_double);
    double q[3] = {0.50, 0.90, 0.99}, r[3];
    for (int i = 0; i < 3; i++) {
        size_t k = (size_t)ceil(q[i] * (double)n);
        r[i] = v[k ? k - 1 : 0];
    }
    return (pct){r[0], r[1], r[2]};
}

static void print_pct(const char *name, pct p) { printf("\"%s\": {\"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f}, ", name, p.p50, p.p90, p.p99); }

static void report(const bench_args *a, workload *w, ember_engine *e, double duration_s)
{
    size_t n_itl = 0, out = 0, good = 0;
    for (uint32_t i = 0; i < w->n; i++) n_itl += w->r[i].n_tokens > 1 ? w->r[i].n_tokens - 1 : 0;
    double *ttft = calloc(w->n, sizeof *ttft), *tpot = calloc(w->n, sizeof *tpot);
    double *itl = calloc(n_itl + 1, sizeof *itl);
    if (!ttft || !tpot || !itl) goto done;
    size_t k = 0, n_tpot = 0;
    for (uint32_t i = 0; i < w->n; i++) {
        const req *r = &w->r[i];
        out += r->n_tokens;
        ttft[i] = r->m.ttft_ms;
        if (r->m.n_gen > 1) tpot[n_tpot++] = r->m.tpot_ms;
        for (uint32_t j = 1; j < r->n_tokens; j++) itl[k++] = r->token_ms[j] - r->token_ms[j - 1];
        good += r->why == EMBER_FINISH_LENGTH && r->m.ttft_ms <= a->slo_ttft_ms && r->m.tpot_ms <= a->slo_tpot_ms;
    }
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    double slots = (double)st.kv_peak_blocks_used * st.kv_block_size;
    double waste = slots > 0 ? 100.0 * (slots - (double)st.kv_peak_tokens) / slots : 0;
    printf("{\"requests\": %u, \"completed\": %u, \"output_tokens\": %zu, \"duration_s\": %.3f, "
           "\"throughput_tok_s\": %.3f, ", w->n, w->completed, out, duration_s, out / duration_s);
    print_pct("ttft_ms", percentiles(ttft, w->n));
    print_pct("tpot_ms", percentiles(tpot, n_tpot));
    print_pct("itl_ms", percentiles(itl, k));
    printf("\"goodput_req_s\": %.4f, \"slo\": {\"ttft_ms\": %.1f, \"tpot_ms\": %.1f}, ", good / duration_s,
           a->slo_ttft_ms, a->slo_tpot_ms);
    printf("\"kv\": {\"block_size\": %u, \"blocks_total\": %u, \"peak_blocks_used\": %u, \"waste_pct\": %.2f, "
           "\"type\": \"%s\", \"bytes_per_token\": %llu}, ",
           st.kv_block_size, st.kv_blocks_total, st.kv_peak_blocks_used, waste, cli_kv_type_name(st.kv_type),
           (unsigned long long)st.kv_bytes_per_token);
    uint64_t drafted = 0, accepted = 0;
    for (uint32_t i = 0; i < w->n; i++) drafted += w->r[i].m.n_drafted, accepted += w->r[i].m.n_accepted;
    if (a->spec.draft_k)
        printf("\"speculation\": {\"drafted\": %llu, \"accepted\": %llu, \"acceptance_rate\": %.4f}, ",
               (unsigned long long)drafted, (unsigned long long)accepted, drafted ? (double)accepted / drafted : 0.0);
    /* output_tokens counts only what requests received; tokens_computed every row of every
     * step (prompts, decodes, recomputation after preemption, padding); padding_tokens the
     * rows static batching computed for its fixed shape (padded prompts, finished members). */
    printf("\"prefix_hit_tokens\": %llu, \"cow_copies\": %llu, \"preemptions\": %llu, \"steps\": %llu, "
           "\"tokens_computed\": %llu, \"padding_tokens\": %llu, \"batching\": \"%s\", \"kv_layout\": \"%s\"}\n",
           (unsigned long long)st.prefix_hit_tokens, (unsigned long long)st.cow_copies,
           (unsigned long long)st.preemptions, (unsigned long long)st.steps,
           (unsigned long long)st.tokens_computed, (unsigned long long)st.padding_tokens,
           batching_name[a->eo.batching],
           a->eo.kv_layout == EMBER_KV_CONTIGUOUS ? "contiguous" : "paged");
done:
    free(ttft);
    free(tpot);
    free(itl);
}

static int run(ember_model *m, ember_model *draft, const bench_args *a)
{
    ember_model_info info;
    ember_model_get_info(m, &info);
    workload w = {.spec = a->spec};
    ember_engine *e = NULL;
    ember_engine_opts eo = a->eo;
    eo.draft = draft;
    ember_status s = make_workload(a, info.n_vocab, &w) ? ember_engine_create(m, &eo, &e) : EMBER_ERR_OUT_OF_MEMORY;
    if (s == EMBER_OK) s = drive(e, &w);
    int code = 0;
    if (s != EMBER_OK) {
        fprintf(stderr, "ember: %s\n", e ? ember_engine_error(e) : "out of memory");
        code = 1;
    } else {
        report(a, &w, e, (now_ms() - w.t0) / 1e3);
    }
    ember_engine_destroy(e);
    free_workload(&w);
    return code;
}

int ember_cmd_bench(int argc, char **argv)
{
    bench_args a;
    if (!parse(argc, argv, &a)) {
        fprintf(stderr,
                "usage: ember bench -m MODEL.gguf [--requests N] [--rate R|inf] [--prompt-len A:B] [--gen-len A:B]\n"
                "                   [--shared-prefix L] [--max-seqs S] [--max-batch-tokens T] [--chunk-ctx C]\n"
                "                   [--kv-blocks K] [--kv-block-size B] [--kv-mem MIB]\n"
                "                   [--batching continuous|static|static-ragged]\n"
                "                   [--kv paged|contiguous] [--kv-type f32|q8_0] [--no-prefix-cache] [--seed S]\n"
                "                   [--slo-ttft-ms X] [--slo-tpot-ms Y]\n"
                "                   [--draft M2 --draft-k K | --ngram N] [--json]\n");
        return 2;
    }
    ember_model *draft, *m = cli_load_with_draft(&a.model, a.draft, &draft);
    return m ? cli_free_with_draft(m, draft, run(m, draft, &a)) : 1;
}
