/* test_soak.c — 1,000 requests through the public API, 500 in each of two modes: the
 * caller's loop (ember_engine_step, ember_engine_step_begin/_end, ember_engine_run_for) and
 * the worker thread (ember_engine_start, submits and cancels from other threads), on the
 * real stories260K model (../shared; skips without it) with a Q8_0 copy of it as draft
 * model. (1,000 in each mode took 128-171 s on the shared 2-core CI machine, more than the
 * two minutes this test may take; `test_soak 1000` runs them.)
 *
 * Seeded random requests: prompts of 1..200 tokens (random ids, a story's prefix shared by
 * many, or text), max_tokens 1..64, greedy or sampled (temperature, top-k, top-p, min-p,
 * penalties), n-gram or draft-model speculation on some, stop strings on some, and
 * cancellations at random moments: right after submit, between steps, while a step is in
 * flight, from another thread, from the request's own token callback (returning non-zero,
 * or calling ember_cancel) and from another request's token callback. Requests arrive
 * while others run. Some cannot be served: a prompt longer than the context (or than a
 * small engine's pool), a token outside the vocabulary, a draft_k too large: ember_submit
 * refuses them and no callback ever runs for them; and a second engine whose pool is
 * smaller than one context ends those that outgrow it with EMBER_FINISH_KV_FULL through
 * their done callback.
 *
 * Afterwards: every accepted id got exactly one done callback (counted per id) and no token
 * after it; each finish reason agrees with what happened (a cancelled request says so
 * unless it finished first, a cancel between steps leaves no token after it, a stop string
 * is cut from the text, a natural end delivered all the text); the metrics' token counts
 * equal the tokens streamed; greedy requests with the same prompt, and sampled ones with
 * the same seed, produce the same tokens whatever their batch, speculation or preemption;
 * no KV block is in use and nothing runs or waits. tests/CMakeLists.txt links this test
 * with LeakSanitizer where the compiler has it, so a leak fails it at exit.
 *
 * `test_soak N` runs N requests per mode instead of 500 (50..4000). */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ember.h"
#include "testutil.h"

#define MAX_REQ 4000
#define MAX_GEN 64
#define MAX_PROMPT 720 /* refused prompts go past the context (512) */
#define TEXT_CAP 2048  /* 64 tokens of at most 7 bytes, each byte at most 3 as U+FFFD */
#define EOS_ID 2       /* stories260K's tok512 */
#define N_PROBES 4
#define B_BLOCKS 12    /* engine B's pool: 192 tokens, less than one context */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Checks made on other threads than main's: counted atomically, reported at the end. */
static atomic_int thread_failures;
#define TCHECK(cond, ...) do { if (!(cond)) { atomic_fetch_add(&thread_failures, 1); \
    fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

typedef enum plan {
    PLAN_NONE,
    PLAN_BEFORE_STEP, /* ember_cancel right after ember_submit */
    PLAN_DRIVER,      /* ember_cancel by the driver: at a later step, or from another thread */
    PLAN_CB_RETURN,   /* the token callback returns non-zero at token `at` */
    PLAN_CB_SELF,     /* the token callback calls ember_cancel on its own id at token `at` */
    PLAN_CB_OTHER,    /* at token `at`, another request's token callback cancels it */
} plan;

typedef enum refusal { REFUSE_NONE, REFUSE_LONG, REFUSE_TOKEN, REFUSE_DRAFT_K } refusal;

typedef struct engine_ctx engine_ctx;

typedef struct rec {
    /* what is asked (written before submit) */
    engine_ctx *ec;
    uint32_t prompt[MAX_PROMPT];
    uint32_t n_prompt;          /* tokens (for a text prompt: what ember_tokenize counts) */
    const char *text_prompt;    /* NULL: prompt holds the tokens */
    char text_buf[1024];
    int no_bos;
    uint32_t max_tokens;
    int ignore_eos;
    ember_sampling sampling;
    ember_speculation spec;
    const char *stop[4];
    uint32_t n_stop;
    plan plan;
    uint32_t at;                /* token for the callback plans; steps (blocking) for the driver */
    double due_ms;              /* worker mode: when the driver cancels */
    refusal refuse;
    int probe;                  /* greedy on probe prompt p (>= 0), else -1 */
    int twin_of;                /* the same request as that index (-1: none) */
    /* what happened */
    ember_status submit_status;
    _Atomic ember_request_id id;
    uint32_t submit_step;
    atomic_int n_done;
    ember_request_id done_id;
    ember_finish why;
    ember_request_metrics m;
    uint32_t n_tok, late_tokens;
    uint32_t toks[MAX_GEN];
    char text[TEXT_CAP];        /* the text streamed */
    size_t text_len;
    char full[TEXT_CAP];        /* every generated token's bytes, joined */
    size_t full_len;
    uint32_t last_piece;        /* bytes of the last token */
    atomic_int cancelled;       /* a cancel was accepted (EMBER_OK) or the callback returned 1 */
    bool cancel_strict;         /* ... between steps: no token may follow it */
    uint32_t tokens_at_cancel;
    bool cb_stopped;            /* the token callback returned non-zero */
    bool driver_done;           /* the driver made its cancel (driver's thread only) */
    bool on_board;
} rec;

/* A request waiting to be cancelled from another request's token callback (PLAN_CB_OTHER).
 * The board is touched only by the engine's stepping thread. */
typedef struct victim {
    rec *r;
    ember_request_id id;
} victim;

struct engine_ctx {
    ember_engine *e;
    const ember_model *model;
    bool small;                 /* engine B: the small pool */
    atomic_uint done_by_id[MAX_REQ + 2];
    atomic_uint bad_ids;
    victim board[MAX_REQ];
    uint32_t n_board;
    uint32_t max_seqs;
};

