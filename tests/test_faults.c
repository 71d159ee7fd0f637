/* test_faults.c — what happens when memory runs out or the device is lost:
 *  - host memory: an allocator (ember_set_allocator) that fails the Nth allocation, for
 *    every N that model load and engine creation make, in turn: each failure is a clean
 *    EMBER_ERR_OUT_OF_MEMORY with a message, and everything allocated is freed (the
 *    allocator counts live blocks); after the last N the model serves;
 *  - device memory: the Nth Vulkan allocation of model load fails
 *    (ember_faults.device_alloc) for every N until load succeeds: EMBER_ERR_DEVICE_MEMORY,
 *    nothing left allocated; an engine whose KV pool cannot grow (the allocation fails
 *    when the memory budget rises) keeps serving with the pool it has, tokens unchanged;
 *  - device loss at a submission and at a wait, with the blocking step and with the
 *    worker thread: every request's done callback runs exactly once (those not finished
 *    with EMBER_FINISH_ERROR), the step returns EMBER_ERR_DEVICE_LOST and keeps doing so,
 *    submit and engine creation are refused, and after destroying both a new model
 *    serves the same tokens. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember.h"
#include "engine_fixture.h"
#include "testutil.h"

#define NREQ 6
#define NGEN 12

/* ---- a counting allocator that can fail the Nth call ----------------------------------- */

typedef struct counting {
    atomic_long calls, live;
    long fail_at; /* 0 = never */
} counting;

static bool fail_now(counting *c) { return atomic_fetch_add(&c->calls, 1) + 1 == c->fail_at; }

static void *c_malloc(void *user, size_t n)
{
    counting *c = user;
    if (fail_now(c)) return NULL;
    void *p = malloc(n);
    if (p) atomic_fetch_add(&c->live, 1);
    return p;
}

static void *c_realloc(void *user, void *p, size_t n)
{
    return fail_now(user) ? NULL : realloc(p, n); /* a failed realloc leaves p as it was */
}

static void c_free(void *user, void *p)
{
    atomic_fetch_sub(&((counting *)user)->live, 1);
    free(p);
}

static counting alloc_count;

static void count_from(long fail_at)
{
    atomic_store(&alloc_count.calls, 0);
    alloc_count.fail_at = fail_at;
}

/* ---- requests -------------------------------------------------------------------------- */

static uint32_t prompts[NREQ][40];

static ember_status submit_all(ember_engine *e, ef_result *res)
{
    for (int i = 0; i < NREQ; i++) {
        ember_request_desc d = ef_desc(prompts[i], 10 + 5 * i, NGEN, &res[i]);
        ember_status s = ember_submit(e, &d, NULL);
        if (s != EMBER_OK) return s;
    }
    return EMBER_OK;
}

/* Serves the requests to the end with the blocking step; the last step's status. */
static ember_status serve(ember_engine *e, ef_result *res)
{
    ember_status s = submit_all(e, res);
    while (s == EMBER_OK) s = ember_engine_step(e);
    return s;
}

static int n_same(const ef_result *a, const ef_result *ref) { return ef_count_same(a, ref, NREQ, NGEN); }

static ember_model_opts model_opts(const ember_faults *f)
{
    return (ember_model_opts){.enable_validation = tu_validation(), .faults = f};
}

/* ---- host memory ------------------------------------------------------------------------- */

/* Load and engine creation with the Nth allocation failing; true when both succeeded
 * (and then the requests were served against ref). */
