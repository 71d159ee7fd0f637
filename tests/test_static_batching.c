/* test_static_batching.c — EMBER_BATCHING_STATIC, the baseline of `ember bench
 * --batching static`, is a fixed-shape batch (docs/serving.md, "Baselines"), and
 * EMBER_BATCHING_STATIC_RAGGED the same without padded prompts:
 *  - greedy tokens equal those of continuous batching (padding rows do not disturb real
 *    rows), on the Vulkan backend and on the CPU reference;
 *  - every step of a batch computes one row per member until its longest member ends:
 *    requests of max_tokens 2, 5, 9, 3 started together take 9 steps of 4 rows after the
 *    prompt step, 17 = (9-2) + (9-5) + (9-3) of them padding;
 *  - with padded prompts every member prefills as many rows as the longest prompt (30:
 *    50 padding rows for prompts of 12, 30, 7, 21), and nobody decodes before all are
 *    through, also when the prefill takes several steps;
 *  - nobody joins a batch before it ends;
 *  - a cancelled member is reported at once and pads on; padding stops at the context's
 *    end, and gives its KV blocks up rather than have a real request preempted; with too
 *    few KV blocks everything still completes, with the same tokens;
 *  - padding rows do not speculate (n-gram speculation gives the same tokens);
 *  - the worker-thread mode leaves nothing behind. */
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "engine_fixture.h"
#include "testutil.h"

#define MAXTOK 128
#define NREQ 16

typedef struct result {
    uint32_t tokens[MAXTOK];
    uint32_t n;
    ember_finish why;
    int done;
    uint64_t first_step, done_step; /* steps (from 1) that gave the first token, that ended it */
} result;

typedef struct job {
    const uint32_t *prompt;
    uint32_t n_prompt, max_tokens;
} job;

static uint64_t step_no; /* the step being run, for the callbacks */
static uint32_t prompts[NREQ][200];
static uint32_t plen[NREQ];

static int on_token(void *user, ember_request_id id, uint32_t tok, const char *text, size_t len)
{
    result *r = user;
    if (r->n == 0) r->first_step = step_no;
    if (r->n < MAXTOK) r->tokens[r->n++] = tok;
    return 0;
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    result *r = user;
    r->why = why;
    r->done++;
    r->done_step = step_no;
}

static void make_prompts(uint32_t n_vocab)
{
    tu_rng rng = {5};
    for (int i = 0; i < NREQ; i++) {
        plen[i] = 5 + (uint32_t)(tu_next(&rng) % 196);
        for (uint32_t j = 0; j < 200; j++) prompts[i][j] = 3 + (uint32_t)(tu_next(&rng) % (n_vocab - 3));
    }
}

static void submit(ember_engine *e, const job *j, result *r, ember_request_id *id, ember_speculation spec)
{
    memset(r, 0, sizeof *r);
    ember_request_desc d = {.tokens = j->prompt, .n_tokens = j->n_prompt, .max_tokens = j->max_tokens,
                            .ignore_eos = 1, .on_token = on_token, .on_done = on_done, .user = r, .spec = spec};
    CHECK(ember_submit(e, &d, id) == EMBER_OK);
}

/* One step; rows (may be NULL) gets the tokens it computed. */
static ember_status step(ember_engine *e, uint64_t *rows)
{
    ember_engine_stats a, b;
    ember_engine_get_stats(e, &a);
    step_no++;
    ember_status s = ember_engine_step(e);
    ember_engine_get_stats(e, &b);
    if (rows) *rows = b.tokens_computed - a.tokens_computed;
    return s;
}

/* Steps until idle; rows[k] gets what step k+1 computed (cap entries). */
static void drain(ember_engine *e, uint64_t *rows, size_t cap)
{
    ember_status s;
    uint64_t n;
    while ((s = step(e, &n)) == EMBER_OK)
        if (rows && step_no <= cap) rows[step_no - 1] = n;
    CHECKF(s == EMBER_IDLE, "step: %s", ember_engine_error(e));
}

/* All jobs submitted at once, run to the end; stats of the finished engine in *st. */
static void run_jobs(ember_model *m, ember_engine_opts o, const job *jobs, int n, result *res,
                     ember_speculation spec, uint64_t *rows, size_t cap, ember_engine_stats *st)
{
    ember_engine *e = ef_engine(m, o);
    if (!e) return;
    for (int i = 0; i < n; i++) submit(e, &jobs[i], &res[i], NULL, spec);
    step_no = 0;
    drain(e, rows, cap);
    ember_engine_get_stats(e, st);
    CHECK(st->kv_blocks_used == 0);
    ember_engine_destroy(e);
}