typedef struct soak {
    const char *mode;
    bool worker;
    ember_model *model;
    engine_ctx a, b;
    rec *recs;
    uint32_t n;
    tu_rng rng;
    uint32_t restarts;          /* worker: ember_engine_stop + start while busy */
    atomic_uint next;           /* worker: next request to submit */
    atomic_int submitters_left;
    atomic_bool stop_canceller;
    uint32_t cap_live;
} soak;

/* ---- the story: natural prompts, a shared prefix, stop strings ------------------------- */

static const char *story =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
    "One day, she saw a big red ball under a tree. She wanted to play with it, but it was too high. "
    "Lily asked her mom for help. Her mom smiled and said, \"Let's get it together.\" They found a "
    "long stick and pushed the ball down. Lily was very happy. She said, \"Thank you, mom!\" Then "
    "she played with the ball all day. When the sun went down, Lily and her mom went home. They "
    "ate dinner and talked about the fun day. Lily went to bed and dreamed about the big red ball. "
    "The next day, Lily met a boy named Tim. Tim had a little dog. The dog was very friendly and "
    "liked to run. Lily and Tim played with the dog and the ball in the park.";

static uint32_t story_tok[400];
static uint32_t n_story;
static const uint32_t probe_len[N_PROBES] = {1, 8, 40, 120};
static const char *stops[] = {" the", ".", "Lily", " and", "\n", "!", "was", "She", "park", "zqx", ", "};

/* Greedy tokens per probe prompt: the longest seen, to compare the others with. */
static uint32_t probe_ref[N_PROBES][MAX_GEN];
static uint32_t probe_ref_n[N_PROBES];

/* ---- callbacks ------------------------------------------------------------------------ */

static void cancel_board(engine_ctx *ec, ember_request_id self)
{
    for (uint32_t i = 0; i < ec->n_board;) {
        victim v = ec->board[i];
        if (v.id == self) {
            i++;
            continue;
        }
        ember_status s = ember_cancel(ec->e, v.id);
        TCHECK(s == EMBER_OK || (s == EMBER_ERR_NOT_FOUND && atomic_load(&v.r->n_done) == 1),
               "cancel from another callback: %s", ember_status_name(s));
        if (s == EMBER_OK) atomic_store(&v.r->cancelled, 1);
        ec->board[i] = ec->board[--ec->n_board];
    }
}

static void append(char *buf, size_t *len, const char *s, size_t n)
{
    if (*len + n >= TEXT_CAP) n = TEXT_CAP - 1 - *len;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = 0;
}

static int on_token(void *user, ember_request_id id, uint32_t tok, const char *text, size_t len)
{
    rec *r = user;
    engine_ctx *ec = r->ec;
    if (atomic_load(&r->n_done)) r->late_tokens++;
    if (r->n_tok < MAX_GEN) r->toks[r->n_tok] = tok;
    r->n_tok++;
    append(r->text, &r->text_len, text, len);
    char piece[64];
    size_t n = ember_token_to_text(ec->model, tok, piece, sizeof piece);
    r->last_piece = (uint32_t)(n < sizeof piece ? n : sizeof piece);
    append(r->full, &r->full_len, piece, r->last_piece);
    cancel_board(ec, id);
    if (r->n_tok != r->at) return 0;
    switch (r->plan) {
    case PLAN_CB_RETURN:
        r->cb_stopped = true;
        r->tokens_at_cancel = r->n_tok;
        atomic_store(&r->cancelled, 1);
        return 1;
    case PLAN_CB_SELF: {
        ember_status s = ember_cancel(ec->e, id);
        TCHECK(s == EMBER_OK, "ember_cancel of itself from its token callback: %s", ember_status_name(s));
        if (s == EMBER_OK) atomic_store(&r->cancelled, 1);
        break;
    }
    case PLAN_CB_OTHER:
        if (!r->on_board && ec->n_board < MAX_REQ) ec->board[ec->n_board++] = (victim){r, id};
        r->on_board = true;
        break;
    default:
        break;
    }
    return 0;
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    rec *r = user;
    engine_ctx *ec = r->ec;
    r->why = why;
    r->m = *m;
    r->done_id = id;
    if (id >= 1 && id <= MAX_REQ + 1) atomic_fetch_add(&ec->done_by_id[id], 1);
    else atomic_fetch_add(&ec->bad_ids, 1);
    atomic_fetch_add(&r->n_done, 1);
}

/* ---- the requests ---------------------------------------------------------------------- */

static uint32_t rnd(tu_rng *g, uint32_t n) { return (uint32_t)(tu_next(g) % n); }
static bool chance(tu_rng *g, uint32_t pct) { return rnd(g, 100) < pct; }

static void random_tokens(tu_rng *g, uint32_t *t, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) t[i] = 3 + rnd(g, 509);
}

static void make_sampling(tu_rng *g, rec *r)
{
    ember_sampling *s = &r->sampling;
    memset(s, 0, sizeof *s);
    s->seed = tu_next(g);
    uint32_t k = rnd(g, 100);
    if (k < 30) return; /* greedy */
    if (k < 38) {       /* greedy on penalized logits */
        s->repetition_penalty = 1.0f + tu_uniform(g, 0, 0.5f);
        s->frequency_penalty = chance(g, 50) ? tu_uniform(g, 0, 1) : 0;
        s->presence_penalty = chance(g, 50) ? tu_uniform(g, 0, 1) : 0;
        s->penalty_last_n = rnd(g, 3) * 32;
        return;
    }
    s->temperature = tu_uniform(g, 0.2f, 1.5f);
    if (chance(g, 50)) s->top_k = 1 + rnd(g, 100);
    if (chance(g, 50)) s->top_p = tu_uniform(g, 0.5f, 1.0f);
    if (chance(g, 30)) s->min_p = tu_uniform(g, 0, 0.2f);
    if (chance(g, 30)) s->repetition_penalty = tu_uniform(g, 0.8f, 1.5f);
    if (chance(g, 20)) s->frequency_penalty = tu_uniform(g, -0.5f, 1);
    if (chance(g, 20)) s->presence_penalty = tu_uniform(g, -0.5f, 1);
    if (chance(g, 30)) s->penalty_last_n = rnd(g, 200);
}

