/* cmd_bench.c — `ember bench`: a seeded synthetic serving workload (Poisson arrivals,
 * random prompt and output lengths, an optional shared prefix) run through one engine,
 * reporting throughput, latency percentiles (TTFT, TPOT, ITL), goodput under SLOs and KV
 * cache use. --batching static and --kv contiguous run the baselines it is compared to
 * (static: fixed-shape batches, prompts padded to the longest and finished members
 * computing on as padding rows, reported as padding_tokens and not counted in
 * output_tokens or throughput; static-ragged: the same without padded prompts).
 * --url sends the same workload to a running server instead (`ember serve` or any
 * OpenAI-compatible one) as streamed /v1/completions requests: bench_http.c.
 * --disaggregate prefills on one engine and decodes on another (each on its worker
 * thread), the prompt's KV handed over as a KV state (docs/state.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_http.h"
#include "cli.h"
#include "commands.h"
#include "platform/os_file.h"
#include "platform/os_thread.h"

typedef struct bench_args {
    cli_model_args model;
    long requests, prompt_lo, prompt_hi, gen_lo, gen_hi, shared_prefix, seed;
    double rate;                       /* requests per second; 0 = all at once */
    float slo_ttft_ms, slo_tpot_ms;
    ember_engine_opts eo;
    const char *draft;            /* --draft: a draft model for speculative decoding */
    ember_speculation spec;
    long concurrency;             /* most requests submitted and unfinished; 0 = no limit */
    const char *url, *api_key;    /* --url: a server to drive instead of an engine */
    long vocab;                   /* --url: prompt token ids are drawn below this */
    const char *engine_flag;      /* the first engine option given, refused with --url */
    ember_sampling sampling;      /* --temp, --top-k, ...: every request's (greedy by default) */
    ember_logit_bias bias[CLI_MAX_BIAS];
    const char *sampling_flag;    /* the first sampling option given, refused with --url */
    bool disaggregate;            /* prefill engine -> KV state -> decode engine */
    long prefill_device;          /* --prefill-device N: N + 1 (a device_index); 0 = automatic */
    bool json, help;
} bench_args;

typedef struct req {
    double arrival_s;
    uint32_t *prompt, n_prompt, n_gen;
    double *token_ms;                  /* arrival of each token, for inter-token latency */
    uint32_t n_tokens;
    ember_request_metrics m;
    bool done;
    ember_finish why;
    double t_submit;                   /* --disaggregate: when it went to the prefill engine */
    ember_request_desc decode;         /* --disaggregate: what goes to the decode engine */
    ember_engine *decoder;
} req;

typedef struct workload {
    req *r;
    uint32_t n, completed;
    uint32_t concurrency;              /* most submitted and unfinished; 0 = no limit */
    double t0;
    ember_speculation spec;
    ember_sampling sampling;           /* request i samples with seed sampling.seed + i */
    const char *prefill_on, *decode_on; /* --disaggregate: the engines' devices */
} workload;

/* --batching values and the JSON's "batching", indexed by ember_batching. */
static const char *const batching_name[] = {"continuous", "static", "static-ragged"};

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