static int same_tokens(const result *a, const result *b, int n)
{
    int same = 0;
    for (int i = 0; i < n; i++)
        same += a[i].done == 1 && b[i].done == 1 && a[i].n == b[i].n &&
                memcmp(a[i].tokens, b[i].tokens, a[i].n * sizeof a[i].tokens[0]) == 0;
    return same;
}

static const ember_engine_opts STATIC4 = {.max_seqs = 4, .max_batch_tokens = 256, .batching = EMBER_BATCHING_STATIC};
static const ember_engine_opts RAGGED4 = {.max_seqs = 4, .max_batch_tokens = 256,
                                          .batching = EMBER_BATCHING_STATIC_RAGGED};
static const ember_engine_opts CONT4 = {.max_seqs = 4, .max_batch_tokens = 256};

/* 4 requests of max_tokens 2, 5, 9, 3 start together (their prompts fit one step): step 1
 * computes the prompts and gives each its first token, steps 2..9 compute 4 rows each,
 * and the member that ended at step k pads in steps k+1..9. */
static void test_fixed_shape(ember_model *m, const char *what)
{
    static const uint32_t maxt[4] = {2, 5, 9, 3}, lens[4] = {12, 30, 7, 21};
    job jobs[4];
    uint64_t prompt_tokens = 0, rows[16] = {0};
    for (int i = 0; i < 4; i++) {
        jobs[i] = (job){prompts[i], lens[i], maxt[i]};
        prompt_tokens += lens[i];
    }
    result st_res[4], co_res[4];
    ember_engine_stats st, co;
    run_jobs(m, RAGGED4, jobs, 4, st_res, (ember_speculation){0}, rows, 16, &st);
    run_jobs(m, CONT4, jobs, 4, co_res, (ember_speculation){0}, NULL, 0, &co);
    printf("%s: static, ragged prefill: %llu steps, %llu padding tokens, %llu computed; continuous %llu steps, %llu computed\n", what,
           (unsigned long long)st.steps, (unsigned long long)st.padding_tokens,
           (unsigned long long)st.tokens_computed, (unsigned long long)co.steps,
           (unsigned long long)co.tokens_computed);
    CHECKF(same_tokens(st_res, co_res, 4) == 4, "%s: static batching changed tokens", what);
    CHECK(st.steps == 9 && st.padding_tokens == (9 - 2) + (9 - 5) + (9 - 3));
    CHECK(st.tokens_computed == prompt_tokens + 8 * 4);
    CHECK(rows[0] == prompt_tokens);
    for (int k = 1; k < 9; k++) CHECKF(rows[k] == 4, "%s: step %d computed %llu rows, not 4", what, k + 1,
                                       (unsigned long long)rows[k]);
    for (int i = 0; i < 4; i++)
        CHECK(st_res[i].n == maxt[i] && st_res[i].done_step == maxt[i] && st_res[i].why == EMBER_FINISH_LENGTH);
    CHECK(co.padding_tokens == 0 && co.tokens_computed == prompt_tokens + (1 + 4 + 8 + 2));
}

/* The same 4 requests with padded prompts. With a budget of 256 tokens the prefill is
 * one step of 4 x 30 rows (50 of them padding), then 8 decode steps as before. With 32
 * the prefill takes 32 + 32 + 32 + 24 rows over four steps (members are admitted in
 * steps 1 and 2, padding follows each prompt) and only then do all four decode. */