static void make_prompt(tu_rng *g, rec *r)
{
    uint32_t k = rnd(g, 100);
    if (k < 10) { /* text: a piece of the story, tokenized by ember_submit */
        size_t len = strlen(story), from = rnd(g, 2) ? 0 : rnd(g, (uint32_t)len / 2);
        size_t n = 1 + rnd(g, (uint32_t)(len - from < 600 ? len - from : 600));
        memcpy(r->text_buf, story + from, n);
        r->text_buf[n] = 0;
        r->text_prompt = r->text_buf;
        r->no_bos = chance(g, 30);
        return;
    }
    uint32_t n = chance(g, 70) ? 1 + rnd(g, 64) : 65 + rnd(g, 136);
    if (k < 45) { /* the story's beginning (shared blocks), then random tokens */
        uint32_t shared = 1 + rnd(g, n < n_story ? n : n_story);
        memcpy(r->prompt, story_tok, shared * sizeof *r->prompt);
        random_tokens(g, r->prompt + shared, n - shared);
    } else {
        r->prompt[0] = 1;
        random_tokens(g, r->prompt + 1, n - 1);
        if (chance(g, 20)) r->prompt[0] = 3 + rnd(g, 509); /* no BOS */
    }
    r->n_prompt = n;
}

static void make_stops(tu_rng *g, rec *r)
{
    if (!chance(g, 25)) return;
    r->n_stop = 1 + rnd(g, 3);
    for (uint32_t i = 0; i < r->n_stop; i++) r->stop[i] = stops[rnd(g, sizeof stops / sizeof stops[0])];
}

static void make_plan(tu_rng *g, rec *r, bool small)
{
    uint32_t k = rnd(g, 100);
    r->plan = k < 50 ? PLAN_NONE : k < 58 ? PLAN_BEFORE_STEP : k < 72 ? PLAN_DRIVER : k < 82 ? PLAN_CB_RETURN
              : k < 90 ? PLAN_CB_SELF : PLAN_CB_OTHER;
    if (small && r->plan != PLAN_DRIVER) r->plan = PLAN_NONE; /* B: let most outgrow the pool */
    if (r->plan >= PLAN_CB_RETURN) r->at = 1 + rnd(g, r->max_tokens);
    if (r->plan == PLAN_DRIVER) r->at = rnd(g, 40);
    r->due_ms = tu_uniform(g, 0, 300);
}

/* A request the engine must refuse at submit. */
static void make_refused(tu_rng *g, rec *r, bool small)
{
    r->refuse = (refusal)(1 + rnd(g, small ? 1 : 3));
    r->max_tokens = 1 + rnd(g, MAX_GEN);
    uint32_t n = small ? 176 + rnd(g, 300) : 512 + rnd(g, MAX_PROMPT - 512);
    if (r->refuse != REFUSE_LONG) n = 1 + rnd(g, 100);
    r->prompt[0] = 1;
    random_tokens(g, r->prompt + 1, n - 1);
    r->n_prompt = n;
    if (r->refuse == REFUSE_TOKEN) r->prompt[rnd(g, n)] = 512 + rnd(g, 1000);
    if (r->refuse == REFUSE_DRAFT_K) r->spec = (ember_speculation){.draft_k = EMBER_MAX_DRAFT + 1 + rnd(g, 8),
                                                                    .ngram = rnd(g, 3)};
}

/* The same request as r[j] (prompt, sampling, seed, speculation, stops), never cancelled.
 * Not of a sampled request that speculates: how many drafts it gets depends on the room
 * left in each step, and so which random numbers it draws (the distribution is the same,
 * the tokens need not be). */
static void make_twin(soak *S, rec *r, uint32_t i)
{
    for (int tries = 0; tries < 8; tries++) {
        uint32_t j = rnd(&S->rng, i);
        const rec *o = &S->recs[j];
        if (o->refuse || o->ec != &S->a || o->twin_of >= 0 || (o->sampling.temperature > 0 && o->spec.draft_k))
            continue;
        memcpy(r->prompt, o->prompt, sizeof r->prompt);
        r->n_prompt = o->n_prompt;
        if (o->text_prompt) {
            memcpy(r->text_buf, o->text_buf, sizeof r->text_buf);
            r->text_prompt = r->text_buf;
        }
        r->no_bos = o->no_bos;
        r->max_tokens = o->max_tokens;
        r->ignore_eos = o->ignore_eos;
        r->sampling = o->sampling;
        r->spec = o->spec;
        memcpy(r->stop, o->stop, sizeof r->stop);
        r->n_stop = o->n_stop;
        r->probe = o->probe;
        r->twin_of = (int)j;
        return;
    }
}