static bool load_with_failure(const char *path, long n, const ef_result *ref, int *clean)
{
    ember_model_opts mo = model_opts(NULL);
    ember_model *m = NULL;
    ember_engine *e = NULL;
    ember_engine_opts eo = {.max_seqs = 2};
    count_from(n);
    ember_status s = ember_model_load(path, &mo, &m);
    /* Without a handle (its own allocation failed) there is no message to read. */
    bool no_handle = !m;
    const char *msg = s == EMBER_OK || !m ? "" : ember_model_error(m);
    if (s == EMBER_OK) {
        s = ember_engine_create(m, &eo, &e);
        no_handle = !e;
        msg = s == EMBER_OK || !e ? "" : ember_engine_error(e);
    }
    long calls = atomic_load(&alloc_count.calls);
    count_from(0);
    bool ok = s == EMBER_OK;
    if (ok) {
        static ef_result res[NREQ];
        CHECK(serve(e, res) == EMBER_IDLE);
        CHECKF(n_same(res, ref) == NREQ, "allocation %ld failing: the model that loaded serves other tokens", n);
    } else {
        bool good = s == EMBER_ERR_OUT_OF_MEMORY && (no_handle || msg[0]);
        CHECKF(good, "allocation %ld of %ld failing: %s: '%s'", n, calls, ember_status_name(s), msg);
        *clean += good;
    }
    ember_engine_destroy(e);
    ember_model_free(m);
    long live = atomic_load(&alloc_count.live);
    CHECKF(live == 0, "allocation %ld failing: %ld blocks still allocated after freeing everything", n, live);
    atomic_store(&alloc_count.live, 0);
    return ok;
}

static void test_host_memory(const char *path, const ef_result *ref)
{
    int clean = 0;
    ember_model_opts mo = model_opts(NULL);
    ember_model *m = NULL;
    ember_engine *e = NULL;
    ember_engine_opts eo = {.max_seqs = 2};
    count_from(0);
    CHECK(ember_model_load(path, &mo, &m) == EMBER_OK && ember_engine_create(m, &eo, &e) == EMBER_OK);
    long k = atomic_load(&alloc_count.calls);
    ember_engine_destroy(e);
    ember_model_free(m);
    double t0 = (double)clock() / CLOCKS_PER_SEC;
    long loaded = 0;
    for (long n = 1; n <= k; n++) loaded += load_with_failure(path, n, ref, &clean);
    printf("host memory: model load and engine creation make %ld allocations; failing each in turn: %d clean "
           "EMBER_ERR_OUT_OF_MEMORY, %ld tolerated (the model served), no block left allocated (%.1f s of CPU)\n",
           k, clean, loaded, (double)clock() / CLOCKS_PER_SEC - t0);
    CHECK(k > 50 && clean + loaded == k && clean > k / 2);
}

/* ---- device memory ----------------------------------------------------------------------- */

static void test_device_memory(const char *path)
{
    int failed = 0;
    uint32_t n;
    for (n = 1; n < 200; n++) {
        ember_faults f = {.device_alloc = n};
        ember_model_opts mo = model_opts(&f);
        ember_model *m = NULL;
        ember_engine *e = NULL;
        ember_engine_opts eo = {.max_seqs = 2};
        ember_status s = ember_model_load(path, &mo, &m);
        const char *msg = ember_model_error(m);
        if (s == EMBER_OK) {
            s = ember_engine_create(m, &eo, &e);
            msg = ember_engine_error(e);
        }
        if (s == EMBER_OK) {
            ember_engine_destroy(e);
            ember_model_free(m);
            break;
        }
        failed++;
        CHECKF(s == EMBER_ERR_DEVICE_MEMORY && strstr(msg, "VK_ERROR_OUT_OF_DEVICE_MEMORY"),
               "device allocation %u failing: %s: %s", n, ember_status_name(s), msg);
        printf("device allocation %u failing: %s in %s: %s\n", n, ember_status_name(s), e ? "engine creation" : "load",
               msg);
        ember_engine_destroy(e);
        ember_model_free(m);
        long live = atomic_load(&alloc_count.live);
        CHECKF(live == 0, "device allocation %u failing: %ld host blocks still allocated", n, live);
    }
    printf("device memory: model load and engine creation make %u device allocations; each failing in turn gave "
           "EMBER_ERR_DEVICE_MEMORY (%d times)\n", n - 1, failed);
    CHECK(n > 2 && n < 200 && failed == (int)n - 1);
}

/* The pool shrinks with the budget; when it should grow again its allocation fails: the
 * engine goes on with the small pool, then grows once the budget changes again. */