static void test_padded_prompts(ember_model *m, const char *what, uint32_t budget)
{
    static const uint32_t maxt[4] = {2, 5, 9, 3}, lens[4] = {12, 30, 7, 21};
    job jobs[4];
    for (int i = 0; i < 4; i++) jobs[i] = (job){prompts[i], lens[i], maxt[i]};
    result st_res[4], co_res[4];
    ember_engine_stats st, co;
    uint64_t rows[16] = {0};
    ember_engine_opts o = STATIC4;
    o.max_batch_tokens = budget;
    run_jobs(m, o, jobs, 4, st_res, (ember_speculation){0}, rows, 16, &st);
    run_jobs(m, CONT4, jobs, 4, co_res, (ember_speculation){0}, NULL, 0, &co);
    uint32_t prefill_steps = budget >= 120 ? 1 : 4;
    printf("%s, budget %u: static, padded prompts: %llu steps, %llu padding tokens, rows %llu %llu %llu %llu %llu\n",
           what, budget, (unsigned long long)st.steps, (unsigned long long)st.padding_tokens,
           (unsigned long long)rows[0], (unsigned long long)rows[1], (unsigned long long)rows[2],
           (unsigned long long)rows[3], (unsigned long long)rows[4]);
    CHECKF(same_tokens(st_res, co_res, 4) == 4, "%s: padded prompts changed tokens", what);
    CHECK(st.padding_tokens == 50 + 17 && st.tokens_computed == 4 * 30 + 8 * 4);
    CHECK(st.steps == prefill_steps + 8);
    if (prefill_steps == 1) CHECK(rows[0] == 120);
    else CHECK(rows[0] == 32 && rows[1] == 32 && rows[2] == 32 && rows[3] == 24);
    for (uint32_t k = prefill_steps; k < prefill_steps + 8; k++) CHECK(rows[k] == 4);
    /* each member's second token comes from the first decode step */
    for (int i = 0; i < 4; i++)
        CHECK(st_res[i].n == maxt[i] && st_res[i].done_step == prefill_steps + maxt[i] - 1);
}

/* 6 requests, 4 at a time: the last two wait for the whole first batch (step 9) under
 * static batching, and take the first free slot (step 3) under continuous batching. */
static void test_no_join(ember_model *m)
{
    static const uint32_t maxt[6] = {2, 5, 9, 3, 4, 6}, lens[6] = {12, 30, 7, 21, 9, 16};
    job jobs[6];
    for (int i = 0; i < 6; i++) jobs[i] = (job){prompts[4 + i], lens[i], maxt[i]};
    result st_res[6], co_res[6];
    ember_engine_stats st, co;
    run_jobs(m, RAGGED4, jobs, 6, st_res, (ember_speculation){0}, NULL, 0, &st);
    run_jobs(m, CONT4, jobs, 6, co_res, (ember_speculation){0}, NULL, 0, &co);
    printf("no join: static, ragged prefill: requests 5 and 6 got their first token at steps %llu and %llu "
           "(batch 1 ended at step %llu); continuous: %llu and %llu\n",
           (unsigned long long)st_res[4].first_step, (unsigned long long)st_res[5].first_step,
           (unsigned long long)st_res[2].done_step, (unsigned long long)co_res[4].first_step,
           (unsigned long long)co_res[5].first_step);
    CHECK(same_tokens(st_res, co_res, 6) == 6);
    for (int i = 0; i < 4; i++) CHECK(st_res[i].first_step == 1);
    CHECK(st_res[2].done_step == 9 && st_res[4].first_step == 10 && st_res[5].first_step == 10);
    /* batch 2: the 4-token member pads while the 6-token one makes its last 2 */
    CHECK(st.padding_tokens == 17 + 2 && st.steps == 15);
    CHECK(co_res[4].first_step == 3 && co.padding_tokens == 0);
}

/* A member cancelled after 4 tokens is reported at once and pads on to the batch's end. */
static void test_cancel(ember_model *m)
{
    job j = {prompts[10], 20, 10};
    result r[3], ref;
    ember_request_id ids[3];
    ember_engine_stats st;
    run_jobs(m, STATIC4, &j, 1, &ref, (ember_speculation){0}, NULL, 0, &st);
    ember_engine *e = ef_engine(m, STATIC4);
    if (!e) return;
    for (int i = 0; i < 3; i++) submit(e, &j, &r[i], &ids[i], (ember_speculation){0});
    step_no = 0;
    for (int k = 0; k < 4; k++) step(e, NULL);
    CHECK(ember_cancel(e, ids[1]) == EMBER_OK);
    step(e, NULL);
    CHECK(r[1].done == 1 && r[1].why == EMBER_FINISH_CANCELLED && r[1].n == 4 && r[1].done_step == 5);
    CHECK(ember_cancel(e, ids[1]) == EMBER_ERR_NOT_FOUND); /* padding is no longer a request */
    CHECK(ember_engine_pending(e) == 2);
    drain(e, NULL, 0);
    ember_engine_get_stats(e, &st);
    printf("cancel: cancelled member padded %llu tokens\n", (unsigned long long)st.padding_tokens);
    CHECK(st.padding_tokens == 10 - 4 && st.kv_blocks_used == 0);
    CHECK(same_tokens(&r[0], &ref, 1) == 1 && same_tokens(&r[2], &ref, 1) == 1);
    CHECK(memcmp(r[1].tokens, ref.tokens, 4 * sizeof ref.tokens[0]) == 0);
    ember_engine_destroy(e);
}