static void make_request(soak *S, uint32_t i)
{
    tu_rng *g = &S->rng;
    rec *r = &S->recs[i];
    memset(r, 0, sizeof *r);
    r->probe = r->twin_of = -1;
    bool small = chance(g, 5);
    r->ec = small ? &S->b : &S->a;
    if (chance(g, 3)) {
        make_refused(g, r, small);
        return;
    }
    r->max_tokens = 1 + rnd(g, MAX_GEN);
    r->ignore_eos = chance(g, 50);
    make_plan(g, r, small);
    if (!small && i > 20 && chance(g, 5)) {
        make_twin(S, r, i);
        if (r->twin_of >= 0) {
            r->plan = PLAN_NONE;
            return;
        }
    }
    if (small) { /* prompts that fit its 12 blocks, outputs that may not */
        uint32_t n = 90 + rnd(g, 86);
        memcpy(r->prompt, story_tok, (n < n_story ? n : n_story) * sizeof *r->prompt);
        if (n > n_story) random_tokens(g, r->prompt + n_story, n - n_story);
        r->n_prompt = n;
        r->ignore_eos = 1;
        make_sampling(g, r);
        return;
    }
    if (chance(g, 6)) { /* greedy on a probe prompt: compared with every other one */
        r->probe = (int)rnd(g, N_PROBES);
        r->n_prompt = probe_len[r->probe];
        memcpy(r->prompt, story_tok, r->n_prompt * sizeof *r->prompt);
        r->ignore_eos = 1;
    } else {
        make_prompt(g, r);
        make_sampling(g, r);
        /* stories260K never ends a story within MAX_GEN tokens (its end-of-text logit is
         * ~20 below the rest): a lift on it makes some requests end with EMBER_FINISH_EOS,
         * so that those checks run. */
        static const ember_logit_bias eos_lift[] = {{EOS_ID, 17}, {EOS_ID, 20}, {EOS_ID, 23}};
        if (!r->ignore_eos && chance(g, 25))
            r->sampling.logit_bias = &eos_lift[rnd(g, 3)], r->sampling.n_logit_bias = 1;
    }
    make_stops(g, r);
    uint32_t k = rnd(g, 100);
    if (k < 12) r->spec = (ember_speculation){.draft_k = 1 + rnd(g, 8), .ngram = 1 + rnd(g, 3),
                                              .adaptive = (int)rnd(g, 2)};
    else if (k < 22) r->spec = (ember_speculation){.draft_k = 1 + rnd(g, 6), .adaptive = (int)rnd(g, 2)};
}

/* Submits r, and cancels it at once when its plan says so. In the caller's loop that cancel
 * is strict: the request cannot be in a step yet, so no token may follow. */
static void submit(soak *S, rec *r, uint32_t step)
{
    ember_request_desc d = {.prompt = r->text_prompt, .tokens = r->text_prompt ? NULL : r->prompt,
                            .n_tokens = r->text_prompt ? 0 : r->n_prompt, .no_bos = r->no_bos,
                            .max_tokens = r->max_tokens, .sampling = r->sampling, .spec = r->spec,
                            .ignore_eos = r->ignore_eos, .on_token = on_token, .on_done = on_done, .user = r};
    for (uint32_t i = 0; i < r->n_stop; i++) d.stop[i] = r->stop[i];
    ember_request_id id = 0;
    r->submit_step = step;
    if (S->worker) r->due_ms += now_ms();
    r->submit_status = ember_submit(r->ec->e, &d, &id);
    if (r->refuse) {
        TCHECK(r->submit_status < 0 && id == 0, "refused kind %d: %s", r->refuse, ember_status_name(r->submit_status));
        return;
    }
    TCHECK(r->submit_status == EMBER_OK && id != 0, "submit: %s (%s)", ember_status_name(r->submit_status),
           ember_engine_error(r->ec->e));
    atomic_store(&r->id, id);
    if (r->plan != PLAN_BEFORE_STEP || !id) return;
    ember_status s = ember_cancel(r->ec->e, id);
    TCHECK(s == EMBER_OK || (S->worker && s == EMBER_ERR_NOT_FOUND && atomic_load(&r->n_done) == 1),
           "cancel right after submit: %s", ember_status_name(s));
    if (s != EMBER_OK) return;
    atomic_store(&r->cancelled, 1);
    r->cancel_strict = !S->worker;
}

/* The driver's cancel of r: strict when no step is in flight (caller's loop only). */
static void driver_cancel(soak *S, rec *r, bool strict)
{
    ember_request_id id = atomic_load(&r->id);
    ember_status s = ember_cancel(r->ec->e, id);
    TCHECK(s == EMBER_OK || (s == EMBER_ERR_NOT_FOUND && atomic_load(&r->n_done) == 1),
           "driver cancel of %llu: %s", (unsigned long long)id, ember_status_name(s));
    r->driver_done = true;
    if (s != EMBER_OK) return;
    atomic_store(&r->cancelled, 1);
    r->cancel_strict = strict;
    if (strict) r->tokens_at_cancel = r->n_tok; /* no step in flight: n_tok is not being written */
}

/* ---- mode 1: the caller's loop ------------------------------------------------------------ */

static void check_stats_live(engine_ctx *ec)
{
    ember_engine_stats st;
    ember_engine_get_stats(ec->e, &st);
    TCHECK(st.kv_blocks_used <= st.kv_blocks_total && st.requests_running <= ec->max_seqs,
           "stats: %u of %u blocks, %u running", st.kv_blocks_used, st.kv_blocks_total, st.requests_running);
}

static void driver_cancels(soak *S, uint32_t step, bool in_flight)
{
    for (uint32_t i = 0; i < S->n; i++) {
        rec *r = &S->recs[i];
        if (r->plan == PLAN_DRIVER && !r->driver_done && atomic_load(&r->id) && step >= r->submit_step + r->at)
            driver_cancel(S, r, !in_flight);
    }
}

static uint32_t submit_some(soak *S, uint32_t next, uint32_t step)
{
    uint32_t live = ember_engine_pending(S->a.e) + ember_engine_pending(S->b.e);
    for (uint32_t k = 1 + rnd(&S->rng, 4); k > 0 && next < S->n && live < S->cap_live; k--, live++)
        submit(S, &S->recs[next++], step);
    return next;
}

