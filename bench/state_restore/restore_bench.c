/* restore_bench.c — `restore_bench MODEL.gguf N_TOKENS RUNS [vulkan|cpu]`: how long a
 * conversation of N_TOKENS takes to come back, restored from its KV state, against
 * prefilled again: each run a fresh engine (no prefix cache to help) takes the same
 * prompt either way and generates one token; the time is from before ember_submit
 * (which reads and checks the state) to that token. Runs alternate the two. Prints one
 * JSON object: the medians and ranges, the state's size and the time to save it. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember.h"

typedef struct run {
    void *state;
    size_t len;
    int done;
} run;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void on_state(void *user, ember_request_id id, const void *s, size_t len)
{
    run *r = user;
    r->state = malloc(len);
    memcpy(r->state, s, len);
    r->len = len;
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    ((run *)user)->done = why == EMBER_FINISH_ERROR ? -1 : 1;
}

/* Milliseconds from submit to the first token on a fresh engine (state: restored). */
static double once(ember_model *m, const uint32_t *ids, uint32_t n, const run *state, run *save)
{
    ember_engine_opts eo = {.max_batch_tokens = 512, .no_prefix_cache = state == NULL};
    ember_engine *e = NULL;
    if (ember_engine_create(m, &eo, &e) != EMBER_OK) {
        fprintf(stderr, "restore_bench: %s\n", ember_engine_error(e));
        exit(1);
    }
    run r = {0};
    ember_request_desc d = {.tokens = ids, .n_tokens = n, .max_tokens = 1, .on_done = on_done, .user = save ? save : &r};
    if (state) d.state = state->state, d.state_len = state->len;
    if (save) d.on_state = on_state, d.prompt_only = 1;
    double t0 = now_ms();
    ember_status s = ember_submit(e, &d, NULL);
    while (s == EMBER_OK && !(save ? save : &r)->done) s = ember_engine_step(e);
    double ms = now_ms() - t0;
    if (s < 0 || (save ? save : &r)->done != 1) {
        fprintf(stderr, "restore_bench: %s\n", ember_engine_error(e));
        exit(1);
    }
    ember_engine_destroy(e);
    return ms;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: restore_bench MODEL.gguf N_TOKENS RUNS [vulkan|cpu]\n");
        return 2;
    }
    uint32_t n = (uint32_t)atoi(argv[2]);
    int runs = atoi(argv[3]);
    ember_model_opts mo = {.backend = argc > 4 && strcmp(argv[4], "cpu") == 0 ? EMBER_BACKEND_CPU : EMBER_BACKEND_VULKAN};
    ember_model *m = NULL;
    if (ember_model_load(argv[1], &mo, &m) != EMBER_OK || n < 2 || runs < 1 || runs > 64) {
        fprintf(stderr, "restore_bench: %s\n", m ? ember_model_error(m) : "bad arguments");
        return 1;
    }
    ember_model_info info;
    ember_model_get_info(m, &info);
    uint32_t *ids = malloc(n * sizeof *ids);
    srand(7);
    for (uint32_t i = 0; i < n; i++) ids[i] = 3 + (uint32_t)rand() % (info.n_vocab - 3);
    run saved = {0};
    double save_ms = once(m, ids, n, NULL, &saved);
    double pre[64], res[64];
    for (int i = 0; i < runs; i++) {
        pre[i] = once(m, ids, n, NULL, NULL);
        res[i] = once(m, ids, n, &saved, NULL);
    }
    qsort(pre, runs, sizeof *pre, cmp);
    qsort(res, runs, sizeof *res, cmp);
    printf("{\"device\": \"%s\", \"tokens\": %u, \"runs\": %d, \"state_bytes\": %zu, \"save_ms\": %.1f, "
           "\"prefill_ms\": %.1f, \"prefill_range\": [%.1f, %.1f], \"restore_ms\": %.1f, \"restore_range\": [%.1f, %.1f], "
           "\"speedup\": %.1f}\n",
           info.device_name, n, runs, saved.len, save_ms, pre[runs / 2], pre[0], pre[runs - 1], res[runs / 2], res[0],
           res[runs - 1], pre[runs / 2] / res[runs / 2]);
    free(saved.state);
    free(ids);
    ember_model_free(m);
    return 0;
}