static void test_pool_cannot_grow(const char *path, const ef_result *ref)
{
    ember_model_opts mo = model_opts(NULL);
    mo.memory_budget_mib = 1024;
    ember_model *m = NULL;
    CHECKF(ember_model_load(path, &mo, &m) == EMBER_OK, "%s", ember_model_error(m));
    if (!m) return;
    ember_model_info info;
    ember_model_get_info(m, &info);
    uint32_t weights_mib = (uint32_t)(info.device_bytes >> 20);
    ember_engine *e = NULL;
    ember_engine_opts eo = {.max_seqs = 2};
    CHECKF(ember_engine_create(m, &eo, &e) == EMBER_OK, "%s", ember_engine_error(e));
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    uint32_t full = st.kv_blocks_total;
    CHECK(ember_model_set_memory_budget(m, weights_mib + 1) == EMBER_OK);
    static ef_result res[NREQ];
    CHECK(submit_all(e, res) == EMBER_OK);
    CHECK(ember_engine_step(e) == EMBER_OK);
    ember_engine_get_stats(e, &st);
    uint32_t small = st.kv_blocks_total;
    ember_model_inject_faults(m, &(ember_faults){.device_alloc = 1});
    CHECK(ember_model_set_memory_budget(m, 1024) == EMBER_OK);
    ember_status s;
    uint32_t most = 0;
    while ((s = ember_engine_step(e)) == EMBER_OK) {
        ember_engine_get_stats(e, &st);
        if (st.kv_blocks_total > most) most = st.kv_blocks_total;
    }
    printf("KV pool of %u blocks, %u under a budget of %u MiB; raised to 1024 MiB with the allocation failing: "
           "%u blocks at most, %d/%d requests identical; the engine says: %s\n", full, small, weights_mib + 1, most,
           n_same(res, ref), NREQ, ember_engine_error(e));
    CHECK(small < full && most == small && s == EMBER_IDLE && n_same(res, ref) == NREQ);
    CHECK(strstr(ember_engine_error(e), "KV pool stays at") != NULL);
    /* A new budget is a new try, and the fault is spent. */
    CHECK(ember_model_set_memory_budget(m, 1023) == EMBER_OK);
    CHECK(serve(e, res) == EMBER_IDLE && n_same(res, ref) == NREQ);
    ember_engine_get_stats(e, &st);
    CHECKF(st.kv_blocks_total == full, "after the budget changed again the pool has %u blocks, %u expected",
           st.kv_blocks_total, full);
    ember_engine_destroy(e);
    ember_model_free(m);
}

/* ---- device loss --------------------------------------------------------------------------- */