static void run_caller_loop(soak *S)
{
    uint32_t next = 0, step = 0, polls = 0;
    for (; step < 200000; step++) {
        if (step % 50 == 0) S->cap_live = 4 + rnd(&S->rng, 28); /* bursts and lulls */
        next = submit_some(S, next, step);
        driver_cancels(S, step, false);
        ember_status s;
        uint32_t how = rnd(&S->rng, 100);
        if (how < 60) {
            s = ember_engine_step(S->a.e);
        } else if (how < 85) { /* a step in two halves; requests arrive and leave meanwhile */
            s = ember_engine_step_begin(S->a.e);
            if (s == EMBER_OK) {
                next = submit_some(S, next, step);
                driver_cancels(S, step, true);
                /* Polls, then waits: spinning would take a core from lavapipe's threads. */
                for (uint32_t k = 0; (s = ember_engine_step_end(S->a.e, k < 2 ? 0 : 2000)) == EMBER_NOT_READY; k++)
                    polls++;
            }
        } else {
            s = ember_engine_run_for(S->a.e, tu_uniform(&S->rng, 0, 4));
            if (s >= 0) {
                ember_status e = ember_engine_step_end(S->a.e, UINT64_MAX); /* nothing left in flight */
                if (e < 0) s = e;
            }
        }
        CHECKF(s >= 0, "step A: %s (%s)", ember_status_name(s), ember_engine_error(S->a.e));
        s = ember_engine_step(S->b.e);
        CHECKF(s >= 0, "step B: %s (%s)", ember_status_name(s), ember_engine_error(S->b.e));
        check_stats_live(&S->a);
        check_stats_live(&S->b);
        if (next == S->n && !ember_engine_pending(S->a.e) && !ember_engine_pending(S->b.e)) break;
    }
    /* One more step each publishes the final stats (and must find nothing to do). */
    CHECK(ember_engine_step(S->a.e) == EMBER_IDLE && ember_engine_step(S->b.e) == EMBER_IDLE);
    printf("%s: %u loop iterations, %u polls of a step in flight\n", S->mode, step, polls);
}

static void check_engine_idle(engine_ctx *ec, const char *what);

/* ---- mode 2: the worker thread ------------------------------------------------------------- */

typedef struct submitter {
    soak *S;
    tu_rng rng;
} submitter;

static void *submitter_main(void *arg)
{
    submitter *t = arg;
    soak *S = t->S;
    for (;;) {
        uint32_t i = atomic_fetch_add(&S->next, 1);
        if (i >= S->n) break;
        uint32_t cap = 4 + rnd(&t->rng, 28);
        while (ember_engine_pending(S->a.e) + ember_engine_pending(S->b.e) >= cap) sleep_us(500);
        submit(S, &S->recs[i], 0);
        sleep_us(rnd(&t->rng, 3000));
    }
    atomic_fetch_sub(&S->submitters_left, 1);
    return NULL;
}

/* Cancels the requests planned for it once they are due, from a thread of its own. */
static void *canceller_main(void *arg)
{
    soak *S = arg;
    while (!atomic_load(&S->stop_canceller)) {
        double t = now_ms();
        for (uint32_t i = 0; i < S->n; i++) {
            rec *r = &S->recs[i];
            if (r->plan == PLAN_DRIVER && !r->driver_done && atomic_load(&r->id) && t >= r->due_ms)
                driver_cancel(S, r, false);
        }
        check_stats_live(&S->a);
        check_stats_live(&S->b);
        sleep_us(1000);
    }
    return NULL;
}

static void run_worker(soak *S)
{
    CHECK(ember_engine_start(S->a.e) == EMBER_OK && ember_engine_start(S->b.e) == EMBER_OK);
    atomic_store(&S->next, 0);
    atomic_store(&S->submitters_left, 3);
    atomic_store(&S->stop_canceller, false);
    pthread_t sub[3], can;
    submitter st[3];
    for (int i = 0; i < 3; i++) {
        st[i] = (submitter){S, {tu_next(&S->rng)}};
        pthread_create(&sub[i], NULL, submitter_main, &st[i]);
    }
    pthread_create(&can, NULL, canceller_main, S);
    /* The worker is stopped and started again now and then, work pending: nothing is lost. */
    while (atomic_load(&S->submitters_left) > 0) {
        sleep_us(50000 + rnd(&S->rng, 200000));
        if (atomic_load(&S->submitters_left) == 0) break;
        ember_engine_stop(S->a.e);
        sleep_us(rnd(&S->rng, 5000));
        CHECK(ember_engine_start(S->a.e) == EMBER_OK);
        S->restarts++;
    }
    for (int i = 0; i < 3; i++) pthread_join(sub[i], NULL);
    ember_engine_wait_idle(S->a.e);
    ember_engine_wait_idle(S->b.e);
    atomic_store(&S->stop_canceller, true);
    pthread_join(can, NULL);
    /* Idle in the stats as soon as nothing is pending, the workers still running (they
     * showed the last requests running until their step ended, before a794542). */
    check_engine_idle(&S->a, "engine A after ember_engine_wait_idle");
    check_engine_idle(&S->b, "engine B after ember_engine_wait_idle");
    ember_engine_stop(S->a.e);
    ember_engine_stop(S->b.e);
    printf("%s: the worker stopped and restarted %u times while busy\n", S->mode, S->restarts);
}

/* ---- checks ----------------------------------------------------------------------------- */

static bool ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return false;
    return true;
}

static bool has_stop(const rec *r, const char *text)
{
    for (uint32_t i = 0; i < r->n_stop; i++)
        if (strstr(text, r->stop[i])) return true;
    return false;
}

