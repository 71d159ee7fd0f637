/* serve.c — `ember serve`: an OpenAI-compatible HTTP server over one continuous-batching
 * engine (docs/server.md; docs/deploy.md for several behind a load balancer). Every request, from any connection, is submitted to the same
 * engine, whose worker thread steps them together. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "http.h"
#include "tools/cli.h"
#include "tools/commands.h"

typedef struct serve_args {
    cli_model_args model;
    srv_config cfg;
    const char *model_name, *draft;
    ember_engine_opts eo;
    ember_speculation spec;
    cli_habits habits;        /* -c/--ctx-size N: the context of every request; -t: a note */
    bool help;
} serve_args;

static int usage(FILE *out, int code)
{
    fprintf(out,
            "usage: ember serve -m MODEL.gguf [options]\n"
            "Serves /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/models, /tokenize, /detokenize,\n"
            "/health and /metrics (docs/server.md). Requests sample at temperature 1 unless they ask otherwise\n"
            "(OpenAI's default; the CLI's generate and chat are greedy).\n"
            "  --host ADDR             IPv4 or IPv6 address, or localhost (default 127.0.0.1; :: = all, dual stack)\n"
            "  --port N                (default 8080; 0: any free port, the line on stderr says which)\n"
            "  -c, --ctx-size N        the context of every request: prompt and reply (default: the model's)\n"
            "  --api-key KEY           /v1/... need 'Authorization: Bearer KEY' (default: none)\n"
            "  --served-model-name NAME, --model-name NAME\n"
            "                          the id in /v1/models and replies (default: the file name without .gguf);\n"
            "                          requests may name any model\n"
            "  --cors-origin ORIGIN    let browser pages from ORIGIN (or *) call it (default: off)\n"
            "  --max-queue N           requests waiting beyond N get 503 (default 256; 0 refuses all: draining)\n"
            "  --max-body BYTES        larger bodies get 413 (default 1048576)\n"
            "  --max-seqs N, --max-batch-tokens N, --kv-blocks N, --kv-type f32|f16|q8_0   the engine (its defaults)\n"
            "  --draft M2 [--draft-k K] | --ngram N   speculative decoding (default: off; K 4)\n"
            "  --device N, --backend vulkan|cpu, --memory auto|discrete, --memory-budget MIB   the device\n"
            "  --state-dir DIR         /v1/state/save and /restore keep KV states as files in DIR (default: off)\n"
            "  --max-state-mib N       the largest state file or peer state (default 4096)\n"
            "  --serve-prefill         POST /v1/prefill answers a prompt's KV state (for a --prefill-peer)\n"
            "  --prefill-peer URL      prompts of at least --prefill-min-tokens (default 256) tokens are\n"
            "                          prefilled by that server (with --api-key's key) and decoded here\n"
            "SIGINT or SIGTERM: replies being sent end (streams with an error event and [DONE]), then it exits 0.\n");
    return code;
}

static bool serve_flag(const char *f, const char *v, serve_args *a)
{
    long n;
    srv_config *c = &a->cfg;
    if (!strcmp(f, "--host")) return c->host = v, true;
    if (!strcmp(f, "--api-key")) return c->api_key = v, true;
    if (!strcmp(f, "--cors-origin")) return c->cors_origin = v, true;
    if (!strcmp(f, "--model-name") || !strcmp(f, "--served-model-name")) return a->model_name = v, true;
    if (!strcmp(f, "--port")) return cli_int(f, v, 0, 65535, &n) && (c->port = (uint16_t)n, true);
    if (!strcmp(f, "--max-queue")) return cli_int(f, v, 0, 1 << 20, &n) && (c->max_queue = (uint32_t)n, true);
    if (!strcmp(f, "--max-body")) return cli_int(f, v, 64, 1L << 30, &n) && (c->max_body = (size_t)n, true);
    if (!strcmp(f, "--kv-type")) return cli_kv_type(f, v, &a->eo.kv_type);
    if (!strcmp(f, "--state-dir")) return c->states.dir = v, true;
    if (!strcmp(f, "--prefill-peer")) return c->peer.url = v, true;
    if (!strcmp(f, "--prefill-min-tokens"))
        return cli_int(f, v, 1, 1 << 24, &n) && (c->peer.min_tokens = (uint32_t)n, true);
    if (!strcmp(f, "--max-state-mib"))
        return cli_int(f, v, 1, 1 << 20, &n) && (c->states.max_bytes = (uint64_t)n << 20, true);
    int spec = cli_spec_flag(f, v, &a->spec, &a->draft);
    if (spec) return spec > 0;
    uint32_t *u = !strcmp(f, "--max-seqs") ? &a->eo.max_seqs
                : !strcmp(f, "--max-batch-tokens") ? &a->eo.max_batch_tokens
                : !strcmp(f, "--kv-blocks") ? &a->eo.kv_blocks : NULL;
    return u && cli_int(f, v, 1, 1 << 24, &n) && (*u = (uint32_t)n, true);
}