/* A padding row stops at the context's end (256): the 200-token prompt that ends after 4
 * tokens pads positions 203..255, 53 tokens, while its batch runs for 100 decode steps.
 * The 10-token prompt is padded to 200 first (190 rows, in steps 1 and 2). */
static void test_context_end(ember_model *m)
{
    job jobs[2] = {{prompts[11], 200, 4}, {prompts[12], 10, 100}};
    result st_res[2], co_res[2];
    ember_engine_stats st, co;
    run_jobs(m, STATIC4, jobs, 2, st_res, (ember_speculation){0}, NULL, 0, &st);
    run_jobs(m, CONT4, jobs, 2, co_res, (ember_speculation){0}, NULL, 0, &co);
    printf("context end: %llu padding tokens over %llu steps\n", (unsigned long long)st.padding_tokens,
           (unsigned long long)st.steps);
    CHECK(same_tokens(st_res, co_res, 2) == 2 && st_res[1].n == 100);
    CHECK(st.padding_tokens == (256 - 203) + 190 && st.steps == 101);
}

/* With 10 blocks of 16 tokens, a member that ends after 2 tokens pads beside one of 100
 * at the same positions until the pool is full: when the real one needs its 6th block
 * (position 80, step 72) the padding row gives its 5 up instead of anyone being
 * preempted; it padded positions 11..79, 69 tokens. */
static void test_padding_yields_blocks(ember_model *m)
{
    job jobs[2] = {{prompts[13], 10, 2}, {prompts[14], 10, 100}};
    result st_res[2], co_res[2];
    ember_engine_stats st, co;
    ember_engine_opts o = STATIC4;
    o.kv_blocks = 10;
    run_jobs(m, o, jobs, 2, st_res, (ember_speculation){0}, NULL, 0, &st);
    run_jobs(m, CONT4, jobs, 2, co_res, (ember_speculation){0}, NULL, 0, &co);
    printf("10 KV blocks: %llu padding tokens, %llu preemptions, peak %u blocks\n",
           (unsigned long long)st.padding_tokens, (unsigned long long)st.preemptions, st.kv_peak_blocks_used);
    CHECK(same_tokens(st_res, co_res, 2) == 2 && st_res[1].n == 100);
    CHECK(st.preemptions == 0 && st.padding_tokens == 69 && st.kv_peak_blocks_used == 10);
}

/* 16 requests of 5-200 prompt tokens and 4-24 output tokens, half joining later, with
 * chunked prefill; with too few blocks padding rows give theirs up and real requests
 * are preempted and recomputed: same tokens as continuous batching either way. */
static void run_mixed(ember_model *m, ember_engine_opts o, result *res, ember_engine_stats *st)
{
    ember_engine *e = ef_engine(m, o);
    if (!e) return;
    job jobs[NREQ];
    for (int i = 0; i < NREQ; i++) jobs[i] = (job){prompts[i], plen[i], 4 + (uint32_t)(i * 7) % 21};
    step_no = 0;
    for (int i = 0; i < NREQ / 2; i++) submit(e, &jobs[i], &res[i], NULL, (ember_speculation){0});
    for (int k = 0; k < 6; k++) step(e, NULL);
    for (int i = NREQ / 2; i < NREQ; i++) {
        submit(e, &jobs[i], &res[i], NULL, (ember_speculation){0});
        step(e, NULL);
    }
    drain(e, NULL, 0);
    ember_engine_get_stats(e, st);
    CHECK(st->kv_blocks_used == 0);
    ember_engine_destroy(e);
}

static void test_mixed_and_few_blocks(ember_model *m, ember_batching mode)
{
    static result ref[NREQ], res[NREQ];
    ember_engine_stats st;
    ember_engine_opts o = {.max_seqs = 16, .max_batch_tokens = 128};
    const char *name = mode == EMBER_BATCHING_STATIC ? "static" : "static, ragged prefill";
    run_mixed(m, o, ref, &st);
    o.batching = mode;
    run_mixed(m, o, res, &st);
    int same = same_tokens(res, ref, NREQ);
    printf("16 mixed, %s: %d/%d identical to continuous, %llu padding tokens\n", name, same, NREQ,
           (unsigned long long)st.padding_tokens);
    CHECK(same == NREQ && st.padding_tokens > 0);
    o.kv_blocks = 24; /* cannot hold 16 sequences of up to 224 tokens */
    run_mixed(m, o, res, &st);
    same = same_tokens(res, ref, NREQ);
    printf("16 mixed, %s, 24 KV blocks: %d/%d identical, %llu preemptions, %llu padding tokens, peak %u blocks\n",
           name, same, NREQ, (unsigned long long)st.preemptions, (unsigned long long)st.padding_tokens,
           st.kv_peak_blocks_used);
    CHECK(same == NREQ && st.preemptions > 0);
}