/* The streamed text against the generated tokens' bytes (checked when those are ASCII, so
 * that no character is held back across tokens). Returns whether it could check. */
static bool check_text(const rec *r, uint32_t idx)
{
    if (!ascii(r->full, r->full_len) || r->n_tok > MAX_GEN) return false;
    CHECKF(r->text_len <= r->full_len && memcmp(r->text, r->full, r->text_len) == 0,
           "request %u: streamed text is not a prefix of its tokens' text", idx);
    CHECKF(!has_stop(r, r->text), "request %u: a stop string in the text: \"%s\"", idx, r->text);
    if (r->why == EMBER_FINISH_LENGTH || r->why == EMBER_FINISH_EOS)
        CHECKF(r->text_len == r->full_len, "request %u: finished (%d) with text held back: %zu of %zu bytes", idx,
               r->why, r->text_len, r->full_len);
    if (r->why == EMBER_FINISH_STOP) {
        bool found = false; /* a stop string right after the text, completed by the last token */
        for (uint32_t i = 0; i < r->n_stop; i++) {
            size_t n = strlen(r->stop[i]);
            found |= r->text_len + n <= r->full_len && memcmp(r->full + r->text_len, r->stop[i], n) == 0 &&
                     r->text_len + n > r->full_len - r->last_piece;
        }
        CHECKF(found, "request %u: finished at a stop string not found after its text \"%s\" (tokens: \"%s\")", idx,
               r->text, r->full);
    }
    return true;
}

static bool natural(const rec *r)
{
    return r->why == EMBER_FINISH_LENGTH || r->why == EMBER_FINISH_EOS || r->why == EMBER_FINISH_STOP;
}

static void check_finish(const rec *r, uint32_t idx)
{
    uint32_t n = r->n_tok;
    bool cancelled = atomic_load(&r->cancelled);
    CHECKF(r->why != EMBER_FINISH_ERROR, "request %u ended with an error", idx);
    if (r->why == EMBER_FINISH_CANCELLED) CHECKF(cancelled, "request %u cancelled without a cancel", idx);
    if (r->why == EMBER_FINISH_KV_FULL)
        CHECKF(r->ec->small && r->m.n_prompt + r->max_tokens > B_BLOCKS * 16,
               "request %u: kv_full with %u + %u tokens", idx, r->m.n_prompt, r->max_tokens);
    if (r->why == EMBER_FINISH_LENGTH) CHECKF(n == r->max_tokens, "request %u: length after %u of %u", idx, n,
                                              r->max_tokens);
    if (r->why == EMBER_FINISH_CONTEXT) CHECKF(n < r->max_tokens, "request %u: context end after %u of %u", idx, n,
                                               r->max_tokens);
    if (r->why == EMBER_FINISH_EOS)
        CHECKF(!r->ignore_eos && n > 0 && r->toks[(n - 1) % MAX_GEN] == EOS_ID, "request %u: eos without it", idx);
    if (r->why == EMBER_FINISH_STOP) CHECKF(r->n_stop > 0, "request %u: stop without stop strings", idx);
    if (!r->ignore_eos)
        for (uint32_t i = 0; i + 1 < n && i < MAX_GEN; i++)
            CHECKF(r->toks[i] != EOS_ID, "request %u went on after the end-of-text token", idx);
    if (r->cancel_strict)
        CHECKF(r->why == EMBER_FINISH_CANCELLED && n == r->tokens_at_cancel,
               "request %u: cancelled between steps after %u tokens, ended %d after %u", idx, r->tokens_at_cancel,
               r->why, n);
    if (r->cb_stopped)
        CHECKF(n == r->tokens_at_cancel && (r->why == EMBER_FINISH_CANCELLED || natural(r)),
               "request %u: its callback stopped it at token %u, it ended %d after %u", idx, r->tokens_at_cancel,
               r->why, n);
}

/* Greedy tokens of one probe prompt agree with every other request on it (the shorter is a
 * prefix of the longer), whatever the batch, speculation, preemption or mode. */
static void check_probe(const rec *r, uint32_t idx)
{
    uint32_t n = r->n_tok < MAX_GEN ? r->n_tok : MAX_GEN, *ref = probe_ref[r->probe], *rn = &probe_ref_n[r->probe];
    uint32_t common = n < *rn ? n : *rn;
    CHECKF(memcmp(ref, r->toks, common * sizeof *ref) == 0, "request %u: greedy tokens of probe %d differ", idx,
           r->probe);
    if (n > *rn) {
        memcpy(ref, r->toks, n * sizeof *ref);
        *rn = n;
    }
}

typedef struct totals {
    uint32_t submitted, refused, finish[7], text_checked, twins, probes;
    uint64_t gen, prompt, drafted, accepted;
} totals;

