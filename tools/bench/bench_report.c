/* bench_report.c — `ember bench`'s report (bench_report.h). Percentiles are nearest-rank
 * over the completed requests; goodput counts the requests that ran to their length within
 * both SLOs. */
#include "bench_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
           bench_batching_name(a->eo.batching), a->eo.kv_layout == EMBER_KV_CONTIGUOUS ? "contiguous" : "paged");
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
           bench_batching_name(a->eo.batching), (unsigned long long)st->steps, (unsigned long long)st->tokens_computed,
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

bool bench_report(const bench_args *a, workload *w, ember_engine *e, double duration_s)
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

/* ---- a server's report (--url) ---------------------------------------------------------- */

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

bool bench_report_url(const bench_args *a, const bench_http_opts *o, const bench_http_req *r, uint32_t n,
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