/* The options that take a value, besides the model's and speculation's. */
static const char *const value_flags[] = {"--host", "--api-key", "--model-name", "--served-model-name", "--cors-origin", "--port", "--max-queue", "--max-body",
                                          "--kv-type", "--max-seqs", "--max-batch-tokens", "--kv-blocks", "--state-dir",
                                          "--max-state-mib", "--prefill-peer", "--prefill-min-tokens", NULL};

static bool parse(int argc, char **argv, serve_args *a)
{
    *a = (serve_args){.cfg = {.host = "127.0.0.1", .port = 8080, .max_queue = 256, .max_body = 1 << 20,
                              .states = {.max_bytes = 4096ull << 20}, .peer = {.min_tokens = 256}}};
    for (int i = 1; i < argc; i++) {
        int r = cli_model_flag(argc, argv, &i, &a->model);
        const char *v;
        if (r < 0) return false;
        if (r > 0) continue;
        if (cli_is_help(argv[i])) return a->help = true;
        if ((r = cli_habit_flag("serve", argc, argv, &i, &a->habits)) < 0) return false;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--serve-prefill")) {
            a->cfg.serve_prefill = true;
            continue;
        }
        if (!cli_flag_in(argv[i], value_flags) && !cli_flag_in(argv[i], cli_spec_flags))
            return cli_unknown("serve", argv[i]), false;
        if (!(v = cli_value(argc, argv, &i)) || !serve_flag(argv[i - 1], v, a)) return false;
    }
    if (!a->model.path) fprintf(stderr, "ember serve: no model given (-m MODEL.gguf)\n");
    struct stat st;
    const char *dir = a->cfg.states.dir;
    if (dir && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        fprintf(stderr, "ember serve: --state-dir %s is not a folder\n", dir);
        return false;
    }
    return a->model.path != NULL;
}

/* The id clients name the model by: --model-name, else the file name without .gguf. */
static char *model_id(const serve_args *a)
{
    if (a->model_name) return strdup(a->model_name);
    const char *base = strrchr(a->model.path, '/');
    char *id = strdup(base ? base + 1 : a->model.path);
    size_t n = id ? strlen(id) : 0;
    if (n > 5 && !strcmp(id + n - 5, ".gguf")) id[n - 5] = 0;
    return id;
}

/* Serves until SIGINT or SIGTERM (blocked in every thread, taken here by sigwait). */
static int serve(ember_model *m, ember_engine *e, serve_args *a)
{
    ember_model_info info;
    ember_model_get_info(m, &info);
    char *id = model_id(a);
    uint32_t ctx = cli_context("serve", a->habits.ctx, info.ctx_len);
    a->cfg.limits = (api_limits){.model_id = id, .ctx_len = ctx, .n_vocab = info.n_vocab, .dim = info.dim,
                                 .spec = a->spec};
    a->cfg.ctx_cut = ctx < info.ctx_len;
    a->cfg.peer.api_key = a->cfg.api_key; /* the peer is asked with the key this server takes */
    a->cfg.peer.max_bytes = a->cfg.states.max_bytes;
    if (a->cfg.peer.url) prefill_peer_init(); /* before any connection's thread asks it */
    srv_metrics *metrics = srv_metrics_create();
    srv_http *h = id && metrics ? srv_http_start(&a->cfg, m, e, metrics) : NULL;
    int code = 1;
    if (h) {
        bool v6 = strchr(a->cfg.host, ':') != NULL; /* an IPv6 address goes in brackets in a URL */
        fprintf(stderr, "ember serve: %s on %s, listening on http://%s%s%s:%u\n", id, info.device_name, v6 ? "[" : "",
                a->cfg.host, v6 ? "]" : "", srv_http_port(h));
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        int sig;
        sigwait(&set, &sig);
        fprintf(stderr, "ember serve: stopping\n");
        srv_http_stop(h); /* closes connections: their unfinished requests are cancelled */
        code = 0;
    }
    srv_metrics_free(metrics);
    free(id);
    return code;
}

int ember_cmd_serve(int argc, char **argv)
{
    serve_args a;
    if (!parse(argc, argv, &a)) return usage(stderr, CLI_USAGE);
    if (a.help) return usage(stdout, CLI_OK);
    /* Before any thread exists, so that all inherit it: only sigwait takes the signals,
     * and a client that hangs up never raises SIGPIPE. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    ember_model *draft = NULL;
    ember_model *m = cli_load_with_draft(&a.model, a.draft, &draft);
    if (!m) return 1;
    a.eo.draft = draft;
    ember_engine *e = NULL;
    int code = 1;
    if (ember_engine_create(m, &a.eo, &e) != EMBER_OK || ember_engine_start(e) != EMBER_OK)
        fprintf(stderr, "ember serve: %s\n", ember_engine_error(e));
    else
        code = serve(m, e, &a);
    ember_engine_destroy(e);
    return cli_free_with_draft(m, draft, code);
}