static void check_rec(soak *S, uint32_t idx, totals *t)
{
    const rec *r = &S->recs[idx];
    t->submitted++;
    if (r->refuse) {
        t->refused++;
        ember_status want = r->refuse == REFUSE_LONG ? EMBER_ERR_CONTEXT_FULL : EMBER_ERR_INVALID_ARG;
        CHECKF(r->submit_status == want && atomic_load(&r->n_done) == 0 && r->n_tok == 0,
               "refused request %u (kind %d): %s, %d done callbacks, %u tokens", idx, r->refuse,
               ember_status_name(r->submit_status), atomic_load(&r->n_done), r->n_tok);
        return;
    }
    ember_request_id id = atomic_load(&r->id);
    CHECKF(id && atomic_load(&r->n_done) == 1 && r->done_id == id && r->late_tokens == 0,
           "request %u (id %llu): %d done callbacks (id %llu), %u tokens after done", idx, (unsigned long long)id,
           atomic_load(&r->n_done), (unsigned long long)r->done_id, r->late_tokens);
    if (atomic_load(&r->n_done) != 1) return;
    t->finish[r->why <= EMBER_FINISH_CONTEXT ? r->why : EMBER_FINISH_ERROR]++;
    t->gen += r->m.n_gen;
    t->prompt += r->m.n_prompt;
    t->drafted += r->m.n_drafted;
    t->accepted += r->m.n_accepted;
    CHECKF(r->m.n_gen == r->n_tok && r->n_tok <= r->max_tokens, "request %u: metrics say %u tokens, %u streamed "
           "(max %u)", idx, r->m.n_gen, r->n_tok, r->max_tokens);
    CHECKF(r->m.n_prompt == r->n_prompt, "request %u: metrics say %u prompt tokens, %u given", idx, r->m.n_prompt,
           r->n_prompt);
    CHECKF(r->m.n_accepted <= r->m.n_drafted && (r->spec.draft_k || r->m.n_drafted == 0),
           "request %u: %u of %u drafts accepted", idx, r->m.n_accepted, r->m.n_drafted);
    check_finish(r, idx);
    t->text_checked += check_text(r, idx);
    if (r->probe >= 0) {
        check_probe(r, idx);
        t->probes++;
    }
    if (r->twin_of >= 0) { /* the same seed gives the same tokens */
        const rec *o = &S->recs[r->twin_of];
        uint32_t common = r->n_tok < o->n_tok ? r->n_tok : o->n_tok;
        if (common > MAX_GEN) common = MAX_GEN;
        CHECKF(memcmp(r->toks, o->toks, common * sizeof *r->toks) == 0, "request %u: tokens differ from its twin %d",
               idx, r->twin_of);
        t->twins++;
    }
}

static void check_engine_idle(engine_ctx *ec, const char *what)
{
    ember_engine_stats st;
    ember_engine_get_stats(ec->e, &st);
    CHECKF(st.kv_blocks_used == 0 && st.requests_running == 0 && st.requests_waiting == 0 &&
           ember_engine_pending(ec->e) == 0, "%s at the end: %u blocks used, %u running, %u waiting, %u pending", what,
           st.kv_blocks_used, st.requests_running, st.requests_waiting, ember_engine_pending(ec->e));
    CHECK(atomic_load(&ec->bad_ids) == 0);
}

/* Every id handed out got exactly one done callback, and no other id did. */
static void check_ids(soak *S, engine_ctx *ec, const char *what)
{
    static uint8_t seen[MAX_REQ + 2];
    memset(seen, 0, sizeof seen);
    uint32_t n_ids = 0;
    for (uint32_t i = 0; i < S->n; i++)
        if (S->recs[i].ec == ec && !S->recs[i].refuse) {
            ember_request_id id = atomic_load(&S->recs[i].id);
            if (id >= 1 && id <= MAX_REQ + 1) seen[id]++, n_ids++;
        }
    uint32_t bad = 0;
    for (uint32_t id = 1; id <= MAX_REQ + 1; id++) bad += atomic_load(&ec->done_by_id[id]) != seen[id] || seen[id] > 1;
    CHECKF(bad == 0, "%s: %u ids without exactly one done callback (of %u)", what, bad, n_ids);
}

/* The Vulkan loader unloads the driver and the layers when the last instance goes, before
 * LeakSanitizer looks at exit: memory they still point to from their globals then shows as
 * a leak of "<unknown module>" (lavapipe: 128 bytes), which no suppression by library name
 * could match. Every library loaded now stays loaded, so its globals are roots again. */
static int pin(struct dl_phdr_info *info, size_t size, void *user)
{
    if (info->dlpi_name && info->dlpi_name[0]) dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    return 0;
}

/* ---- one mode ----------------------------------------------------------------------------- */

static bool make_engine(soak *S, engine_ctx *ec, ember_engine_opts o, bool small)
{
    memset(ec, 0, sizeof *ec);
    ec->model = S->model;
    ec->small = small;
    ec->max_seqs = o.max_seqs;
    ember_status s = ember_engine_create(S->model, &o, &ec->e);
    CHECKF(s == EMBER_OK, "engine: %s", ember_engine_error(ec->e));
    return s == EMBER_OK;
}

