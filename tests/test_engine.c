/* test_engine.c — the serving engine through the public API (include/ember.h):
 *  - batch invariance: greedy tokens of 16 requests run alone equal those of the same
 *    requests served together, prompts of different lengths joining mid-way;
 *  - preemption: with too few KV blocks every request completes, with the same tokens;
 *  - chunks sized by cost (chunk_ctx): a long prompt's chunks shrink as its positions grow,
 *    exactly as the rule says, with the same tokens;
 *  - prefix caching: a repeated prefix is served from the cache, same tokens; copy on
 *    write of shared blocks a request continues; n samples of one prompt (a group) share
 *    its blocks, with the tokens their seeds give alone;
 *  - seeded sampling, greedy on penalized logits, stop strings, cancellation (blocks freed
 *    at once); sampling from the GPU's candidates gives the tokens whole rows give, and
 *    each request takes the path its filters allow (the CPU backend: rows only);
 *  - the worker-thread mode with submits from several threads;
 *  - bad input: invalid UTF-8, an empty prompt, a prompt longer than the context;
 *  - the context's end: a reply that reaches it ends EMBER_FINISH_CONTEXT, one that ends
 *    with max_tokens there EMBER_FINISH_LENGTH; truncate_prompt_tokens keeps the last N
 *    prompt tokens (the same tokens as a request of those N);
 *  - a context longer than the device can attend over (lavapipe) is capped, not wrong. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "engine_fixture.h"
#include "testutil.h"

static void drain(ember_engine *e)
{
    ember_status s;
    while ((s = ember_engine_step(e)) == EMBER_OK) {}
    CHECKF(s == EMBER_IDLE, "step: %s", ember_engine_error(e));
}

/* 16 prompts of lengths 5..200 made of seeded random tokens. */
#define NREQ 16
static uint32_t prompts[NREQ][200];
static uint32_t plen[NREQ];

static void make_prompts(uint32_t n_vocab)
{
    tu_rng rng = {5};
    for (int i = 0; i < NREQ; i++) {
        plen[i] = 5 + (uint32_t)(tu_next(&rng) % 196);
        for (uint32_t j = 0; j < plen[i]; j++) prompts[i][j] = 3 + (uint32_t)(tu_next(&rng) % (n_vocab - 3));
    }
}

static void run_alone(ember_model *m, ef_result *alone, uint32_t n_gen)
{
    ember_engine *e = ef_engine(m, (ember_engine_opts){.max_seqs = 1});
    for (int i = 0; e && i < NREQ; i++) {
        ember_request_desc d = ef_desc(prompts[i], plen[i], n_gen, &alone[i]);
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
        drain(e);
        CHECK(alone[i].done == 1 && alone[i].n == n_gen);
    }
    ember_engine_destroy(e);
}

