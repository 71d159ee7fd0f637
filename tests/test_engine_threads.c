/* test_engine_threads.c — what an application that must not stall relies on:
 *  - the non-blocking step: ember_engine_step_begin returns before the step is done,
 *    ember_engine_step_end polls (EMBER_NOT_READY) and finishes it, the tokens are those
 *    of the blocking step; ember_engine_run_for serves everything within its budgets;
 *  - submit, cancel, pending and stats from 4 threads while a worker runs long steps:
 *    each returns in a small fraction of a step, every done callback runs exactly once;
 *  - callbacks that call the engine, and one that waits for another thread to submit;
 *  - ember_engine_stop while another thread waits in ember_engine_wait_idle;
 *  - done callbacks that submit a follow-up while the engine stops (accepted: it stays
 *    queued or runs), is destroyed (refused, EMBER_ERR_SHUTTING_DOWN) or loses its device
 *    (refused, EMBER_ERR_DEVICE_LOST), with the worker and with the caller stepping:
 *    every request ember_submit accepted gets exactly one done callback;
 *  - two engines of one model stepped from two threads at once (one queue, serialised).
 * Times are only compared with the length of a step measured in the same run. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember.h"
#include "engine_fixture.h"
#include "testutil.h"

#define NREQ 6

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint32_t prompts[NREQ][160];
static uint32_t plen[NREQ];

static ember_engine *engine(ember_model *m, uint32_t max_batch_tokens)
{
    return ef_engine(m, (ember_engine_opts){.max_batch_tokens = max_batch_tokens});
}

/* The reference: every request served with the blocking step. */
static void run_blocking(ember_model *m, ef_result *res, uint32_t n_gen)
{
    ember_engine *e = engine(m, 0);
    if (!e) return;
    for (int i = 0; i < NREQ; i++) {
        ember_request_desc d = ef_desc(prompts[i], plen[i], n_gen, &res[i]);
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
    while (ember_engine_step(e) == EMBER_OK) {}
    ember_engine_destroy(e);
}

static void test_begin_end(ember_model *m, const ef_result *ref, uint32_t n_gen)
{
    static ef_result res[NREQ];
    ember_engine *e = engine(m, 0);
    if (!e) return;
    CHECK(ember_engine_step_end(e, 0) == EMBER_IDLE);     /* nothing in flight */
    CHECK(ember_engine_step_begin(e) == EMBER_IDLE);      /* nothing to run */
    for (int i = 0; i < NREQ; i++) {
        ember_request_desc d = ef_desc(prompts[i], plen[i], n_gen, &res[i]);
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
    uint32_t steps = 0, not_ready = 0, second_begin = 0;
    double begin_ms = 0, step_ms = 0;
    for (;;) {
        double t0 = now_ms();
        ember_status s = ember_engine_step_begin(e);
        double t1 = now_ms();
        if (s == EMBER_IDLE) break;
        CHECKF(s == EMBER_OK, "begin: %s", ember_engine_error(e));
        if (s != EMBER_OK) break;
        second_begin += ember_engine_step_begin(e) == EMBER_NOT_READY;
        while ((s = ember_engine_step_end(e, 0)) == EMBER_NOT_READY) not_ready++;
        CHECKF(s == EMBER_OK, "end: %s", ember_engine_error(e));
        begin_ms += t1 - t0;
        step_ms += now_ms() - t0;
        steps++;
    }
    int same = ef_count_same(res, ref, NREQ, n_gen);
    printf("begin/end: %u steps, %d/%d requests identical to the blocking step; begin %.2f ms of a %.2f ms "
           "step on average; polled not-ready %u times\n", steps, same, NREQ, begin_ms / steps, step_ms / steps,
           not_ready);
    CHECK(same == NREQ && second_begin == steps);
    ember_engine_destroy(e);
}

static void test_run_for(ember_model *m, const ef_result *ref, uint32_t n_gen)
{
    static ef_result res[NREQ];
    ember_engine *e = engine(m, 0);
    if (!e) return;
    for (int i = 0; i < NREQ; i++) {
        ember_request_desc d = ef_desc(prompts[i], plen[i], n_gen, &res[i]);
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
    ember_status s;
    uint32_t frames = 0;
    while ((s = ember_engine_run_for(e, 2.0)) == EMBER_OK || s == EMBER_NOT_READY) frames++;
    CHECKF(s == EMBER_IDLE, "run_for: %s", ember_engine_error(e));
    int same = ef_count_same(res, ref, NREQ, n_gen);
    printf("run_for(2 ms): %u frames, %d/%d requests identical\n", frames, same, NREQ);
    CHECK(same == NREQ);
    CHECK(ember_engine_pending(e) == 0);
    ember_engine_destroy(e);
}

/* ---- threads against a worker ---------------------------------------------------------- */

typedef struct stress {
    ember_engine *e;
    int thread;
    ef_result res[8];
    double worst_ms;     /* the longest submit / cancel / pending / stats call */
    int bad_messages;    /* copies of the engine's message that were none of the expected */
} stress;

/* Thread i's refused prompt: longer than the context (256), of a length of its own, so
 * that the four threads' messages differ in length as well as digits and a copy torn
 * between two of them would be none of them. */
static const uint32_t too_long[4] = {300, 1000, 2900, 70000};
static uint32_t long_prompt[70000];

static bool expected_message(const char *msg)
{
    for (int i = 0; i < 4; i++) {
        char want[128];
        snprintf(want, sizeof want, "prompt of %u tokens does not fit the context of 256", too_long[i]);
        if (strcmp(msg, want) == 0) return true;
    }
    return false;
}

/* A submit refused while the worker steps and three other threads are refused too: the
 * reason, read with ember_engine_copy_error, is one of the four messages in full. */
static void refused_submit(stress *st)
{
    ef_result r;
    ember_request_desc d = ef_desc(long_prompt, too_long[st->thread], 4, &r);
    CHECK(ember_submit(st->e, &d, NULL) == EMBER_ERR_CONTEXT_FULL);
    char msg[512];
    CHECK(ember_engine_copy_error(st->e, msg, sizeof msg) == msg);
    if (!expected_message(msg)) st->bad_messages++, fprintf(stderr, "thread %d read: %s\n", st->thread, msg);
}

static void *stress_main(void *arg)
{
    stress *st = arg;
    for (int k = 0; k < 8; k++) {
        int i = (st->thread + k) % NREQ;
        ember_request_desc d = ef_desc(prompts[i], plen[i], 24, &st->res[k]);
        ember_request_id id = 0;
        double t0 = now_ms();
        CHECK(ember_submit(st->e, &d, &id) == EMBER_OK);
        double t1 = now_ms();
        ember_engine_pending(st->e);
        ember_engine_stats s;
        ember_engine_get_stats(st->e, &s);
        double t2 = now_ms();
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
        double t3 = now_ms();
        if (k % 2) ember_cancel(st->e, id); /* may have finished already: NOT_FOUND is fine */
        double t4 = now_ms();
        refused_submit(st);
        double w = t1 - t0 > t2 - t1 ? t1 - t0 : t2 - t1;
        if (t4 - t3 > w) w = t4 - t3;
        if (w > st->worst_ms) st->worst_ms = w;
    }
    return NULL;
}

static void test_threads(ember_model *m)
{
    ember_engine *e = engine(m, 512);
    if (!e) return;
    /* How long one full step of this engine takes. */
    static ef_result warm[NREQ];
    for (int i = 0; i < NREQ; i++) {
        ember_request_desc d = ef_desc(prompts[i], plen[i], 2, &warm[i]);
        ember_submit(e, &d, NULL);
    }
    double t0 = now_ms();
    ember_engine_step(e);
    double step_ms = now_ms() - t0;
    while (ember_engine_step(e) == EMBER_OK) {}
    CHECK(ember_engine_start(e) == EMBER_OK);
    static stress st[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        st[i] = (stress){.e = e, .thread = i};
        pthread_create(&t[i], NULL, stress_main, &st[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    ember_engine_wait_idle(e);
    ember_engine_stop(e);
    double worst = 0;
    int once = 0, bad = 0;
    for (int i = 0; i < 4; i++) {
        if (st[i].worst_ms > worst) worst = st[i].worst_ms;
        bad += st[i].bad_messages;
        for (int k = 0; k < 8; k++) once += atomic_load(&st[i].res[k].done) == 1;
    }
    ember_engine_stats s;
    ember_engine_get_stats(e, &s);
    printf("threads: 32 requests from 4 threads against the worker: %d done exactly once; the longest submit, "
           "cancel, pending or stats call took %.2f ms, a full step %.1f ms; %u KV blocks in use after\n",
           once, worst, step_ms, s.kv_blocks_used);
    CHECK(once == 32 && s.kv_blocks_used == 0 && ember_engine_pending(e) == 0);
    printf("threads: 32 refused submits, ember_engine_copy_error read %d unexpected messages\n", bad);
    CHECK(bad == 0);
    /* The copy is cut to fit the buffer, always terminated. */
    char small[8];
    CHECK(strcmp(ember_engine_copy_error(e, small, sizeof small), "prompt ") == 0);
    CHECK(strcmp(ember_engine_copy_error(NULL, small, sizeof small), "out of ") == 0);
    CHECK(expected_message(ember_engine_error(e)));
    /* Not a speed: the calls must not wait for a step. A generous bound, relative to the
     * step measured in this very run. */
    CHECKF(worst < step_ms / 2 + 5, "a call waited %.2f ms behind a %.1f ms step", worst, step_ms);
    ember_engine_destroy(e);
}

/* ---- callbacks that call the engine ------------------------------------------------------ */

typedef struct helper {
    ember_engine *e;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool asked, answered;
    ef_result extra;
} helper;

/* Another thread that submits when asked: the callback waits for it. */
static void *helper_main(void *arg)
{
    helper *h = arg;
    pthread_mutex_lock(&h->mu);
    while (!h->asked) pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    ember_request_desc d = ef_desc(prompts[1], plen[1], 4, &h->extra);
    CHECK(ember_submit(h->e, &d, NULL) == EMBER_OK);
    ember_engine_stats s;
    ember_engine_get_stats(h->e, &s);
    pthread_mutex_lock(&h->mu);
    h->answered = true;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static void done_waits_for_helper(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    helper *h = user;
    CHECK(ember_engine_pending(h->e) >= 1);
    CHECK(ember_cancel(h->e, id + 1000) == EMBER_ERR_NOT_FOUND);
    pthread_mutex_lock(&h->mu);
    h->asked = true;
    pthread_cond_broadcast(&h->cv);
    while (!h->answered) pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

static void test_callbacks(ember_model *m)
{
    ember_engine *e = engine(m, 0);
    if (!e) return;
    helper h = {.e = e};
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    pthread_t t;
    pthread_create(&t, NULL, helper_main, &h);
    ember_request_desc d = {.tokens = prompts[0], .n_tokens = plen[0], .max_tokens = 3, .ignore_eos = 1,
                            .on_done = done_waits_for_helper, .user = &h};
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    CHECK(ember_engine_start(e) == EMBER_OK);
    ember_engine_wait_idle(e);
    ember_engine_stop(e);
    pthread_join(t, NULL);
    printf("callbacks: a done callback that waits for another thread's submit finished; that request %s\n",
           atomic_load(&h.extra.done) == 1 ? "ran too" : "did not run");
    CHECK(h.answered && atomic_load(&h.extra.done) == 1 && h.extra.n == 4);
    pthread_mutex_destroy(&h.mu);
    pthread_cond_destroy(&h.cv);
    ember_engine_destroy(e);
}

/* ---- stop while another thread waits ------------------------------------------------------ */

static void *wait_idle_main(void *arg)
{
    ember_engine_wait_idle(arg);
    return NULL;
}

/* A callback on the worker holds it at the gate until the test lets it go, just before
 * ember_engine_stop: whatever the callback was about cannot have moved on by then,
 * however fast the device. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool reached, released;
    ef_result r;
} gate;

/* Called by the worker: says it is there and waits (once released, passes at once). */
static void gate_pass(gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->reached = true;
    pthread_cond_broadcast(&g->cv);
    while (!g->released) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

/* Called by the test: waits for the worker to reach the gate, then lets it go on. */
static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->mu);
    while (!g->reached) pthread_cond_wait(&g->cv, &g->mu);
    g->released = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* A request held at its first token. */
static int gate_on_token(void *user, ember_request_id id, uint32_t tok, const char *text, size_t len)
{
    gate *g = user;
    gate_pass(g);
    return ef_on_token(&g->r, id, tok, text, len);
}

static void gate_on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    ef_on_done(&((gate *)user)->r, id, why, m);
}

static void test_stop_wakes_waiter(ember_model *m)
{
    ember_engine *e = engine(m, 0);
    if (!e) return;
    static gate g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    ember_request_desc d = ef_desc(prompts[2], plen[2], 4000, &g.r); /* as long as the context allows */
    d.on_token = gate_on_token, d.on_done = gate_on_done, d.user = &g;
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    CHECK(ember_engine_start(e) == EMBER_OK);
    pthread_t t;
    pthread_create(&t, NULL, wait_idle_main, e);
    gate_open(&g);
    ember_engine_stop(e);
    /* The waiter must return now that no worker runs; a hang is the test timing out. */
    pthread_join(t, NULL);
    CHECK(ember_engine_pending(e) == 1);
    ember_engine_destroy(e); /* cancels the request */
    CHECK(atomic_load(&g.r.done) == 1 && g.r.why == EMBER_FINISH_CANCELLED);
    printf("stop: a thread in wait_idle returned when the worker stopped\n");
}

/* ---- follow-ups submitted from done callbacks while the engine ends ----------------------- */

/* A request whose done callback submits a follow-up, as a game's "reply finished" handler
 * queues the character's next line. */
typedef struct chain {
    ember_engine *e;
    gate *g;                 /* when set, the done callback passes it before submitting */
    ef_result r, follow;
    ember_status resubmit;   /* what ember_submit said to the follow-up */
    char msg[256];           /* ember_engine_copy_error after a refused follow-up */
} chain;

static int chain_on_token(void *user, ember_request_id id, uint32_t tok, const char *text, size_t len)
{
    return ef_on_token(&((chain *)user)->r, id, tok, text, len);
}

static void chain_on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    chain *c = user;
    if (c->g) gate_pass(c->g);
    ember_request_desc d = ef_desc(prompts[5], plen[5], 4, &c->follow);
    c->resubmit = ember_submit(c->e, &d, NULL);
    if (c->resubmit != EMBER_OK) ember_engine_copy_error(c->e, c->msg, sizeof c->msg);
    ef_on_done(&c->r, id, why, m);
}

#define NCHAIN 4

static void submit_chains(ember_engine *e, chain *c, uint32_t max_tokens)
{
    for (int i = 0; i < NCHAIN; i++) {
        c[i] = (chain){.e = e, .resubmit = 1};
        ember_request_desc d = ef_desc(prompts[i], plen[i], max_tokens, &c[i].r);
        d.on_token = chain_on_token, d.on_done = chain_on_done, d.user = &c[i];
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
}

/* Every request accepted ended exactly once: each chain's own, and each follow-up that
 * ember_submit took. Refused follow-ups said want with its message. Returns how many
 * follow-ups were refused. */
static int check_chains(const chain *c, ember_status want, const char *msg, const char *what)
{
    int refused = 0, once = 0, accepted = 0, followed = 0;
    for (int i = 0; i < NCHAIN; i++) {
        once += atomic_load(&c[i].r.done) == 1;
        if (c[i].resubmit == EMBER_OK) accepted++, followed += atomic_load(&c[i].follow.done) == 1;
        else if (c[i].resubmit == want && strstr(c[i].msg, msg)) refused++;
    }
    printf("%s: %d/%d requests ended once; follow-ups: %d accepted (%d ended once), %d refused with %s\n", what, once,
           NCHAIN, accepted, followed, refused, ember_status_name(want));
    CHECKF(once == NCHAIN && followed == accepted && accepted + refused == NCHAIN, "%s", what);
    return refused;
}

/* The case: worker mode, contiguous KV, four requests queued, stop, then
 * destroy; every callback submits again. The cancelled ones' follow-ups are refused. */
static void test_follow_up_at_destroy(ember_model *m, bool worker)
{
    ember_engine_opts o = {.max_seqs = 4, .kv_layout = EMBER_KV_CONTIGUOUS};
    ember_engine *e = NULL;
    CHECKF(ember_engine_create(m, &o, &e) == EMBER_OK, "%s", ember_engine_error(e));
    static chain c[NCHAIN];
    submit_chains(e, c, 150);
    if (worker) {
        CHECK(ember_engine_start(e) == EMBER_OK);
        ember_engine_stop(e);
    } else {
        for (int k = 0; k < 3; k++) ember_engine_step(e);
    }
    ember_engine_destroy(e);
    int refused = check_chains(c, EMBER_ERR_SHUTTING_DOWN, "being destroyed",
                               worker ? "destroy after stop (worker)" : "destroy (caller stepping)");
    int cancelled = 0;
    for (int i = 0; i < NCHAIN; i++) cancelled += c[i].r.why == EMBER_FINISH_CANCELLED;
    CHECK(cancelled == refused && cancelled > 0);
}

/* Follow-ups submitted from done callbacks on the worker as ember_engine_stop begins (the
 * first callback holds the worker until the test is about to stop it) are accepted and
 * stay queued (or ran, if the worker took them before it saw the stop): nothing is lost,
 * and a later step serves them. */
static void test_follow_up_at_stop(ember_model *m)
{
    ember_engine *e = engine(m, 0);
    if (!e) return;
    static gate g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    static chain c[NCHAIN];
    submit_chains(e, c, 2);
    for (int i = 0; i < NCHAIN; i++) c[i].g = &g;
    CHECK(ember_engine_start(e) == EMBER_OK);
    gate_open(&g);
    ember_engine_stop(e);
    uint32_t left = ember_engine_pending(e);
    while (ember_engine_step(e) == EMBER_OK) {}
    printf("stop: %u follow-ups still queued after it; stepping served them\n", left);
    check_chains(c, EMBER_OK, "", "follow-ups around stop");
    CHECK(ember_engine_pending(e) == 0);
    ember_engine_destroy(e);
}

/* A lost device fails every request; their follow-ups are refused. A model of its own:
 * the loss is for good. */
static void test_follow_up_at_loss(const char *path, bool worker)
{
    ember_model_opts mo = {.enable_validation = tu_validation()};
    ember_model *m = ef_load(path, &mo);
    ember_engine *e = m ? engine(m, 0) : NULL;
    if (!e) {
        ember_model_free(m);
        return;
    }
    static chain c[NCHAIN];
    submit_chains(e, c, 150);
    ember_model_inject_faults(m, &(ember_faults){.wait_lost = 3});
    if (worker) {
        CHECK(ember_engine_start(e) == EMBER_OK);
        ember_engine_wait_idle(e); /* the loss ends every request */
        ember_engine_stop(e);
    } else {
        while (ember_engine_step(e) == EMBER_OK) {}
    }
    check_chains(c, EMBER_ERR_DEVICE_LOST, "device was lost", worker ? "lost device (worker)" : "lost device (caller)");
    for (int i = 0; i < NCHAIN; i++) CHECK(c[i].r.why == EMBER_FINISH_ERROR);
    ember_engine_destroy(e);
    ember_model_free(m);
}

/* ---- two engines on one model ------------------------------------------------------------- */

typedef struct twin {
    ember_model *m;
    ef_result res[NREQ];
    uint32_t n_gen;
} twin;

static void *twin_main(void *arg)
{
    twin *tw = arg;
    ember_engine *e = engine(tw->m, 0);
    if (!e) return NULL;
    for (int i = 0; i < NREQ; i++) {
        ember_request_desc d = ef_desc(prompts[i], plen[i], tw->n_gen, &tw->res[i]);
        ember_submit(e, &d, NULL);
    }
    while (ember_engine_run_for(e, 1.0) != EMBER_IDLE) {}
    ember_engine_destroy(e);
    return NULL;
}

static void test_two_engines(ember_model *m, const ef_result *ref, uint32_t n_gen)
{
    static twin tw[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        tw[i] = (twin){.m = m, .n_gen = n_gen};
        pthread_create(&t[i], NULL, twin_main, &tw[i]);
    }
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    int same = 0;
    for (int k = 0; k < 2; k++) same += ef_count_same(tw[k].res, ref, NREQ, n_gen);
    printf("two engines of one model on two threads: %d/%d requests identical\n", same, 2 * NREQ);
    CHECK(same == 2 * NREQ);
}

int main(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/threads_model.gguf", tu_tmp_dir());
    tu_make_model(path, "--dim 128 --layers 3 --heads 4 --kv-heads 2 --ffn 256 --vocab 512 --ctx 256 "
                        "--type q8_0 --seed 5");
    ember_model_opts mo = {.enable_validation = tu_validation()};
    ember_model *m = ef_load(path, &mo);
    if (!m) return tu_skip("cannot load the test model on a Vulkan device");
    tu_rng rng = {77};
    for (int i = 0; i < NREQ; i++) {
        plen[i] = 40 + 20 * (uint32_t)i;
        for (uint32_t j = 0; j < plen[i]; j++) prompts[i][j] = 3 + (uint32_t)(tu_next(&rng) % 509);
    }
    static ef_result ref[NREQ];
    const uint32_t n_gen = 16;
    run_blocking(m, ref, n_gen);
    test_begin_end(m, ref, n_gen);
    test_run_for(m, ref, n_gen);
    test_threads(m);
    test_callbacks(m);
    test_stop_wakes_waiter(m);
    test_follow_up_at_destroy(m, true);
    test_follow_up_at_destroy(m, false);
    test_follow_up_at_stop(m);
    test_two_engines(m, ref, n_gen);
    test_follow_up_at_loss(path, true);
    test_follow_up_at_loss(path, false);
    char first[512];
    uint32_t nv = ember_model_validation_messages(m, first, sizeof first);
    CHECKF(nv == 0, "%u validation messages: %s", nv, first);
    ember_model_free(m);
    return tu_finish("test_engine_threads");
}