static void test_lost(const char *path, const ef_result *ref, bool at_submit, bool threaded)
{
    const char *how = threaded ? "worker thread" : "blocking step";
    ember_model_opts mo = model_opts(NULL);
    ember_model *m = NULL;
    ember_engine *e = NULL;
    ember_engine_opts eo = {.max_seqs = 2}; /* 6 requests: some wait while others run */
    CHECKF(ember_model_load(path, &mo, &m) == EMBER_OK, "%s", ember_model_error(m));
    CHECKF(m && ember_engine_create(m, &eo, &e) == EMBER_OK, "%s", ember_engine_error(e));
    if (!e) {
        ember_model_free(m);
        return;
    }
    static ef_result res[NREQ];
    /* The 20th submission or wait from now: the first two requests have finished (a
     * prompt step and 12 decode steps each, two at a time), the others are running or
     * waiting. */
    ember_faults f = {.submit_lost = at_submit ? 20 : 0, .wait_lost = at_submit ? 0 : 20};
    ember_model_inject_faults(m, &f);
    ember_status s = EMBER_OK, again;
    if (threaded) {
        CHECK(ember_engine_start(e) == EMBER_OK);
        CHECK(submit_all(e, res) == EMBER_OK);
        ember_engine_wait_idle(e); /* returns: every request ended */
        ember_engine_stop(e);
        s = ember_engine_step(e);
    } else {
        s = serve(e, res);
    }
    again = ember_engine_step(e);
    int once = 0, errors = 0, finished = 0, told = 0;
    for (int i = 0; i < NREQ; i++) {
        once += res[i].done == 1;
        errors += res[i].done == 1 && res[i].why == EMBER_FINISH_ERROR;
        finished += res[i].done == 1 && res[i].why == EMBER_FINISH_LENGTH && res[i].n == NGEN;
        /* each failed request's own reason; none on the others */
        told += res[i].why == EMBER_FINISH_ERROR ? strstr(res[i].error, "device was lost") != NULL : !res[i].error[0];
    }
    printf("device lost at the 20th %s (%s): step %s, then %s: '%s'; %d/%d done callbacks exactly once (%d with "
           "EMBER_FINISH_ERROR, %d finished before)\n", at_submit ? "submission" : "wait", how,
           ember_status_name(s), ember_status_name(again), ember_engine_error(e), once, NREQ, errors, finished);
    CHECK(s == EMBER_ERR_DEVICE_LOST && again == EMBER_ERR_DEVICE_LOST);
    CHECK(once == NREQ && errors + finished == NREQ && errors > 0 && finished > 0);
    CHECKF(told == NREQ, "%d of %d requests had the right metrics' error", told, NREQ);
    CHECK(strstr(ember_engine_error(e), "lost") != NULL);
    ef_result late = {0};
    ember_request_desc d = {.tokens = prompts[0], .n_tokens = 10, .max_tokens = 2, .on_done = ef_on_done,
                            .user = &late};
    CHECK(ember_submit(e, &d, NULL) == EMBER_ERR_DEVICE_LOST && late.done == 0);
    ember_engine *e2 = NULL;
    CHECK(ember_engine_create(m, &eo, &e2) == EMBER_ERR_DEVICE_LOST);
    ember_engine_destroy(e2);
    ember_engine_destroy(e);
    ember_model_free(m);
    for (int i = 0; i < NREQ; i++) CHECKF(res[i].done == 1, "request %d: %d done callbacks after destroy", i, res[i].done);

    /* A new model on a new device serves as before. */
    m = NULL, e = NULL;
    CHECKF(ember_model_load(path, &mo, &m) == EMBER_OK, "%s", ember_model_error(m));
    CHECKF(m && ember_engine_create(m, &eo, &e) == EMBER_OK, "%s", ember_engine_error(e));
    if (e) {
        CHECK(serve(e, res) == EMBER_IDLE);
        CHECKF(n_same(res, ref) == NREQ, "after the loss a new model serves other tokens");
    }
    ember_engine_destroy(e);
    ember_model_free(m);
}

int main(void)
{
    /* Every allocation of the library is counted from the start (live blocks are checked
     * after each part); test_host_memory makes them fail. */
    ember_allocator a = {.malloc = c_malloc, .realloc = c_realloc, .free = c_free, .user = &alloc_count};
    CHECK(ember_set_allocator(&(ember_allocator){0}) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_set_allocator(&a) == EMBER_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/faults_model.gguf", tu_tmp_dir());
    /* Small, so that loading it a few hundred times stays quick. */
    tu_make_model(path, "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 300 --ctx 128 --seed 5");
    ember_model_opts mo = model_opts(NULL);
    ember_model *m = ef_load(path, &mo);
    if (!m) return tu_skip("cannot load the test model on a Vulkan device");
    tu_rng rng = {7};
    for (int i = 0; i < NREQ; i++)
        for (int j = 0; j < 40; j++) prompts[i][j] = 3 + (uint32_t)(tu_next(&rng) % 290);
    static ef_result ref[NREQ];
    ember_engine *e = NULL;
    ember_engine_opts eo = {.max_seqs = 2};
    CHECK(ember_engine_create(m, &eo, &e) == EMBER_OK && serve(e, ref) == EMBER_IDLE);
    ember_engine_destroy(e);
    ember_model_free(m);

    test_device_memory(path);
    test_pool_cannot_grow(path, ref);
    test_lost(path, ref, true, false);
    test_lost(path, ref, false, false);
    test_lost(path, ref, true, true);
    test_lost(path, ref, false, true);
    test_host_memory(path, ref);
    long live = atomic_load(&alloc_count.live);
    CHECKF(live == 0, "%ld blocks still allocated at the end", live);
    CHECK(ember_set_allocator(NULL) == EMBER_OK);
    return tu_finish("test_faults");
}
