/* metrics.c — see metrics.h. The names follow vLLM's (vllm:...) with an ember_ prefix;
 * histogram buckets are seconds. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

#define N_BUCKETS 14
static const double BUCKETS[N_BUCKETS] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                          0.25, 0.5, 1.0, 2.5, 5.0, 10.0};

typedef struct histogram {
    unsigned long long counts[N_BUCKETS]; /* observations <= BUCKETS[i] (not cumulative) */
    unsigned long long n;
    double sum;
} histogram;

/* Finish reasons, by ember_finish value (ember_finish_name says them). */
#define N_FINISH (EMBER_FINISH_GRAMMAR + 1)
/* The statuses the server refuses with (docs/server.md); any other counts as 500. */
static const int REFUSED[] = {400, 401, 404, 405, 413, 500, 503};
#define N_REFUSED (sizeof REFUSED / sizeof *REFUSED)

struct srv_metrics {
    pthread_mutex_t mu;
    histogram ttft, itl, e2e;
    unsigned long long prompt_tokens, generation_tokens, drafted, accepted;
    unsigned long long finished[N_FINISH], refused[N_REFUSED];
    unsigned long long peer_prefills, peer_fallbacks;
    double peer_s;
};

srv_metrics *srv_metrics_create(void)
{
    srv_metrics *m = calloc(1, sizeof *m);
    if (m) pthread_mutex_init(&m->mu, NULL);
    return m;
}