/* Padding rows do not speculate; real members do, and keep their tokens. */
static void test_speculation(ember_model *m)
{
    static const uint32_t maxt[4] = {6, 20, 40, 12};
    job jobs[4];
    for (int i = 0; i < 4; i++) jobs[i] = (job){prompts[i], 40, maxt[i]};
    result plain[4], spec[4];
    ember_engine_stats st;
    run_jobs(m, STATIC4, jobs, 4, plain, (ember_speculation){0}, NULL, 0, &st);
    run_jobs(m, STATIC4, jobs, 4, spec, (ember_speculation){.draft_k = 3, .ngram = 2}, NULL, 0, &st);
    printf("n-gram speculation, static: %llu steps, %llu padding tokens\n", (unsigned long long)st.steps,
           (unsigned long long)st.padding_tokens);
    CHECK(same_tokens(spec, plain, 4) == 4 && st.padding_tokens > 0);
}

/* The worker thread: a batch's padding ends with its last member, so waiting for idle
 * returns with nothing left behind. */
static void test_worker_thread(ember_model *m)
{
    static const uint32_t maxt[6] = {2, 5, 9, 3, 4, 6};
    job jobs[6];
    for (int i = 0; i < 6; i++) jobs[i] = (job){prompts[i], 16, maxt[i]};
    result ref[6], res[6];
    ember_engine_stats st;
    run_jobs(m, CONT4, jobs, 6, ref, (ember_speculation){0}, NULL, 0, &st);
    ember_engine *e = ef_engine(m, STATIC4);
    if (!e) return;
    CHECK(ember_engine_start(e) == EMBER_OK);
    for (int i = 0; i < 6; i++) submit(e, &jobs[i], &res[i], NULL, (ember_speculation){0});
    ember_engine_wait_idle(e);
    ember_engine_stop(e);
    ember_engine_get_stats(e, &st);
    printf("worker thread, static: %d/6 identical, %llu padding tokens\n", same_tokens(res, ref, 6),
           (unsigned long long)st.padding_tokens);
    CHECK(same_tokens(res, ref, 6) == 6 && st.kv_blocks_used == 0 && ember_engine_pending(e) == 0);
    ember_engine_destroy(e);
}

static char model_path[512];

static ember_model *load(ember_backend b)
{
    ember_model_opts mo = {.backend = b, .enable_validation = tu_validation()};
    ember_model *m = NULL;
    if (ember_model_load(model_path, &mo, &m) == EMBER_OK) return m;
    fprintf(stderr, "%s\n", ember_model_error(m));
    ember_model_free(m);
    return NULL;
}

int main(void)
{
    snprintf(model_path, sizeof model_path, "%s/static_batching.gguf", tu_tmp_dir());
    tu_make_model(model_path, "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 256 "
                              "--type q8_0 --seed 21");
    make_prompts(512);
    ember_model *cpu = load(EMBER_BACKEND_CPU);
    CHECK(cpu != NULL);
    if (cpu) test_fixed_shape(cpu, "cpu reference");
    if (cpu) test_padded_prompts(cpu, "cpu reference", 32);
    ember_model_free(cpu);
    ember_model *m = load(EMBER_BACKEND_VULKAN);
    if (!m)
        return tu_failures ? tu_finish("test_static_batching") : tu_skip("cannot load the test model on a Vulkan device");
    test_fixed_shape(m, "vulkan");
    test_padded_prompts(m, "vulkan", 256);
    test_padded_prompts(m, "vulkan", 32);
    test_no_join(m);
    test_cancel(m);
    test_context_end(m);
    test_padding_yields_blocks(m);
    test_mixed_and_few_blocks(m, EMBER_BATCHING_STATIC);
    test_mixed_and_few_blocks(m, EMBER_BATCHING_STATIC_RAGGED);
    test_speculation(m);
    test_worker_thread(m);
    char first[512];
    uint32_t nv = ember_model_validation_messages(m, first, sizeof first);
    CHECKF(nv == 0, "%u validation messages: %s", nv, first);
    ember_model_free(m);
    return tu_finish("test_static_batching");
}
