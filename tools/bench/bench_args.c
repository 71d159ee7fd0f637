/* bench_args.c — `ember bench`'s options (bench_args.h). */
#include "bench_args.h"

#include <stdlib.h>
#include <string.h>

/* --batching values, indexed by ember_batching. */
static const char *const batching_names[] = {"continuous", "static", "static-ragged"};

const char *bench_batching_name(ember_batching b) { return batching_names[b]; }

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
            if (strcmp(v, batching_names[b]) == 0) return a->eo.batching = (ember_batching)b, true;
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

bool bench_parse(int argc, char **argv, bench_args *a)
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

/* Defaults as bench_parse sets them, and the engine's own (include/ember.h's
 * ember_engine_opts) where a flag is not given. */
int bench_usage(FILE *out, int code)
{
    fputs("usage: ember bench -m MODEL.gguf [options]     a synthetic workload through one engine\n"
          "       ember bench --url http://HOST:PORT [options]   the same workload to a running server\n"
          "the workload (both):\n"
          "  --requests N          requests in all (default 48)\n"
          "  --rate R|inf          Poisson arrivals, requests a second (default inf: all at once)\n"
          "  --prompt-len A:B      prompt tokens, uniform in A..B (default 8:200)\n"
          "  --gen-len A:B         tokens each request generates, EOS ignored (default 8:160)\n"
          "  --shared-prefix L     the same L tokens open every prompt (default 0)\n"
          "  --concurrency N       at most N submitted and unfinished (default: no limit)\n"
          "  --seed S              the workload's seed; request i samples with S*1000003+i (default 1)\n"
          "  --slo-ttft-ms X       goodput's TTFT target (default 5000)\n"
          "  --slo-tpot-ms Y       goodput's TPOT target (default 500)\n"
          "  --json                one JSON object instead of text\n"
          "the in-process engine (-m; with --url they are the server's: give them to ember serve):\n"
          "  --max-seqs S          sequences at once (default 16)\n"
          "  --max-batch-tokens T  tokens a step (default 256)\n"
          "  --chunk-ctx C         a prompt row at position p costs 1 + p/C of the step (default 0: 1)\n"
          "  --kv-blocks K, --kv-block-size B, --kv-mem MIB\n"
          "                        the KV pool (default: 16-token blocks, enough for max-seqs\n"
          "                        sequences of 1024 tokens and one of the whole context)\n"
          "  --kv paged|contiguous (default paged)   --kv-type f32|f16|q8_0 (default f32)\n"
          "  --batching continuous|static|static-ragged   (default continuous)\n"
          "  --no-prefix-cache     no blocks shared between prompts (default: shared)\n"
          "  --draft M2 [--draft-k K] | --ngram N   speculative decoding (default: off; K 4)\n"
          "  --disaggregate [--prefill-device N]   prompts on one engine, decoding on another\n"
          "                        (default device: another GPU if any)\n"
          "  --profile             time every dispatch; the profile joins the report\n"
          "  --temp T --top-k K --top-p P --min-p P ...   every request samples so (default:\n"
          "                        greedy); --sample-from auto|candidates|rows (default auto)\n"
          "  --backend vulkan|cpu (default vulkan)   --device N (default: the best; ember info)\n"
          "the server (--url):\n"
          "  --model NAME          the requests' model (default: the first of /v1/models)\n"
          "  --api-key KEY         sent as a bearer token (default: none)\n"
          "  --vocab V             prompt ids below V (default: the server's vocab_size, else 256)\n",
          out);
    return code;
}