/* Options of the engine the in-process bench creates (a server has its own). */
static bool engine_flag(const char *f, const char *v, bench_args *a)
{
    long n;
    a->engine_flag = a->engine_flag ? a->engine_flag : f;
    if (strcmp(f, "--batching") == 0) {
        for (int b = EMBER_BATCHING_CONTINUOUS; b <= EMBER_BATCHING_STATIC_RAGGED; b++)
            if (strcmp(v, batching_name[b]) == 0) return a->eo.batching = (ember_batching)b, true;
        fprintf(stderr, "ember bench: --batching is continuous, static or static-ragged, got '%s'\n", v);
        return false;
    }
    if (strcmp(f, "--kv-type") == 0) return cli_kv_type(f, v, &a->eo.kv_type);
    if (strcmp(f, "--prefill-device") == 0) return cli_int(f, v, 0, 63, &a->prefill_device) && ++a->prefill_device;
    if (strcmp(f, "--sample-from") == 0) return cli_sample_from(f, v, &a->eo.sample_from);
    int spec = cli_spec_flag(f, v, &a->spec, &a->draft);
    if (spec) return spec > 0;
    if (strcmp(f, "--kv") == 0) {
        a->eo.kv_layout = strcmp(v, "contiguous") == 0 ? EMBER_KV_CONTIGUOUS : EMBER_KV_PAGED;
        if (strcmp(v, "contiguous") == 0 || strcmp(v, "paged") == 0) return true;
        fprintf(stderr, "ember bench: --kv is paged or contiguous, got '%s'\n", v);
        return false;
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

/* Options of the workload and of how it is sent: the same with and without --url. */
static bool bench_flag(const char *f, const char *v, bench_args *a)
{
    if (strcmp(f, "--requests") == 0) return cli_int(f, v, 1, 1 << 20, &a->requests);
    if (strcmp(f, "--rate") == 0) {
        float r;
        if (strcmp(v, "inf") == 0) return a->rate = 0, true;
        if (!cli_float(f, v, &r)) return false;
        if (!(r > 0)) fprintf(stderr, "ember bench: --rate is requests per second above 0, or inf; got '%s'\n", v);
        return r > 0 && (a->rate = r, true);
    }
    if (strcmp(f, "--prompt-len") == 0) return range(f, v, &a->prompt_lo, &a->prompt_hi);
    if (strcmp(f, "--gen-len") == 0) return range(f, v, &a->gen_lo, &a->gen_hi);
    if (strcmp(f, "--shared-prefix") == 0) return cli_int(f, v, 0, 1 << 20, &a->shared_prefix);
    if (strcmp(f, "--seed") == 0) return cli_int(f, v, 0, 0x7fffffff, &a->seed);
    if (strcmp(f, "--slo-ttft-ms") == 0) return cli_float(f, v, &a->slo_ttft_ms);
    if (strcmp(f, "--slo-tpot-ms") == 0) return cli_float(f, v, &a->slo_tpot_ms);
    if (strcmp(f, "--concurrency") == 0) return cli_int(f, v, 1, 1 << 20, &a->concurrency);
    if (strcmp(f, "--url") == 0) return a->url = v, true;
    if (strcmp(f, "--api-key") == 0) return a->api_key = v, true;
    if (strcmp(f, "--vocab") == 0) return cli_int(f, v, 4, 1 << 24, &a->vocab);
    return engine_flag(f, v, a);
}

/* With --url the engine is the server's, and without it there is no server to talk to. */
static bool consistent(const bench_args *a, bool vocab_given)
{
    if (a->url && a->sampling_flag)
        fprintf(stderr, "ember bench: %s samples in the in-process engine; with --url the requests are greedy\n",
                a->sampling_flag);
    else if (a->url && a->engine_flag)
        fprintf(stderr, "ember bench: %s configures the in-process engine; with --url it is the server's "
                        "(give it to ember serve)\n", a->engine_flag);
    else if (!a->url && (a->api_key || vocab_given))
        fprintf(stderr, "ember bench: %s goes with --url\n", a->api_key ? "--api-key" : "--vocab");
    else if (a->prefill_device && !a->disaggregate)
        fprintf(stderr, "ember bench: --prefill-device goes with --disaggregate\n");
    else if (a->disaggregate && a->draft)
        fprintf(stderr, "ember bench: --disaggregate hands KV over without a draft model's: use --ngram\n");
    else if (!a->url && !a->model.path)
        fprintf(stderr, "ember bench: -m MODEL.gguf (or --url URL) is required\n");
    else
        return true;
    return false;
}

/* The options that take a value, besides the model's and speculation's. */
static const char *const value_flags[] = {"--requests", "--rate", "--prompt-len", "--gen-len", "--shared-prefix",
    "--seed", "--slo-ttft-ms", "--slo-tpot-ms", "--concurrency", "--url", "--api-key", "--vocab", "--batching",
    "--kv-type", "--kv", "--max-seqs", "--max-batch-tokens", "--chunk-ctx", "--kv-blocks", "--kv-block-size",
    "--kv-mem", "--sample-from", "--prefill-device", NULL};

static bool parse(int argc, char **argv, bench_args *a)
{
    *a = (bench_args){.requests = 48, .prompt_lo = 8, .prompt_hi = 200, .gen_lo = 8, .gen_hi = 160,
                      .seed = 1, .slo_ttft_ms = 5000, .slo_tpot_ms = 500};
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(argc, argv, &i, &a->model);
        const char *v;
        if (r < 0) return false;
        if (r > 0) continue;
        if (cli_is_help(argv[i])) return a->help = true;
        if (strcmp(argv[i], "--json") == 0) a->json = true;
        else if (strcmp(argv[i], "--no-prefix-cache") == 0) a->eo.no_prefix_cache = 1, a->engine_flag = argv[i];
        else if (strcmp(argv[i], "--profile") == 0) a->eo.profile = 1, a->engine_flag = argv[i];
        else if (strcmp(argv[i], "--disaggregate") == 0) a->disaggregate = true, a->engine_flag = argv[i];
        else if (cli_flag_in(argv[i], cli_sampling_flags) && strcmp(argv[i], "--seed") != 0) {
            int matched;
            if (!(v = cli_value(argc, argv, &i)) || !cli_sampling_flag(argv[i - 1], v, &a->sampling, a->bias, &matched))
                return false;
            a->sampling_flag = argv[i - 1];
        } else if (!cli_flag_in(argv[i], value_flags) && !cli_flag_in(argv[i], cli_spec_flags))
            return cli_unknown("bench", argv[i]), false;
        else if (!(v = cli_value(argc, argv, &i)) || !bench_flag(argv[i - 1], v, a)) return false;
    }
    /* --url without --vocab: the vocabulary the server reports (vocab_size in
     * /v1/models; run_url), so the prompts are the in-process bench's very tokens. */
    return consistent(a, a->vocab != 0);
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
    if (r->n_tokens < r->n_gen) r->token_ms[r->n_tokens++] = ember_now_ms();
    return 0;
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    req *r = user;
    r->m = *m;
    r->why = why;
    __atomic_store_n(&r->done, true, __ATOMIC_RELEASE); /* read by another thread with --disaggregate */
}

static void progress(const workload *w, uint32_t submitted)
{
    if (!ember_is_terminal(stderr)) return;
    int width = 40, filled = (int)((double)w->completed / w->n * width);
    fprintf(stderr, "\rbench [%.*s%*s] %u/%u done, %u submitted", filled, "########################################",
            width - filled, "", w->completed, w->n, submitted);
    if (w->completed == w->n) fputs("\r\033[K", stderr);
    fflush(stderr);
}

/* Whether --concurrency lets one more request in, next having been submitted. */
static bool has_room(const workload *w, uint32_t next)
{
    return !w->concurrency || next - w->completed < w->concurrency;
}

/* Submits arrivals as their time comes (or, under --concurrency, once an earlier request
 * finished) and steps the engine until all are done. */
static ember_status drive(ember_engine *e, workload *w)
{
    uint32_t next = 0;
    w->t0 = ember_now_ms();
    while (w->completed < w->n) {
        double t = (ember_now_ms() - w->t0) / 1e3;
        for (; next < w->n && w->r[next].arrival_s <= t && has_room(w, next); next++) {
            req *r = &w->r[next];
            ember_request_desc d = {.tokens = r->prompt, .n_tokens = r->n_prompt, .max_tokens = r->n_gen,
                                    .ignore_eos = 1, .on_token = on_token, .on_done = on_done, .user = r,
                                    .spec = w->spec, .sampling = w->sampling};
            d.sampling.seed += next;
            ember_status s = ember_submit(e, &d, NULL);
            if (s != EMBER_OK) return s;
        }
        ember_status s = ember_engine_step(e);
        if (s == EMBER_IDLE && next < w->n) {
            double wait = w->r[next].arrival_s - (ember_now_ms() - w->t0) / 1e3;
            ember_sleep_ms(wait * 1e3);
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

/* ---- prefill on one engine, decode on another (--disaggregate) --------------------------- */

/* The prefill engine's state callback (its worker thread): the request goes on to the
 * decode engine with the KV state (copied by ember_submit). */
static void hand_over(void *user, ember_request_id id, const void *state, size_t len)
{
    req *r = user;
    ember_request_desc d = r->decode;
    d.state = state, d.state_len = len;
    if (ember_submit(r->decoder, &d, NULL) != EMBER_OK) r->why = EMBER_FINISH_ERROR, r->done = true;
}

static void prefill_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    req *r = user;
    if (why == EMBER_FINISH_ERROR || why == EMBER_FINISH_CANCELLED) r->why = EMBER_FINISH_ERROR, r->done = true;
}

/* The device (a device_index) for the prefill engine's model, or 0 for the decode
 * engine's own: --prefill-device, else a usable GPU other than the one m is on (a discrete
 * one first; never a software one), so that prompts and decoding run side by side. */
static int prefill_device(const bench_args *a, const ember_model *m)
{
    enum { MAX_DEVICES = 16 };
    if (a->prefill_device) return (int)a->prefill_device;
    ember_model_info info;
    ember_model_get_info(m, &info);
    ember_device_info *devs = info.device_index ? calloc(MAX_DEVICES, sizeof *devs) : NULL;
    size_t n = 0;
    if (devs && ember_list_devices(devs, MAX_DEVICES, &n, NULL, 0) != EMBER_OK) n = 0;
    int pick = 0;
    for (size_t i = 0; i < n && i < MAX_DEVICES; i++) {
        const ember_device_info *d = &devs[i];
        bool usable = d->type != EMBER_DEVICE_CPU && (d->api_major > 1 || d->api_minor >= 2);
        if ((int)i + 1 == info.device_index || !usable) continue;
        if (!pick || (d->type == EMBER_DEVICE_DISCRETE && devs[pick - 1].type != EMBER_DEVICE_DISCRETE))
            pick = (int)i + 1;
    }
    if (devs) ember_free_devices(devs, n < MAX_DEVICES ? n : MAX_DEVICES);
    free(devs);
    return pick;
}

/* Submits arrivals to the prefill engine p as their time comes; both engines run on
 * their own worker threads (on two devices, side by side). */
static ember_status drive_split(ember_engine *p, ember_engine *d, workload *w)
{
    ember_status s = ember_engine_start(p);
    if (s == EMBER_OK) s = ember_engine_start(d);
    uint32_t next = 0;
    w->t0 = ember_now_ms();
    while (s == EMBER_OK && w->completed < w->n) {
        double t = (ember_now_ms() - w->t0) / 1e3;
        for (; s == EMBER_OK && next < w->n && w->r[next].arrival_s <= t && has_room(w, next); next++) {
            req *r = &w->r[next];
            r->decode = (ember_request_desc){.tokens = r->prompt, .n_tokens = r->n_prompt, .max_tokens = r->n_gen,
                                             .ignore_eos = 1, .on_token = on_token, .on_done = on_done, .user = r,
                                             .spec = w->spec, .sampling = w->sampling};
            r->decode.sampling.seed += next;
            r->decoder = d;
            ember_request_desc pd = {.tokens = r->prompt, .n_tokens = r->n_prompt, .prompt_only = 1,
                                     .on_state = hand_over, .on_done = prefill_done, .user = r};
            r->t_submit = ember_now_ms();
            s = ember_submit(p, &pd, NULL);
        }
        ember_sleep_ms(1);
        uint32_t done = 0;
        for (uint32_t i = 0; i < next; i++) done += __atomic_load_n(&w->r[i].done, __ATOMIC_ACQUIRE);
        if (done != w->completed) w->completed = done, progress(w, next);
    }
    ember_engine_stop(p);
    ember_engine_stop(d);
    return s;
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

/* One request as either mode measured it. */
typedef struct outcome {
    bool done;             /* in-process: finished; --url: a whole 200 stream */
    bool length;           /* ran to its max tokens or the context (--url cannot tell them
                              apart: both are "length"): with ignore_eos, the only good end */
    uint32_t n_tokens;
    double ttft_ms, tpot_ms;
    const double *times;   /* arrival of each token (in-process) or text event (--url) */
    uint32_t n_times;
} outcome;

typedef struct summary {
    uint32_t requests, completed;
    size_t out, good;
    double duration_s;
    pct ttft, tpot, itl;
} summary;

/* Counts and latency percentiles over the completed requests of o[0..n). */
static bool summarize(const bench_args *a, const outcome *o, uint32_t n, double duration_s, summary *s)
{
    size_t n_itl = 0, n_ttft = 0, n_tpot = 0, k = 0;
    for (uint32_t i = 0; i < n; i++) n_itl += o[i].n_times > 1 ? o[i].n_times - 1 : 0;
    double *ttft = malloc((n + 1) * sizeof *ttft), *tpot = malloc((n + 1) * sizeof *tpot);
    double *itl = malloc((n_itl + 1) * sizeof *itl);
    bool ok = ttft && tpot && itl;
    *s = (summary){.requests = n, .duration_s = duration_s};
    for (uint32_t i = 0; ok && i < n; i++) {
        const outcome *r = &o[i];
        if (!r->done) continue;
        s->completed++;
        s->out += r->n_tokens;
        ttft[n_ttft++] = r->ttft_ms;
        if (r->n_tokens > 1) tpot[n_tpot++] = r->tpot_ms;
        for (uint32_t j = 1; j < r->n_times; j++) itl[k++] = r->times[j] - r->times[j - 1];
        s->good += r->length && r->ttft_ms <= a->slo_ttft_ms && r->tpot_ms <= a->slo_tpot_ms;
    }
    if (ok) s->ttft = percentiles(ttft, n_ttft), s->tpot = percentiles(tpot, n_tpot), s->itl = percentiles(itl, k);
    else fprintf(stderr, "ember bench: out of memory\n");
    free(ttft);
    free(tpot);
    free(itl);
    return ok;
}

static void print_pct(const char *name, pct p) { printf("\"%s\": {\"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f}, ", name, p.p50, p.p90, p.p99); }

/* The keys both modes report, up to the mode's own; the object stays open. */
static void summary_json(const bench_args *a, const summary *s)
{
    printf("{\"requests\": %u, \"completed\": %u, \"output_tokens\": %zu, \"duration_s\": %.3f, "
           "\"throughput_tok_s\": %.3f, ", s->requests, s->completed, s->out, s->duration_s, s->out / s->duration_s);
    print_pct("ttft_ms", s->ttft);
    print_pct("tpot_ms", s->tpot);
    print_pct("itl_ms", s->itl);
    printf("\"goodput_req_s\": %.4f, \"slo\": {\"ttft_ms\": %.1f, \"tpot_ms\": %.1f}, ", s->good / s->duration_s,
           a->slo_ttft_ms, a->slo_tpot_ms);
    if (a->concurrency) printf("\"concurrency\": %ld, ", a->concurrency);
    else printf("\"concurrency\": null, ");
}

static void pct_text(const char *name, pct p) { printf("%-13s p50 %9.2f   p90 %9.2f   p99 %9.2f\n", name, p.p50, p.p90, p.p99); }

/* The same for people: latency lines, then goodput. itl_name says what ITL is between. */
static void summary_text(const bench_args *a, const summary *s, uint32_t failed, const char *itl_name)
{
    printf("requests      %u: %u completed", s->requests, s->completed);
    if (a->url) printf(", %u failed", failed);
    printf(" in %.2f s, ", s->duration_s);
    if (a->concurrency) printf("at most %ld at a time\n", a->concurrency);
    else printf("as they arrived\n");
    printf("output        %zu tokens, %.1f tok/s\n", s->out, s->out / s->duration_s);
    pct_text("TTFT ms", s->ttft);
    pct_text("TPOT ms", s->tpot);
    pct_text(itl_name, s->itl);
    printf("goodput       %.3f req/s: %zu of %u requests within TTFT %g ms and TPOT %g ms\n", s->good / s->duration_s,
           s->good, s->requests, a->slo_ttft_ms, a->slo_tpot_ms);
}

/* ---- the in-process report -------------------------------------------------------------- */

static void spec_counts(const workload *w, uint64_t *drafted, uint64_t *accepted)
{
    *drafted = *accepted = 0;
    for (uint32_t i = 0; i < w->n; i++) *drafted += w->r[i].m.n_drafted, *accepted += w->r[i].m.n_accepted;
}

static double kv_waste_pct(const ember_engine_stats *st)
{
    double slots = (double)st->kv_peak_blocks_used * st->kv_block_size;
    return slots > 0 ? 100.0 * (slots - (double)st->kv_peak_tokens) / slots : 0;
}

static void engine_json(const bench_args *a, const workload *w, const ember_engine_stats *st)
{
    printf("\"kv\": {\"block_size\": %u, \"blocks_total\": %u, \"peak_blocks_used\": %u, \"waste_pct\": %.2f, "
           "\"type\": \"%s\", \"bytes_per_token\": %llu}, ",
           st->kv_block_size, st->kv_blocks_total, st->kv_peak_blocks_used, kv_waste_pct(st),
           cli_kv_type_name(st->kv_type), (unsigned long long)st->kv_bytes_per_token);
    uint64_t drafted, accepted;
    spec_counts(w, &drafted, &accepted);
    if (a->spec.draft_k)
        printf("\"speculation\": {\"drafted\": %llu, \"accepted\": %llu, \"acceptance_rate\": %.4f}, ",
               (unsigned long long)drafted, (unsigned long long)accepted, drafted ? (double)accepted / drafted : 0.0);
    /* output_tokens counts only what requests received; tokens_computed every row of every
     * step (prompts, decodes, recomputation after preemption, padding); padding_tokens the
     * rows static batching computed for its fixed shape (padded prompts, finished members). */
    printf("\"prefix_hit_tokens\": %llu, \"cow_copies\": %llu, \"preemptions\": %llu, \"steps\": %llu, "
           "\"tokens_computed\": %llu, \"padding_tokens\": %llu, \"batching\": \"%s\", \"kv_layout\": \"%s\"",
           (unsigned long long)st->prefix_hit_tokens, (unsigned long long)st->cow_copies,
           (unsigned long long)st->preemptions, (unsigned long long)st->steps,
           (unsigned long long)st->tokens_computed, (unsigned long long)st->padding_tokens,
           batching_name[a->eo.batching], a->eo.kv_layout == EMBER_KV_CONTIGUOUS ? "contiguous" : "paged");
    printf(", \"disaggregated\": %s", a->disaggregate ? "true" : "false");
    if (a->disaggregate) {
        printf(", \"prefill_device\": ");
        cli_json_string(stdout, w->prefill_on, strlen(w->prefill_on));
        printf(", \"decode_device\": ");
        cli_json_string(stdout, w->decode_on, strlen(w->decode_on));
    }
}

static void engine_text(const bench_args *a, const workload *w, const ember_engine_stats *st)
{
    printf("kv cache      peak %u of %u blocks of %u tokens, %.1f%% waste, %s (%llu bytes a token), %s\n",
           st->kv_peak_blocks_used, st->kv_blocks_total, st->kv_block_size, kv_waste_pct(st),
           cli_kv_type_name(st->kv_type), (unsigned long long)st->kv_bytes_per_token,
           a->eo.kv_layout == EMBER_KV_CONTIGUOUS ? "contiguous" : "paged");
    printf("engine        %s batching, %llu steps, %llu rows computed (%llu padding), %llu preemptions\n",
           batching_name[a->eo.batching], (unsigned long long)st->steps, (unsigned long long)st->tokens_computed,
           (unsigned long long)st->padding_tokens, (unsigned long long)st->preemptions);
    printf("prefix cache  %llu prompt tokens from the cache, %llu copies on write\n",
           (unsigned long long)st->prefix_hit_tokens, (unsigned long long)st->cow_copies);
    if (a->disaggregate) printf("split         prefill on %s, decode on %s\n", w->prefill_on, w->decode_on);
    uint64_t drafted, accepted;
    spec_counts(w, &drafted, &accepted);
    if (a->spec.draft_k)
        printf("speculation   %llu drafted, %llu accepted (%.1f%%)\n", (unsigned long long)drafted,
               (unsigned long long)accepted, drafted ? 100.0 * accepted / drafted : 0.0);
}

static bool report(const bench_args *a, workload *w, ember_engine *e, double duration_s)
{
    outcome *o = calloc(w->n, sizeof *o);
    summary s;
    if (!o) fprintf(stderr, "ember bench: out of memory\n");
    for (uint32_t i = 0; o && i < w->n; i++) {
        const req *r = &w->r[i];
        o[i] = (outcome){.done = r->done && r->why != EMBER_FINISH_ERROR,
                         .length = r->why == EMBER_FINISH_LENGTH || r->why == EMBER_FINISH_CONTEXT,
                         .n_tokens = r->n_tokens, .ttft_ms = r->m.ttft_ms, .tpot_ms = r->m.tpot_ms,
                         .times = r->token_ms, .n_times = r->n_tokens};
        if (a->disaggregate && r->n_tokens) o[i].ttft_ms = r->token_ms[0] - r->t_submit; /* through both engines */
    }
    bool ok = o && summarize(a, o, w->n, duration_s, &s);
    free(o);
    if (!ok) return false;
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    ember_profile *prof = a->eo.profile ? malloc(sizeof *prof) : NULL;
    if (prof && ember_engine_get_profile(e, prof) != EMBER_OK) free(prof), prof = NULL;
    if (a->json) {
        summary_json(a, &s), engine_json(a, w, &st);
        if (prof) printf(", \"profile\": "), cli_profile_json(stdout, prof);
        printf("}\n");
    } else {
        summary_text(a, &s, 0, "ITL ms"), engine_text(a, w, &st);
        if (prof) cli_profile_text(stdout, prof);
    }
    free(prof);
    return true;
}

static int run(ember_model *m, ember_model *draft, const bench_args *a)
{
    ember_model_info info;
    ember_model_get_info(m, &info);
    workload w = {.spec = a->spec, .concurrency = (uint32_t)a->concurrency, .sampling = a->sampling};
    w.sampling.seed = (uint64_t)a->seed * 1000003u;
    ember_engine *e = NULL;
    ember_engine_opts eo = a->eo;
    eo.draft = draft;
    ember_engine *pre = NULL; /* --disaggregate: the prefill engine; e decodes */
    ember_model *pm = m;      /* the prefill engine's model: m's, or one on a device of its own */
    int dev = a->disaggregate ? prefill_device(a, m) : 0;
    if (dev) {
        cli_model_args pa = a->model;
        pa.device = dev, pa.role = "prefill model", pa.device_flag = "--prefill-device";
        if (!(pm = cli_load_model(&pa))) return 1;
    }
    ember_model_info pinfo;
    ember_model_get_info(pm, &pinfo);
    w.prefill_on = pinfo.device_name, w.decode_on = info.device_name;
    ember_status s = make_workload(a, info.n_vocab, &w) ? ember_engine_create(m, &eo, &e) : EMBER_ERR_OUT_OF_MEMORY;
    if (s == EMBER_OK && a->disaggregate) s = ember_engine_create(pm, &eo, &pre);
    if (s == EMBER_OK) s = a->disaggregate ? drive_split(pre, e, &w) : drive(e, &w);
    int code = 0;
    if (s != EMBER_OK) {
        ember_engine *failed = pre && ember_engine_error(pre)[0] ? pre : e;
        fprintf(stderr, "ember: %s\n", failed ? ember_engine_error(failed) : "out of memory");
        code = 1;
    } else if (!report(a, &w, e, (ember_now_ms() - w.t0) / 1e3)) {
        code = 1;
    }
    ember_engine_destroy(pre);
    ember_engine_destroy(e);
    free_workload(&w);
    return pm != m ? cli_free_model(pm, code) : code;
}

/* ---- against a server (--url) ------------------------------------------------------------ */

static void http_progress(void *user, uint32_t done, uint32_t sent)
{
    workload *w = user;
    w->completed = done;
    progress(w, sent);
}

/* A request as the server answered it; TPOT from the first and last text events over
 * the tokens the usage event counts, as a chunk may carry several tokens. */
static outcome http_outcome(const bench_http_req *r)
{
    uint32_t n = r->ok ? r->n_tokens : 0, c = r->n_chunks;
    double first = c ? r->chunk_ms[0] : r->end_ms; /* no text at all: the answer came at the end */
    return (outcome){.done = r->ok, .length = r->length, .n_tokens = n, .ttft_ms = first - r->send_ms,
                     .tpot_ms = n > 1 && c ? (r->chunk_ms[c - 1] - first) / (n - 1) : 0, .times = r->chunk_ms,
                     .n_times = r->ok ? c : 0};
}

/* Says on stderr how many requests failed, and the first one's reason. */
static uint32_t count_failed(const bench_http_req *r, uint32_t n)
{
    uint32_t failed = 0, first = 0;
    for (uint32_t i = n; i-- > 0;)
        if (!r[i].ok) failed++, first = i;
    if (failed)
        fprintf(stderr, "ember bench: %u of %u requests failed; request %u: %s\n", failed, n, first,
                r[first].error);
    return failed;
}

static bool report_url(const bench_args *a, const bench_http_opts *o, const bench_http_req *r, uint32_t n,
                       double duration_s)
{
    outcome *oc = calloc(n, sizeof *oc);
    summary s;
    for (uint32_t i = 0; oc && i < n; i++) oc[i] = http_outcome(&r[i]);
    bool ok = oc && summarize(a, oc, n, duration_s, &s);
    free(oc);
    if (!ok) return false;
    uint32_t failed = count_failed(r, n);
    size_t events = 0; /* ITL is between these: as many as tokens unless chunks held several */
    for (uint32_t i = 0; i < n; i++) events += r[i].ok ? r[i].n_chunks : 0;
    if (a->json) {
        summary_json(a, &s);
        printf("\"failed\": %u, \"text_events\": %zu, \"url\": ", failed, events);
        cli_json_string(stdout, a->url, strlen(a->url));
        printf(", \"model\": ");
        cli_json_string(stdout, o->model, strlen(o->model));
        printf("}\n");
    } else {
        summary_text(a, &s, failed, "ITL ms/event");
        printf("server        %s, model %s, %zu text events for %zu tokens\n", a->url, o->model, events, s.out);
    }
    return s.completed > 0;
}

/* Sends the workload, made as for the in-process bench, to the server at a->url. */
static int run_url(const bench_args *a)
{
    workload w = {0};
    bench_http_opts o = {.url = a->url, .api_key = a->api_key, .model = a->model.path,
                         .concurrency = (uint32_t)a->concurrency, .progress = http_progress, .progress_user = &w};
    uint32_t server_vocab = 0;
    char *model = bench_http_pick_model(&o, &server_vocab);
    bench_http_req *r = NULL;
    double duration_s = 0;
    int code = 1;
    o.model = model;
    /* A server that does not say its vocabulary: ids below 256, which byte-level and
     * byte-fallback tokenizers all have. Lengths and arrivals do not depend on it. */
    uint32_t vocab = a->vocab ? (uint32_t)a->vocab : server_vocab ? server_vocab : 256;
    if (model && (!make_workload(a, vocab, &w) || !(r = calloc(w.n, sizeof *r))))
        fprintf(stderr, "ember bench: out of memory\n");
    for (uint32_t i = 0; r && i < w.n; i++)
        r[i] = (bench_http_req){.arrival_s = w.r[i].arrival_s, .prompt = w.r[i].prompt,
                                .n_prompt = w.r[i].n_prompt, .n_gen = w.r[i].n_gen};
    if (r && bench_http_run(&o, r, w.n, &duration_s) && report_url(a, &o, r, w.n, duration_s)) code = 0;
    bench_http_free(r, w.n);
    free(r);
    free(model);
    free_workload(&w);
    return code;
}

static int usage(FILE *out, int code)
{
    fprintf(out,
                "usage: ember bench -m MODEL.gguf [--requests N] [--rate R|inf] [--prompt-len A:B] [--gen-len A:B]\n"
                "                   [--shared-prefix L] [--concurrency N] [--max-seqs S] [--max-batch-tokens T]\n"
                "                   [--chunk-ctx C] [--kv-blocks K] [--kv-block-size B] [--kv-mem MIB]\n"
                "                   [--batching continuous|static|static-ragged]\n"
                "                   [--kv paged|contiguous] [--kv-type f32|f16|q8_0] [--no-prefix-cache] [--seed S]\n"
                "                   [--slo-ttft-ms X] [--slo-tpot-ms Y]\n"
                "                   [--draft M2 --draft-k K | --ngram N] [--profile] [--json]\n"
                "                   [--disaggregate [--prefill-device N]: prompts on one engine, decoding on\n"
                "                    another; the prefill engine on device N, by default another GPU if any]\n"
                "                   [--temp T --top-k K --top-p P --min-p P ...: every request samples so,\n"
                "                    seeded from --seed; greedy by default] [--sample-from auto|candidates|rows]\n"
                "       ember bench --url http://HOST:PORT [--model NAME] [--api-key KEY] [--vocab V]\n"
                "                   [the workload flags: --requests ... --concurrency N --slo-tpot-ms Y] [--json]\n"
                "                   drives a running server (ember serve) with the same workload\n");
    return code;
}

int ember_cmd_bench(int argc, char **argv)
{
    bench_args a;
    if (!parse(argc, argv, &a)) return usage(stderr, CLI_USAGE);
    if (a.help) return usage(stdout, CLI_OK);
    if (a.url) return run_url(&a);
    ember_model *draft, *m = cli_load_with_draft(&a.model, a.draft, &draft);
    return m ? cli_free_with_draft(m, draft, run(m, draft, &a)) : 1;
}