void srv_metrics_free(srv_metrics *m)
{
    if (!m) return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static void observe(histogram *h, double v)
{
    int i = 0;
    while (i < N_BUCKETS && v > BUCKETS[i]) i++;
    if (i < N_BUCKETS) h->counts[i]++;
    h->n++;
    h->sum += v;
}

void srv_metrics_request_done(srv_metrics *m, ember_finish why, const ember_request_metrics *rm)
{
    pthread_mutex_lock(&m->mu);
    m->finished[(unsigned)why < N_FINISH ? (unsigned)why : EMBER_FINISH_ERROR]++;
    if (rm->n_gen) observe(&m->ttft, rm->ttft_ms / 1e3);
    observe(&m->e2e, rm->e2e_ms / 1e3);
    m->prompt_tokens += rm->n_prompt;
    m->generation_tokens += rm->n_gen;
    m->drafted += rm->n_drafted;
    m->accepted += rm->n_accepted;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_embedding_done(srv_metrics *m, const ember_request_metrics *rm)
{
    pthread_mutex_lock(&m->mu);
    m->prompt_tokens += rm->n_prompt; /* not timed end to end: that histogram counts finished requests */
    pthread_mutex_unlock(&m->mu);
}

static size_t refused_index(int status)
{
    for (size_t i = 0; i < N_REFUSED; i++)
        if (REFUSED[i] == status) return i;
    return refused_index(500);
}

void srv_metrics_refused(srv_metrics *m, int status)
{
    size_t i = refused_index(status);
    pthread_mutex_lock(&m->mu);
    m->refused[i]++;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_prefill_peer(srv_metrics *m, bool ok, double seconds)
{
    pthread_mutex_lock(&m->mu);
    if (ok) m->peer_prefills++;
    else m->peer_fallbacks++;
    m->peer_s += seconds;
    pthread_mutex_unlock(&m->mu);
}

void srv_metrics_inter_token(srv_metrics *m, double seconds)
{
    pthread_mutex_lock(&m->mu);
    observe(&m->itl, seconds);
    pthread_mutex_unlock(&m->mu);
}

/* ---- the text format ------------------------------------------------------------------- */

typedef struct out {
    char *s;
    size_t len, cap;
    int ok;
} out;

static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    for (int tries = 0; tries < 2 && o->ok; tries++) {
        va_start(ap, fmt);
        int n = vsnprintf(o->s + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if (n < 0) o->ok = 0;
        else if ((size_t)n < o->cap - o->len) {
            o->len += (size_t)n;
            return;
        } else {
            size_t cap = 2 * o->cap + (size_t)n;
            char *s = realloc(o->s, cap);
            if (!s) o->ok = 0;
            else o->s = s, o->cap = cap;
        }
    }
}

static void metric(out *o, const char *name, const char *type, const char *help, unsigned long long v)
{
    put(o, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, v);
}

static void render_histogram(out *o, const char *name, const char *help, const histogram *h)
{
    put(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    unsigned long long cum = 0;
    for (int i = 0; i < N_BUCKETS; i++) {
        cum += h->counts[i];
        put(o, "%s_bucket{le=\"%g\"} %llu\n", name, BUCKETS[i], cum);
    }
    put(o, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name, h->n, name, h->sum, name, h->n);
}

char *srv_metrics_render(srv_metrics *m, ember_engine *e, size_t *len)
{
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    out o = {.s = malloc(4096), .cap = 4096, .ok = 1};
    if (!o.s) return NULL;
    metric(&o, "ember_requests_running", "gauge", "Requests in the running batch.", st.requests_running);
    metric(&o, "ember_requests_waiting", "gauge", "Requests queued behind the running batch.", st.requests_waiting);
    metric(&o, "ember_kv_blocks_used", "gauge", "KV-cache blocks in use.", st.kv_blocks_used);
    metric(&o, "ember_kv_blocks_total", "gauge", "KV-cache blocks in the pool.", st.kv_blocks_total);
    metric(&o, "ember_prefix_cache_hit_tokens_total", "counter", "Prompt tokens served from the prefix cache.",
           st.prefix_hit_tokens);
    metric(&o, "ember_preemptions_total", "counter", "Requests preempted and recomputed.", st.preemptions);
    put(&o, "# HELP ember_sampled_tokens_total Tokens sampled (not greedy), by what the host read: the "
            "row's best candidates picked on the GPU, or its whole row of logits.\n"
            "# TYPE ember_sampled_tokens_total counter\n"
            "ember_sampled_tokens_total{from=\"candidates\"} %llu\nember_sampled_tokens_total{from=\"rows\"} %llu\n",
        (unsigned long long)st.sampled_from_candidates, (unsigned long long)st.sampled_from_rows);
    put(&o, "# HELP ember_kv_states_total KV states handed over (saved: a save, or a prefill for another engine) "
            "and restored.\n# TYPE ember_kv_states_total counter\n"
            "ember_kv_states_total{way=\"saved\"} %llu\nember_kv_states_total{way=\"restored\"} %llu\n",
        (unsigned long long)st.kv_states_saved, (unsigned long long)st.kv_states_restored);
    put(&o, "# HELP ember_kv_state_bytes_total Bytes of those KV states.\n# TYPE ember_kv_state_bytes_total counter\n"
            "ember_kv_state_bytes_total{way=\"saved\"} %llu\nember_kv_state_bytes_total{way=\"restored\"} %llu\n",
        (unsigned long long)st.kv_state_bytes_saved, (unsigned long long)st.kv_state_bytes_restored);
    metric(&o, "ember_kv_state_restored_tokens_total", "counter",
           "Prompt positions whose K/V were restored instead of computed.", st.kv_state_positions_restored);
    put(&o, "# HELP ember_kv_state_transfer_seconds_total Time moving KV states between the device and the host.\n"
            "# TYPE ember_kv_state_transfer_seconds_total counter\nember_kv_state_transfer_seconds_total %.6f\n",
        st.kv_state_transfer_s);
    pthread_mutex_lock(&m->mu);
    srv_metrics c = *m; /* a consistent copy; its mutex is not used */
    pthread_mutex_unlock(&m->mu);
    metric(&o, "ember_prompt_tokens_total", "counter", "Prompt tokens of finished requests.", c.prompt_tokens);
    metric(&o, "ember_generation_tokens_total", "counter", "Tokens generated for finished requests.",
           c.generation_tokens);
    metric(&o, "ember_spec_draft_tokens_total", "counter", "Speculative tokens proposed.", c.drafted);
    metric(&o, "ember_spec_accepted_tokens_total", "counter", "Speculative tokens accepted.", c.accepted);
    put(&o, "# HELP ember_requests_finished_total Requests that ended, by finish reason.\n"
            "# TYPE ember_requests_finished_total counter\n");
    for (size_t i = 0; i < N_FINISH; i++)
        put(&o, "ember_requests_finished_total{reason=\"%s\"} %llu\n", ember_finish_name((ember_finish)i),
            c.finished[i]);
    put(&o, "# HELP ember_requests_refused_total Requests answered with an HTTP error before generating, by "
            "status.\n# TYPE ember_requests_refused_total counter\n");
    for (size_t i = 0; i < N_REFUSED; i++)
        put(&o, "ember_requests_refused_total{status=\"%d\"} %llu\n", REFUSED[i], c.refused[i]);
    put(&o, "# HELP ember_prefill_peer_total Prompts sent to the --prefill-peer: prefilled there (remote) or, "
            "the peer failing, here (fallback).\n# TYPE ember_prefill_peer_total counter\n"
            "ember_prefill_peer_total{result=\"remote\"} %llu\nember_prefill_peer_total{result=\"fallback\"} %llu\n"
            "# HELP ember_prefill_peer_seconds_total Time spent asking the peer.\n"
            "# TYPE ember_prefill_peer_seconds_total counter\nember_prefill_peer_seconds_total %.6f\n",
        c.peer_prefills, c.peer_fallbacks, c.peer_s);
    render_histogram(&o, "ember_time_to_first_token_seconds", "Submit to first token.", &c.ttft);
    render_histogram(&o, "ember_inter_token_latency_seconds", "Time between two tokens of a request.", &c.itl);
    render_histogram(&o, "ember_e2e_request_latency_seconds", "Submit to finish.", &c.e2e);
    if (!o.ok) {
        free(o.s);
        return NULL;
    }
    *len = o.len;
    return o.s;
}