/* Half the requests start together; the rest join while those decode. */
static void run_together(ember_model *m, ember_engine_opts o, ef_result *res, uint32_t n_gen, const char *what,
                         const ef_result *alone)
{
    ember_engine *e = ef_engine(m, o);
    if (!e) return;
    for (int i = 0; i < NREQ / 2; i++) {
        ember_request_desc d = ef_desc(prompts[i], plen[i], n_gen, &res[i]);
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
    for (int k = 0; k < 6; k++) ember_engine_step(e);
    for (int i = NREQ / 2; i < NREQ; i++) {
        ember_request_desc d = ef_desc(prompts[i], plen[i], n_gen, &res[i]);
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
        ember_engine_step(e);
    }
    drain(e);
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    int same = ef_count_same(res, alone, NREQ, n_gen);
    printf("%s: %d/%d requests identical to running alone; %llu preemptions, peak %u of %u blocks\n", what, same,
           NREQ, (unsigned long long)st.preemptions, st.kv_peak_blocks_used, st.kv_blocks_total);
    CHECKF(same == NREQ, "%s: batch changed results", what);
    CHECK(st.kv_blocks_used == 0);
    ember_engine_destroy(e);
}

static void test_invariance_and_preemption(ember_model *m)
{
    static ef_result alone[NREQ], res[NREQ];
    const uint32_t n_gen = 24;
    run_alone(m, alone, n_gen);
    run_together(m, (ember_engine_opts){.max_seqs = 16, .max_batch_tokens = 128}, res, n_gen,
                 "16 together, chunked prefill", alone);
    /* 40 blocks of 16 tokens cannot hold 16 sequences of up to 224 tokens. */
    run_together(m, (ember_engine_opts){.max_seqs = 16, .max_batch_tokens = 128, .kv_blocks = 40}, res, n_gen,
                 "16 together, 40 KV blocks", alone);
    ember_engine *e = ef_engine(m, (ember_engine_opts){.max_seqs = 16, .max_batch_tokens = 128, .kv_blocks = 40});
    if (e) {
        for (int i = 0; i < NREQ; i++) {
            ember_request_desc d = ef_desc(prompts[i], plen[i], n_gen, &res[i]);
            CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
        }
        drain(e);
        ember_engine_stats st;
        ember_engine_get_stats(e, &st);
        CHECKF(st.preemptions > 0, "no preemption with 40 blocks");
        ember_engine_destroy(e);
    }
}

/* chunk_ctx 64, budget 32: a prompt row at position p costs 1 + p/64, so a chunk from p0
 * of n rows costs n + ceil((n*p0 + n(n-1)/2) / 64) and each step takes the most rows
 * that fit (at least one). A 200-token prompt alone: the chunks must follow that rule
 * and shrink, and the tokens must equal those of plain 32-row chunks; 16 requests
 * joining mid-way with chunk_ctx still give the tokens of each alone. */
static void test_chunk_ctx(ember_model *m, const ef_result *alone)
{
    static ef_result res[NREQ];
    run_together(m, (ember_engine_opts){.max_seqs = 16, .max_batch_tokens = 128, .chunk_ctx = 64}, res, 24,
                 "16 together, chunks sized by cost", alone);
    uint32_t p[200];
    for (uint32_t i = 0; i < 200; i++) p[i] = prompts[i % NREQ][i % plen[i % NREQ]];
    ef_result plain, costed;
    ember_engine *e = ef_engine(m, (ember_engine_opts){.max_seqs = 1, .max_batch_tokens = 32, .no_prefix_cache = 1});
    ember_request_desc d = ef_desc(p, 200, 8, &plain);
    if (e && ember_submit(e, &d, NULL) == EMBER_OK) drain(e);
    ember_engine_destroy(e);
    e = ef_engine(m, (ember_engine_opts){.max_seqs = 1, .max_batch_tokens = 32, .chunk_ctx = 64, .no_prefix_cache = 1});
    if (!e) return;
    d = ef_desc(p, 200, 8, &costed);
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    uint32_t p0 = 0, steps = 0, bad = 0, first = 0, last = 0;
    while (p0 < 200) {
        uint32_t n = 200 - p0 < 32 ? 200 - p0 : 32;
        while (n > 1 && n + (n * p0 + n * (n - 1) / 2 + 63) / 64 > 32) n--;
        ember_engine_stats a, b;
        ember_engine_get_stats(e, &a);
        CHECK(ember_engine_step(e) == EMBER_OK);
        ember_engine_get_stats(e, &b);
        bad += b.tokens_computed - a.tokens_computed != n;
        if (!steps) first = n;
        last = n, p0 += n, steps++;
    }
    drain(e);
    printf("chunk_ctx 64: the 200-token prompt took %u steps, chunks from %u rows down to %u\n", steps, first, last);
    CHECKF(bad == 0, "%u prefill steps computed another number of rows than the rule gives", bad);
    CHECK(first == 26 && last < 8);
    CHECK(costed.done == 1 && plain.done == 1 && costed.n == 8 && memcmp(costed.tokens, plain.tokens, 8 * 4) == 0);
    ember_engine_destroy(e);
}

/* Tokens of prompt p served alone with no cache (the reference). */
static void run_uncached(ember_model *m, const uint32_t *p, size_t n, uint32_t n_gen, ef_result *r)
{
    ember_engine *e = ef_engine(m, (ember_engine_opts){.no_prefix_cache = 1});
    ember_request_desc d = ef_desc(p, n, n_gen, r);
    if (e && ember_submit(e, &d, NULL) == EMBER_OK) drain(e);
    ember_engine_destroy(e);
}

/* Serves p1, then p2, one after the other on engine e; *st: the stats after both. */
static void run_in_turn(ember_engine *e, const uint32_t *p1, size_t n1, ef_result *r1, const uint32_t *p2, size_t n2,
                        ef_result *r2, uint32_t n_gen, ember_engine_stats *st)
{
    ember_request_desc d = ef_desc(p1, n1, n_gen, r1);
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    drain(e);
    d = ef_desc(p2, n2, n_gen, r2);
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    drain(e);
    ember_engine_get_stats(e, st);
}

static void test_prefix_cache(ember_model *m)
{
    uint32_t a[100], b[100];
    memcpy(a, prompts[0], sizeof a);
    memcpy(b, prompts[0], 64 * sizeof b[0]); /* same 64-token prefix, different tail */
    memcpy(b + 64, prompts[1], 36 * sizeof b[0]);
    ef_result ra, rb, rb_alone;
    run_uncached(m, b, 100, 16, &rb_alone);
    ember_engine *e = ef_engine(m, (ember_engine_opts){0});
    if (!e) return;
    ember_engine_stats st;
    run_in_turn(e, a, 100, &ra, b, 100, &rb, 16, &st);
    printf("prefix cache: second request took %u tokens from the cache\n", rb.m.n_cached);
    CHECK(ra.m.n_cached == 0 && rb.m.n_cached == 64 && st.prefix_hit_tokens == 64);
    CHECK(rb.n == 16 && memcmp(rb.tokens, rb_alone.tokens, 16 * 4) == 0);
    ember_engine_destroy(e);
}

/* Copy on write: a request may take a cached block it will write into (a partly filled
 * block another request ended in, or a full block whose last slot it must compute), and
 * gets a private copy first. Two requests continuing the same partly filled block run
 * together: had either written into the shared block, the other would read the wrong
 * K/V and its tokens would differ from the uncached run. */
static void test_copy_on_write(ember_model *m)
{
    /* The same 96-token prompt (6 blocks of 16) twice: 95 tokens from the cache. */
    uint32_t p96[96];
    memcpy(p96, prompts[0], sizeof p96);
    ef_result ref, r1, r2;
    run_uncached(m, p96, 96, 16, &ref);
    ember_engine *e = ef_engine(m, (ember_engine_opts){0});
    if (!e) return;
    ember_engine_stats st;
    run_in_turn(e, p96, 96, &r1, p96, 96, &r2, 16, &st);
    printf("copy on write: same prompt again took %u of 96 tokens from the cache, %llu copies\n", r2.m.n_cached,
           (unsigned long long)st.cow_copies);
    CHECK(r1.m.n_cached == 0 && r2.m.n_cached == 95 && st.cow_copies == 1);
    CHECK(r2.n == 16 && memcmp(r2.tokens, ref.tokens, 16 * 4) == 0);
    ember_engine_destroy(e);

    /* A: 50 prompt tokens + 10 generated; its K/V covers 59 positions, the last block
     * 11 of them. B and C continue A's text (prompt + the 9 generated tokens in the
     * cache) with different tails, at the same time. */
    uint32_t pa[50], pb[69], pc[69];
    memcpy(pa, prompts[1], sizeof pa);
    ef_result ra, rb, rc, rb_ref, rc_ref;
    e = ef_engine(m, (ember_engine_opts){0});
    if (!e) return;
    ember_request_desc d = ef_desc(pa, 50, 10, &ra);
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    drain(e);
    CHECK(ra.n == 10);
    memcpy(pb, pa, sizeof pa);
    memcpy(pb + 50, ra.tokens, 9 * sizeof pb[0]);
    memcpy(pc, pb, sizeof pc);
    memcpy(pb + 59, prompts[2], 10 * sizeof pb[0]);
    memcpy(pc + 59, prompts[3], 10 * sizeof pc[0]);
    run_uncached(m, pb, 69, 16, &rb_ref);
    run_uncached(m, pc, 69, 16, &rc_ref);
    d = ef_desc(pb, 69, 16, &rb);
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    d = ef_desc(pc, 69, 16, &rc);
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    drain(e);
    ember_engine_get_stats(e, &st);
    printf("copy on write: continuations took %u and %u of 69 tokens from the cache, %llu copies\n", rb.m.n_cached,
           rc.m.n_cached, (unsigned long long)st.cow_copies);
    CHECK(rb.m.n_cached == 59 && rc.m.n_cached == 59 && st.cow_copies == 2);
    CHECK(rb.n == 16 && memcmp(rb.tokens, rb_ref.tokens, 16 * 4) == 0);
    CHECK(rc.n == 16 && memcmp(rc.tokens, rc_ref.tokens, 16 * 4) == 0);
    ember_engine_destroy(e);
}

/* n = 8 samples of a 96-token prompt at temperature 1, each with its own seed, as one
 * group and as 8 separate requests: the same tokens per seed, and the group computes the
 * prompt once (the others take 95 tokens from the cache) and holds its 5 full blocks
 * once: 5 + 8 x 2 blocks (block 5 copied by each, block 6 its own) against 8 x 7 when
 * the separate requests are admitted together (one step's budget holds all 8 prompts;
 * with a smaller one, the later ones find the first one's full blocks cached). */
static uint32_t eight_samples(ember_model *m, uint64_t group, ef_result *res)
{
    ember_engine *e = ef_engine(m, (ember_engine_opts){.max_seqs = 8, .max_batch_tokens = 8 * 96});
    if (!e) return 0;
    for (int i = 0; i < 8; i++) {
        ember_request_desc d = ef_desc(prompts[0], 96, 15, &res[i]);
        d.sampling = (ember_sampling){.temperature = 1.0f, .seed = 100 + (uint64_t)i};
        d.prompt_group = group;
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
    drain(e);
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    ember_engine_destroy(e);
    return st.kv_peak_blocks_used;
}

static void test_prompt_group(ember_model *m)
{
    ef_result grouped[8], separate[8];
    uint32_t peak_grouped = eight_samples(m, 42, grouped), peak_separate = eight_samples(m, 0, separate);
    printf("n = 8 samples of a 96-token prompt: peak %u KV blocks as a group, %u as separate requests\n",
           peak_grouped, peak_separate);
    CHECKF(peak_grouped == 5 + 8 * 2 && peak_separate == 8 * 7, "peak blocks %u, %u", peak_grouped, peak_separate);
    CHECK(ef_count_same(grouped, separate, 8, 15) == 8);
    CHECK(grouped[0].m.n_cached == 0);
    for (int i = 1; i < 8; i++) CHECKF(grouped[i].m.n_cached == 95, "sample %d: %u cached", i, grouped[i].m.n_cached);
    int differ = 0; /* the seeds are the samples' own */
    for (int i = 1; i < 8; i++) differ += memcmp(grouped[i].tokens, grouped[0].tokens, 15 * 4) != 0;
    CHECK(differ == 7);
}

/* Temperature 0 is the arg-max of the penalized logits (docs/sampling.md): with frequency and
 * presence penalties of 100 over a window that holds the whole prompt, no token of the prompt
 * or of the output comes again, with and without n-gram speculation. (Greedy requests took
 * the step's plain arg-max, ignoring their penalties, until test_soak found it.) */
static void test_greedy_penalties(ember_model *m)
{
    ember_engine *e = ef_engine(m, (ember_engine_opts){0});
    if (!e) return;
    static ef_result r[3];
    const uint32_t *p = prompts[5];
    for (int i = 0; i < 3; i++) {
        ember_request_desc d = ef_desc(p, plen[5], 32, &r[i]);
        d.sampling = (ember_sampling){.frequency_penalty = 100, .presence_penalty = 100, .penalty_last_n = 256};
        if (i == 1) d.spec = (ember_speculation){.draft_k = 4, .ngram = 1};
        if (i == 2) d.sampling = (ember_sampling){0}; /* plain greedy: repeats tokens */
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
    drain(e);
    uint32_t repeats[3] = {0};
    for (int k = 0; k < 3; k++)
        for (uint32_t i = 0; i < r[k].n; i++) {
            bool again = false;
            for (uint32_t j = 0; j < plen[5]; j++) again |= p[j] == r[k].tokens[i];
            for (uint32_t j = 0; j < i; j++) again |= r[k].tokens[j] == r[k].tokens[i];
            repeats[k] += again;
        }
    printf("greedy with penalties: %u and %u (n-gram) of 32 tokens repeat one before them; %u without penalties\n",
           repeats[0], repeats[1], repeats[2]);
    CHECK(r[0].n == 32 && r[1].n == 32 && repeats[0] == 0 && repeats[2] > 0);
    CHECK(r[0].n == r[1].n && memcmp(r[0].tokens, r[1].tokens, r[0].n * sizeof r[0].tokens[0]) == 0);
    ember_engine_destroy(e);
}

static void test_sampling_and_stop(ember_model *m)
{
    ef_result r1, r2, r3, rs;
    ember_engine *e = ef_engine(m, (ember_engine_opts){0});
    if (!e) return;
    ember_request_desc d = ef_desc(prompts[2], plen[2], 32, &r1);
    d.sampling = (ember_sampling){.temperature = 1.0f, .top_k = 50, .seed = 1234};
    ember_submit(e, &d, NULL);
    d.user = &r2;
    memset(&r2, 0, sizeof r2);
    ember_submit(e, &d, NULL); /* same seed, served in the same batch */
    d.user = &r3;
    memset(&r3, 0, sizeof r3);
    d.sampling.seed = 99;
    ember_submit(e, &d, NULL);
    drain(e);
    CHECK(r1.n == 32 && r2.n == 32 && memcmp(r1.tokens, r2.tokens, 32 * 4) == 0);
    CHECK(memcmp(r1.tokens, r3.tokens, 32 * 4) != 0);

    /* A stop string taken from the middle of r1's text ends the request before it. */
    if (r1.text_len > 20) {
        char stop[8] = {0};
        memcpy(stop, r1.text + r1.text_len / 2, 4);
        d = ef_desc(prompts[2], plen[2], 32, &rs);
        d.sampling = (ember_sampling){.temperature = 1.0f, .top_k = 50, .seed = 1234};
        d.stop[0] = stop;
        ember_submit(e, &d, NULL);
        drain(e);
        const char *at = strstr(r1.text, stop);
        size_t want = at ? (size_t)(at - r1.text) : 0;
        CHECKF(rs.why == EMBER_FINISH_STOP && rs.text_len == want && memcmp(rs.text, r1.text, want) == 0,
               "stop: why %d len %zu want %zu", rs.why, rs.text_len, want);
    }
    ember_engine_destroy(e);
    test_greedy_penalties(m);
}

/* Sampling from the GPU's candidates (a row's EMBER_CANDIDATES best logits, engine.c)
 * gives the tokens that sampling from whole rows gives, for samplers with a filter: each
 * request runs as is and again with a logit bias of 0 (a no-op on the distribution that
 * makes the engine read whole rows), all in one batch, same seeds. Temperature alone draws
 * through the candidates in another order (docs/sampling.md): its copy is a third request
 * of the same seed, the same tokens. The engine's counters say which path each took:
 * with candidates forced (lavapipe's default is rows) top-k and min-p requests read
 * candidates, a flat top-p nucleus falls back to its row (fetched after the step), as does
 * a temperature-only draw past the candidates; the biased copies read rows; with rows, or
 * on the CPU, all read rows. */
static void test_sampling_paths(ember_model *m, bool gpu, ember_sample_from from)
{
    enum { N = 6 };
    static const ember_sampling cases[N] = {
        {.temperature = 1.0f, .top_k = 40, .seed = 1},
        {.temperature = 0.8f, .top_k = 60, .top_p = 0.9f, .min_p = 0.02f, .seed = 2},
        {.temperature = 1.2f, .min_p = 0.2f, .seed = 3},
        {.temperature = 1.0f, .top_k = 40, .repetition_penalty = 1.3f, .seed = 6}, /* reorders candidates */
        {.temperature = 1.0f, .top_p = 0.999f, .seed = 4}, /* ~all of 512 tokens: past the candidates */
        {.temperature = 0.9f, .seed = 5},                    /* no filter: the whole row */
    };
    static ef_result plain[N], biased[N], again;
    ember_logit_bias zero = {7, 0.0f};
    ember_engine *e = ef_engine(m, (ember_engine_opts){.sample_from = from});
    if (!e) return;
    for (int i = 0; i < N; i++) {
        ember_request_desc d = ef_desc(prompts[i], plen[i], 24, &plain[i]);
        d.sampling = cases[i];
        ember_submit(e, &d, NULL);
        d = ef_desc(prompts[i], plen[i], 24, &biased[i]);
        d.sampling = cases[i];
        d.sampling.logit_bias = &zero;
        d.sampling.n_logit_bias = 1;
        ember_submit(e, &d, NULL);
    }
    ember_request_desc d = ef_desc(prompts[N - 1], plen[N - 1], 24, &again);
    d.sampling = cases[N - 1];
    ember_submit(e, &d, NULL);
    drain(e);
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    bool whole_differs = gpu && from == EMBER_SAMPLE_CANDIDATES; /* temperature alone */
    int same = ef_count_same(plain, biased, N - whole_differs, 24);
    CHECKF(same == N - whole_differs, "%d of %d requests sampled the same from candidates and rows", same,
           N - whole_differs);
    CHECK(ef_same_tokens(&plain[N - 1], &again, 24));
    printf("sampling paths (%s, sample_from %d): %llu tokens from candidates, %llu from whole rows\n",
           gpu ? "GPU" : "CPU", (int)from, (unsigned long long)st.sampled_from_candidates,
           (unsigned long long)st.sampled_from_rows);
    /* Rows: the 6 biased requests and top-p 0.999 (falls back); temperature alone (2
     * requests) mostly from candidates. */
    uint64_t total = (2 * N + 1) * 24;
    if (whole_differs)
        CHECK(st.sampled_from_candidates > 4 * 24 && st.sampled_from_rows >= 7 * 24 &&
              st.sampled_from_candidates + st.sampled_from_rows == total);
    else
        CHECK(st.sampled_from_candidates == 0 && st.sampled_from_rows == total);
    ember_engine_destroy(e);
}

static void test_cancel(ember_model *m)
{
    ef_result r[3];
    ember_request_id ids[3];
    ember_engine *e = ef_engine(m, (ember_engine_opts){0});
    if (!e) return;
    for (int i = 0; i < 3; i++) {
        ember_request_desc d = ef_desc(prompts[i], plen[i], 60, &r[i]);
        CHECK(ember_submit(e, &d, &ids[i]) == EMBER_OK);
    }
    for (int k = 0; k < 4; k++) ember_engine_step(e);
    CHECK(ember_cancel(e, ids[1]) == EMBER_OK);
    ember_engine_step(e);
    CHECK(r[1].done == 1 && r[1].why == EMBER_FINISH_CANCELLED);
    CHECK(ember_cancel(e, ids[1]) == EMBER_ERR_NOT_FOUND);
    drain(e);
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    CHECK(r[0].done == 1 && r[2].done == 1 && r[0].n == 60 && r[2].n == 60 && st.kv_blocks_used == 0);
    ember_engine_destroy(e);
}

typedef struct submitter {
    ember_engine *e;
    int first;
    ef_result *res;
} submitter;

static void *submit_some(void *arg)
{
    submitter *s = arg;
    for (int i = s->first; i < s->first + 4; i++) {
        ember_request_desc d = ef_desc(prompts[i], plen[i], 24, &s->res[i]);
        CHECK(ember_submit(s->e, &d, NULL) == EMBER_OK);
    }
    return NULL;
}

static void test_worker_thread(ember_model *m, const ef_result *alone)
{
    static ef_result res[NREQ];
    ember_engine *e = ef_engine(m, (ember_engine_opts){0});
    if (!e) return;
    CHECK(ember_engine_start(e) == EMBER_OK);
    pthread_t t[4];
    submitter s[4];
    for (int i = 0; i < 4; i++) {
        s[i] = (submitter){e, 4 * i, res};
        pthread_create(&t[i], NULL, submit_some, &s[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    ember_engine_wait_idle(e);
    /* Idle means idle in the stats too, before the worker's step has ended (the stats were
     * published only at the end of a step, after the last done callback had woken us). */
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    CHECKF(st.kv_blocks_used == 0 && st.requests_running == 0 && st.requests_waiting == 0,
           "after ember_engine_wait_idle: %u blocks used, %u running, %u waiting", st.kv_blocks_used,
           st.requests_running, st.requests_waiting);
    ember_engine_stop(e);
    int same = ef_count_same(res, alone, NREQ, 24);
    printf("worker thread: %d/%d requests from 4 threads identical\n", same, NREQ);
    CHECK(same == NREQ);
    ember_engine_destroy(e);
}

/* A lone request may use the model's whole context with the default pool, and a pool
 * smaller than one context ends the request that outgrows it through its done callback
 * (EMBER_FINISH_KV_FULL) while the other request goes on. */
static void test_kv_full(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/engine_long_ctx.gguf", tu_tmp_dir());
    tu_make_model(path, "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 2048 --seed 4");
    ember_model_opts mo = {.enable_validation = tu_validation(), .memory = tu_memory_mode()};
    ember_model *m = NULL;
    if (ember_model_load(path, &mo, &m) != EMBER_OK) {
        CHECKF(false, "%s", ember_model_error(m));
        ember_model_free(m);
        return;
    }
    static ef_result lone, big, small;
    ember_engine *e = ef_engine(m, (ember_engine_opts){.max_seqs = 1});
    ember_engine_stats st = {0};
    if (e) {
        ember_request_desc d = ef_desc(prompts[0], plen[0], 2048 - plen[0] - 1, &lone);
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
        drain(e);
        ember_engine_get_stats(e, &st);
        ember_engine_destroy(e);
    }
    printf("a lone request on a 2048 context: %u tokens (%s), pool of %u blocks\n", lone.m.n_gen,
           lone.why == EMBER_FINISH_LENGTH ? "length" : "not length", st.kv_blocks_total);
    CHECK(lone.done == 1 && lone.why == EMBER_FINISH_LENGTH && lone.m.n_gen == 2048 - plen[0] - 1 &&
          st.kv_blocks_total * st.kv_block_size >= 2048);
    e = ef_engine(m, (ember_engine_opts){.max_seqs = 2, .kv_blocks = 4});
    if (e) {
        ember_request_desc d = ef_desc(prompts[1], 10, 200, &big);
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
        d = ef_desc(prompts[2], 5, 10, &small);
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
        drain(e);
        ember_engine_get_stats(e, &st);
        ember_engine_destroy(e);
    }
    printf("a pool of 4 blocks: the long request ended %s after %u tokens, the short one %s with %u; %u blocks "
           "in use after\n", big.why == EMBER_FINISH_KV_FULL ? "kv_full" : "otherwise", big.m.n_gen,
           small.why == EMBER_FINISH_LENGTH ? "length" : "otherwise", small.n, st.kv_blocks_used);
    CHECK(big.done == 1 && big.why == EMBER_FINISH_KV_FULL && big.m.n_gen > 0 && big.m.n_gen < 200);
    CHECK(small.done == 1 && small.why == EMBER_FINISH_LENGTH && small.n == 10 && st.kv_blocks_used == 0);
    ember_model_free(m);
}

static void test_bad_input(ember_model *m)
{
    ember_engine *e = ef_engine(m, (ember_engine_opts){0});
    if (!e) return;
    ef_result r;
    ember_request_desc d = ef_desc(NULL, 0, 4, &r);
    d.prompt = "\xff\xfe broken \xc3 utf-8 \xe2\x82";
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    drain(e);
    CHECK(r.done == 1 && r.n == 4);
    d = ef_desc(NULL, 0, 4, &r);
    d.prompt = "";
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK); /* BOS alone */
    drain(e);
    CHECK(r.done == 1 && r.n == 4);
    static uint32_t longp[300];
    for (int i = 0; i < 300; i++) longp[i] = 5;
    d = ef_desc(longp, 300, 4, &r);
    CHECK(ember_submit(e, &d, NULL) == EMBER_ERR_CONTEXT_FULL);
    CHECK(strstr(ember_engine_error(e), "context") != NULL);
    ember_engine_destroy(e);
    /* An engine whose creation failed takes no request (one would never end), and keeps
     * saying why it failed. */
    ember_engine_opts bad = {.kv_type = (ember_kv_type)7};
    CHECK(ember_engine_create(m, &bad, &e) == EMBER_ERR_INVALID_ARG);
    d = ef_desc(longp, 10, 4, &r);
    CHECK(e && ember_submit(e, &d, NULL) == EMBER_ERR_INVALID_ARG && r.done == 0);
    CHECKF(strstr(ember_engine_error(e), "unknown KV cache type 7") != NULL, "%s", ember_engine_error(e));
    ember_engine_destroy(e);
}

/* The model's context is 256 positions. */
static void test_context_end(ember_model *m)
{
    ember_engine *e = ef_engine(m, (ember_engine_opts){0});
    if (!e) return;
    static uint32_t p[300];
    for (int i = 0; i < 300; i++) p[i] = 3 + (uint32_t)(i * 7 % 500);
    ef_result cut, exact, kept, direct;
    ember_request_desc d = ef_desc(p, 246, 40, &cut); /* 10 positions left, 40 asked */
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    d = ef_desc(p, 246, 10, &exact); /* exactly the positions left */
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    drain(e);
    printf("context end: %u tokens, finish %d; max_tokens at the end: %u tokens, finish %d\n", cut.n, (int)cut.why,
           exact.n, (int)exact.why);
    CHECK(cut.done == 1 && cut.why == EMBER_FINISH_CONTEXT && cut.n == 10 && cut.m.n_prompt + cut.m.n_gen == 256);
    CHECK(exact.done == 1 && exact.why == EMBER_FINISH_LENGTH && exact.n == 10);
    CHECK(strcmp(ember_finish_name(cut.why), "context") == 0 && strcmp(ember_finish_name(exact.why), "length") == 0);
    CHECK(strcmp(ember_finish_name((ember_finish)99), "unknown") == 0);
    /* 300 prompt tokens do not fit; the last 100 do, and answer as those 100 alone. */
    d = ef_desc(p, 300, 8, &kept);
    d.truncate_prompt_tokens = 100;
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    d = ef_desc(p + 200, 100, 8, &direct);
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    drain(e);
    CHECK(kept.done == 1 && kept.m.n_prompt == 100 && ef_same_tokens(&kept, &direct, 8));
    d = ef_desc(p, 300, 8, &kept);
    d.truncate_prompt_tokens = 256; /* still the whole context: refused as without */
    CHECK(ember_submit(e, &d, NULL) == EMBER_ERR_CONTEXT_FULL);
    d.truncate_prompt_tokens = 1000; /* more than the prompt: all of it, refused */
    CHECK(ember_submit(e, &d, NULL) == EMBER_ERR_CONTEXT_FULL);
    ember_engine_destroy(e);
}

/* lavapipe ends a shader invocation after 65535 loop iterations, so attention cannot walk
 * a context longer than ~56000 positions there: a model's context is capped to what the
 * device serves (a GPU keeps it whole), and a longer prompt is refused, not answered
 * wrong. */
static void test_device_context(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/engine_long_ctx.gguf", tu_tmp_dir());
    tu_make_model(path, "--dim 32 --layers 1 --heads 2 --kv-heads 1 --ffn 64 --vocab 300 --ctx 65536 --seed 3");
    ember_model_opts mo = {.enable_validation = tu_validation(), .memory = tu_memory_mode()};
    ember_model *m = NULL;
    CHECKF(ember_model_load(path, &mo, &m) == EMBER_OK, "%s", ember_model_error(m));
    ember_model_info info;
    ember_model_get_info(m, &info);
    bool cpu = info.device_name && strstr(info.device_name, "llvmpipe");
    printf("device context: %u positions of the model's 65536 on %s\n", info.ctx_len, info.device_name);
    CHECK(info.ctx_len == (cpu ? 56400u : 65536u));
    ember_engine *e = ef_engine(m, (ember_engine_opts){0});
    static uint32_t longp[56401];
    for (size_t i = 0; i < sizeof longp / sizeof longp[0]; i++) longp[i] = 5;
    ef_result r;
    ember_request_desc d = ef_desc(longp, info.ctx_len < 56401 ? info.ctx_len : 56401, 4, &r);
    if (e) CHECK(ember_submit(e, &d, NULL) == EMBER_ERR_CONTEXT_FULL);
    ember_engine_destroy(e);
    uint32_t nv = ember_model_validation_messages(m, NULL, 0);
    CHECK(nv == 0);
    ember_model_free(m);
}

/* ember_model_opts.kernels: a field out of range is refused by name; x staged in shared
 * memory (stage_x) changes no bit, so 16 requests batched with chunked prefill give the
 * tokens of each alone on the default kernels. */
static void test_kernel_opts(const char *path, const ef_result *alone)
{
    ember_model_opts mo = {.enable_validation = tu_validation(), .memory = tu_memory_mode()};
    const ember_kernel_opts bad[4] = {{.linear_lanes = 12}, {.attn_split = 3}, {.coop_matrix = 4}, {.fp16_dot = -1}};
    const char *named[4] = {"linear_lanes", "attn_split", "coop_matrix", "fp16_dot"};
    for (int i = 0; i < 4; i++) {
        ember_model *m = NULL;
        mo.kernels = bad[i];
        ember_status s = ember_model_load(path, &mo, &m);
        CHECKF(s == EMBER_ERR_INVALID_ARG && strstr(ember_model_error(m), named[i]), "kernels %s: status %d, '%s'",
               named[i], (int)s, ember_model_error(m));
        ember_model_free(m);
    }
    mo.kernels = (ember_kernel_opts){.stage_x = EMBER_KERNEL_ON};
    ember_model *m = ef_load(path, &mo);
    CHECK(m != NULL);
    static ef_result res[NREQ];
    if (m)
        run_together(m, (ember_engine_opts){.max_seqs = 16, .max_batch_tokens = 128}, res, 24,
                     "x staged in shared memory, 16 together", alone);
    ember_model_free(m);
}

int main(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/engine_model.gguf", tu_tmp_dir());
    tu_make_model(path, "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 256 --type q8_0 "
                        "--seed 21");
    ember_model_opts mo = {.enable_validation = tu_validation(), .memory = tu_memory_mode()};
    ember_model *m = ef_load(path, &mo);
    if (!m) return tu_skip("cannot load the test model on a Vulkan device");
    make_prompts(512);
    static ef_result alone[NREQ];
    run_alone(m, alone, 24);
    test_invariance_and_preemption(m);
    test_chunk_ctx(m, alone);
    test_prefix_cache(m);
    test_copy_on_write(m);
    test_prompt_group(m);
    test_sampling_and_stop(m);
    test_sampling_paths(m, true, EMBER_SAMPLE_CANDIDATES);
    test_sampling_paths(m, true, EMBER_SAMPLE_ROWS);
    test_cancel(m);
    test_worker_thread(m, alone);
    test_bad_input(m);
    test_context_end(m);
    test_kv_full();
    test_device_context();
    test_kernel_opts(path, alone);
    /* The CPU backend takes the same batches over the same KV blocks (engine/step.h):
     * prefix hits and copies on write of its own block pool give the same tokens. */
    ember_model_opts co = {.backend = EMBER_BACKEND_CPU};
    ember_model *cpu = NULL;
    CHECKF(ember_model_load(path, &co, &cpu) == EMBER_OK, "%s", ember_model_error(cpu));
    if (cpu) {
        test_prefix_cache(cpu);
        test_copy_on_write(cpu);
        test_prompt_group(cpu);
        test_sampling_paths(cpu, false, EMBER_SAMPLE_CANDIDATES);
    }
    ember_model_free(cpu);
    char first[512];
    uint32_t nv = ember_model_validation_messages(m, first, sizeof first);
    CHECKF(nv == 0, "%u validation messages: %s", nv, first);
    ember_model_free(m);
    return tu_finish("test_engine");
}
