/* cmd_bench.c — `ember bench`: a seeded synthetic serving workload (Poisson arrivals,
 * random prompt and output lengths, an optional shared prefix) run through one engine,
 * reporting throughput, latency percentiles (TTFT, TPOT, ITL), goodput under SLOs and KV
 * cache use. --batching static and --kv contiguous run the baselines it is compared to
 * (static: fixed-shape batches, prompts padded to the longest and finished members
 * computing on as padding rows, reported as padding_tokens and not counted in
 * output_tokens or throughput; static-ragged: the same without padded prompts).
 * --url sends the same workload to a running server instead (`ember serve` or any
 * OpenAI-compatible one) as streamed /v1/completions requests: bench_http.c.
 * This file drives the engines; the options are bench_args.c's, the workload
 * bench_workload.c's, the report bench_report.c's.
 * --disaggregate prefills on one engine and decodes on another (each on its worker
 * thread), the prompt's KV handed over as a KV state (docs/state.md). */
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "bench_http.h"
#include "bench_report.h"
#include "bench_workload.h"
#include "platform/os_thread.h"
#include "tools/commands.h"

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
            bench_progress(w, next);
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
        if (done != w->completed) w->completed = done, bench_progress(w, next);
    }
    ember_engine_stop(p);
    ember_engine_stop(d);
    return s;
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
    ember_status s = bench_make_workload(a, info.n_vocab, &w) ? ember_engine_create(m, &eo, &e) : EMBER_ERR_OUT_OF_MEMORY;
    if (s == EMBER_OK && a->disaggregate) s = ember_engine_create(pm, &eo, &pre);
    if (s == EMBER_OK) s = a->disaggregate ? drive_split(pre, e, &w) : drive(e, &w);
    int code = 0;
    if (s != EMBER_OK) {
        ember_engine *failed = pre && ember_engine_error(pre)[0] ? pre : e;
        fprintf(stderr, "ember: %s\n", failed ? ember_engine_error(failed) : "out of memory");
        code = 1;
    } else if (!bench_report(a, &w, e, (ember_now_ms() - w.t0) / 1e3)) {
        code = 1;
    }
    ember_engine_destroy(pre);
    ember_engine_destroy(e);
    bench_free_workload(&w);
    return pm != m ? cli_free_model(pm, code) : code;
}

/* ---- against a server (--url) ------------------------------------------------------------ */

static void http_progress(void *user, uint32_t done, uint32_t sent)
{
    workload *w = user;
    w->completed = done;
    bench_progress(w, sent);
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
    if (model && (!bench_make_workload(a, vocab, &w) || !(r = calloc(w.n, sizeof *r))))
        fprintf(stderr, "ember bench: out of memory\n");
    for (uint32_t i = 0; r && i < w.n; i++)
        r[i] = (bench_http_req){.arrival_s = w.r[i].arrival_s, .prompt = w.r[i].prompt,
                                .n_prompt = w.r[i].n_prompt, .n_gen = w.r[i].n_gen};
    if (r && bench_http_run(&o, r, w.n, &duration_s) && bench_report_url(a, &o, r, w.n, duration_s)) code = 0;
    bench_http_free(r, w.n);
    free(r);
    free(model);
    bench_free_workload(&w);
    return code;
}

int ember_cmd_bench(int argc, char **argv)
{
    bench_args a;
    if (!bench_parse(argc, argv, &a)) return bench_usage(stderr, CLI_USAGE);
    if (a.help) return bench_usage(stdout, CLI_OK);
    if (a.url) return run_url(&a);
    ember_model *draft, *m = cli_load_with_draft(&a.model, a.draft, &draft);
    return m ? cli_free_with_draft(m, draft, run(m, draft, &a)) : 1;
}