static void run_mode(soak *S, ember_model *draft, uint64_t seed)
{
    S->rng = (tu_rng){seed};
    for (uint32_t i = 0; i < S->n; i++) make_request(S, i);
    for (uint32_t i = 0; i < S->n; i++) { /* what ember_submit will count for the text prompts */
        rec *r = &S->recs[i];
        size_t n = 0;
        if (r->text_prompt)
            CHECK(ember_tokenize(S->model, r->text_prompt, strlen(r->text_prompt), !r->no_bos, r->prompt, MAX_PROMPT,
                                 &n) == EMBER_OK);
        if (r->text_prompt) r->n_prompt = (uint32_t)n;
    }
    /* A: a pool that makes the busiest moments preempt; the worker mode cuts the blocks and
     * steps smaller and sizes chunks by cost. B: 12 blocks, less than one context. */
    ember_engine_opts oa = {.max_seqs = 16, .kv_blocks = 96, .draft = draft};
    if (S->worker) oa = (ember_engine_opts){.max_seqs = 12, .max_batch_tokens = 128, .chunk_ctx = 512,
                                            .kv_block_size = 8, .kv_blocks = 90, .draft = draft};
    ember_engine_opts ob = {.max_seqs = 4, .kv_blocks = B_BLOCKS, .kv_block_size = 16};
    if (!make_engine(S, &S->a, oa, false) || !make_engine(S, &S->b, ob, true)) {
        ember_engine_destroy(S->a.e);
        ember_engine_destroy(S->b.e);
        return;
    }
    double t0 = now_ms();
    if (S->worker) run_worker(S);
    else run_caller_loop(S);
    double secs = (now_ms() - t0) / 1e3;
    CHECK(atomic_load(&thread_failures) == 0);
    check_engine_idle(&S->a, "engine A");
    check_engine_idle(&S->b, "engine B");
    check_ids(S, &S->a, "engine A");
    check_ids(S, &S->b, "engine B");
    totals t = {0};
    for (uint32_t i = 0; i < S->n; i++) check_rec(S, i, &t);
    ember_engine_stats sa, sb;
    ember_engine_get_stats(S->a.e, &sa);
    ember_engine_get_stats(S->b.e, &sb);
    printf("soak %s: %u requests (%u refused at submit), %llu tokens generated from %llu prompt tokens in %.1f s: "
           "%.0f tok/s\n", S->mode, t.submitted, t.refused, (unsigned long long)t.gen, (unsigned long long)t.prompt,
           secs, t.gen / secs);
    printf("soak %s: finish length %u, eos %u, stop %u, cancelled %u, kv_full %u, context %u, error %u\n", S->mode,
           t.finish[EMBER_FINISH_LENGTH], t.finish[EMBER_FINISH_EOS], t.finish[EMBER_FINISH_STOP],
           t.finish[EMBER_FINISH_CANCELLED], t.finish[EMBER_FINISH_KV_FULL], t.finish[EMBER_FINISH_CONTEXT],
           t.finish[EMBER_FINISH_ERROR]);
    printf("soak %s: %llu steps, %llu preemptions, %llu prefix-cache tokens, %llu copies on write, peak %u of %u "
           "blocks; drafts %llu, accepted %llu; text checked on %u, %u probe and %u twin requests compared\n",
           S->mode, (unsigned long long)(sa.steps + sb.steps), (unsigned long long)(sa.preemptions + sb.preemptions),
           (unsigned long long)sa.prefix_hit_tokens, (unsigned long long)sa.cow_copies, sa.kv_peak_blocks_used,
           sa.kv_blocks_total, (unsigned long long)t.drafted, (unsigned long long)t.accepted, t.text_checked,
           t.probes, t.twins);
    /* The soak must have exercised what it claims to (a short run, `test_soak 100`, may not). */
    if (S->n >= 500) {
        CHECK(t.finish[EMBER_FINISH_CANCELLED] > 0 && t.finish[EMBER_FINISH_STOP] > 0 && t.finish[EMBER_FINISH_KV_FULL] > 0);
        CHECK(t.finish[EMBER_FINISH_LENGTH] > 0 && t.refused > 0 && t.accepted > 0 && sa.preemptions > 0);
        CHECK(t.probes > 0 && t.twins > 0);
    }
    CHECK(t.text_checked > (t.submitted - t.refused) / 2);
    ember_engine_destroy(S->a.e);
    ember_engine_destroy(S->b.e);
}

int main(int argc, char **argv)
{
    const char *shared = tu_shared_dir();
    if (!shared) return tu_skip("../shared is absent: the soak runs on stories260K");
    char path[512], draft_path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/models/stories260K/stories260K-f32.v3.gguf", shared);
    FILE *f = fopen(path, "rb");
    if (!f) return tu_skip("../shared/models/stories260K is absent");
    fclose(f);
    uint32_t n = argc > 1 ? (uint32_t)atoi(argv[1]) : 500;
    if (n < 50 || n > MAX_REQ) n = 500;
    /* The draft model: a Q8_0 copy of the same weights (the shared Q8_0 file is an old
     * quantization Ember refuses), so that drafts are mostly, not always, accepted. */
    snprintf(draft_path, sizeof draft_path, "%s/soak_draft_q8.gguf", tu_tmp_dir());
    snprintf(cmd, sizeof cmd, "%s quantize %s %s q8_0 2>&1", tu_ember_bin(), path, draft_path);
    char out[1024];
    CHECKF(tu_run(cmd, out, sizeof out) == 0, "%s: %s", cmd, out);
    ember_model_opts mo = {.enable_validation = tu_validation(), .memory = tu_memory_mode()};
    ember_model *m = NULL, *draft = NULL;
    if (ember_model_load(path, &mo, &m) != EMBER_OK) {
        fprintf(stderr, "%s\n", ember_model_error(m));
        ember_model_free(m);
        return tu_skip("cannot load stories260K on a Vulkan device");
    }
    CHECKF(ember_model_load(draft_path, &mo, &draft) == EMBER_OK, "%s", ember_model_error(draft));
    dl_iterate_phdr(pin, NULL);
    size_t ns = 0;
    CHECK(ember_tokenize(m, story, strlen(story), 1, story_tok, 400, &ns) == EMBER_OK && ns > probe_len[N_PROBES - 1]);
    n_story = (uint32_t)ns;

    static rec recs[MAX_REQ];
    static soak S;
    S = (soak){.mode = "caller's loop", .worker = false, .model = m, .recs = recs, .n = n};
    run_mode(&S, draft, 0x50A1);
    S = (soak){.mode = "worker thread", .worker = true, .model = m, .recs = recs, .n = n};
    run_mode(&S, draft, 0x50A2);

    char first[512] = "";
    uint32_t nv = ember_model_validation_messages(m, first, sizeof first);
    CHECKF(nv == 0, "%u validation messages: %s", nv, first);
    ember_model_free(draft);
    ember_model_free(m);
#ifdef EMBER_SOAK_LSAN
    printf("LeakSanitizer: on (it checks for leaks at exit)\n");
#else
    printf("LeakSanitizer: not available with this compiler\n");
#endif
    return tu_finish("test_soak");
}
