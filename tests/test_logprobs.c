/* test_logprobs.c — ember_request_desc.on_logprobs through the public API, with a made-up
 * model, on the Vulkan device (reading candidates, and whole rows) and on the CPU
 * backend. Every generated token's
 * log-probability must equal what ember_score gives that token after the same text (the
 * model's own distribution), however the token was drawn: greedy (from the step's
 * candidates), sampled from candidates, from whole rows under a logit bias, under a
 * grammar's mask, with n-gram speculation (greedy and sampled). The top list is sorted,
 * starts with the greedy token, holds the chosen token's value when it is in it, and its
 * probabilities sum to at most 1; the device's list (from candidates) equals the CPU
 * backend's (from whole rows). top_logprobs past 20 is refused at submit. The prompt's
 * log-probabilities (on_prompt_logprobs) equal ember_score's too, computed in one step or
 * in chunks, with the prompt's blocks cached or not, with and without prompt_only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"
#include "testutil.h"

typedef struct lp_result {
    ef_result r;
    ember_logprobs lp[EF_MAX_TOKENS];
    uint32_t n_lp;
    ember_logprobs prompt[EF_MAX_TOKENS]; /* on_prompt_logprobs */
    uint32_t n_prompt;
} lp_result;

static void on_logprobs(void *user, ember_request_id id, const ember_logprobs *lp)
{
    lp_result *x = user; /* ef_result first: the fixture's callbacks take the same pointer */
    if (x->n_lp < EF_MAX_TOKENS) x->lp[x->n_lp++] = *lp;
}

static void on_prompt_logprobs(void *user, ember_request_id id, const ember_logprobs *lp)
{
    lp_result *x = user;
    CHECK(x->n_lp == 0); /* before anything of the reply */
    if (x->n_prompt < EF_MAX_TOKENS) x->prompt[x->n_prompt++] = *lp;
}

static const uint32_t PROMPT[] = {1, 30, 31, 32, 33, 30, 31, 32, 33, 30, 31};
#define N_PROMPT (sizeof PROMPT / sizeof *PROMPT)

static ember_request_desc desc(lp_result *x, uint32_t max_tokens, uint32_t k)
{
    memset(x, 0, sizeof *x);
    ember_request_desc d = ef_desc(PROMPT, N_PROMPT, max_tokens, &x->r);
    d.user = x;
    d.on_logprobs = on_logprobs;
    d.top_logprobs = k;
    return d;
}

/* -log p of the last token of seq[0..n) after the others, from ember_score's sums. */
static double score_last(ember_model *m, const uint32_t *seq, size_t n)
{
    double a = 0, b = 0;
    size_t na = 0, nb = 0;
    CHECK(ember_score(m, seq, n, 0, &a, &na) == EMBER_OK && ember_score(m, seq, n - 1, 0, &b, &nb) == EMBER_OK);
    return a - b;
}

/* x's log-probabilities against ember_score, and the shape of its top lists. */
static void check_against_score(ember_model *m, const lp_result *x, uint32_t k, bool greedy, const char *name)
{
    uint32_t seq[N_PROMPT + EF_MAX_TOKENS];
    memcpy(seq, PROMPT, sizeof PROMPT);
    CHECKF(x->r.done == 1 && x->n_lp == x->r.n && x->n_lp > 0, "%s: %u log-probabilities for %u tokens", name, x->n_lp,
           x->r.n);
    double worst = 0;
    for (uint32_t i = 0; i < x->n_lp && i < x->r.n; i++) {
        const ember_logprobs *lp = &x->lp[i];
        seq[N_PROMPT + i] = x->r.tokens[i];
        double want = -score_last(m, seq, N_PROMPT + i + 1), diff = fabs(lp->chosen.logprob - want);
        if (diff > worst) worst = diff;
        CHECKF(lp->chosen.token == x->r.tokens[i] && diff < 2e-3, "%s token %u: logprob %.6f, score says %.6f", name,
               i, lp->chosen.logprob, want);
        CHECK(lp->n_top == k);
        double sum = 0;
        for (uint32_t j = 0; j < lp->n_top; j++) {
            sum += exp(lp->top[j].logprob);
            if (j) CHECK(lp->top[j].logprob <= lp->top[j - 1].logprob);
            if (lp->top[j].token == lp->chosen.token) CHECK(fabsf(lp->top[j].logprob - lp->chosen.logprob) < 1e-6f);
        }
        CHECK(sum <= 1.0 + 1e-5 && (k == 0 || lp->top[0].logprob >= lp->chosen.logprob - 1e-6f));
        if (greedy && k) CHECK(lp->top[0].token == lp->chosen.token);
    }
    printf("%s: %u tokens, largest difference from ember_score %.2e\n", name, x->n_lp, worst);
}

static void run(ember_engine *e)
{
    while (ember_engine_step(e) == EMBER_OK) {}
}

static void check_all(ember_engine *e, ember_model *m, const char *backend)
{
    char name[96];
    lp_result *x = calloc(7, sizeof *x);
    ember_logit_bias bias[] = {{40, 3.0f}, {41, -INFINITY}};
    ember_request_desc d[7];
    d[0] = desc(&x[0], 12, 5); /* greedy */
    d[1] = desc(&x[1], 12, 3);
    d[1].sampling = (ember_sampling){.temperature = 1.0f, .seed = 3};
    d[2] = desc(&x[2], 12, 2); /* a bias: whole rows */
    d[2].sampling = (ember_sampling){.temperature = 0.8f, .seed = 4, .logit_bias = bias, .n_logit_bias = 2};
    d[3] = desc(&x[3], 12, 4);
    d[3].grammar = "root ::= [0-9]{1,3} (\"+\" [0-9]{1,3}){0,3} \"=\"";
    d[3].sampling = (ember_sampling){.temperature = 1.0f, .seed = 5};
    d[4] = desc(&x[4], 16, 1); /* n-gram speculation, greedy and sampled */
    d[4].spec = (ember_speculation){.draft_k = 4, .ngram = 2};
    d[5] = desc(&x[5], 16, 0);
    d[5].spec = (ember_speculation){.draft_k = 4, .ngram = 2};
    d[5].sampling = (ember_sampling){.temperature = 0.7f, .seed = 6};
    d[6] = desc(&x[6], 12, 20);
    d[6].sampling = (ember_sampling){.temperature = 1.5f, .top_k = 50, .seed = 7};
    static const char *const names[] = {"greedy", "sampled", "logit bias", "grammar", "n-gram, greedy",
                                        "n-gram, sampled", "top 20"};
    for (int i = 0; i < 7; i++) CHECK(ember_submit(e, &d[i], NULL) == EMBER_OK);
    run(e);
    for (int i = 0; i < 7; i++) {
        snprintf(name, sizeof name, "%s, %s", backend, names[i]);
        check_against_score(m, &x[i], d[i].top_logprobs, i == 0 || i == 4, name);
    }
    free(x);
}

/* The same greedy request on the device (top list from candidates) and on the CPU
 * backend (from whole rows): the same tokens, the same lists. */
static void check_backends_agree(ember_engine *gpu, ember_engine *cpu)
{
    lp_result *x = calloc(2, sizeof *x);
    ember_request_desc a = desc(&x[0], 10, 8), b = desc(&x[1], 10, 8);
    CHECK(ember_submit(gpu, &a, NULL) == EMBER_OK && ember_submit(cpu, &b, NULL) == EMBER_OK);
    run(gpu);
    run(cpu);
    double worst = 0;
    CHECK(x[0].n_lp == 10 && x[1].n_lp == 10);
    for (uint32_t i = 0; i < 10 && i < x[0].n_lp && i < x[1].n_lp; i++)
        for (uint32_t j = 0; j < 8; j++) {
            const ember_token_logprob *p = &x[0].lp[i].top[j], *q = &x[1].lp[i].top[j];
            double diff = fabs(p->logprob - q->logprob);
            if (diff > worst) worst = diff;
            CHECKF(p->token == q->token && diff < 1e-3, "token %u, top %u: device %u %.6f, CPU %u %.6f", i, j, p->token,
                   p->logprob, q->token, q->logprob);
        }
    printf("device and CPU backend: the same top 8 for 10 tokens, largest difference %.2e\n", worst);
    free(x);
}

/* The prompt's log-probabilities: the first NAN, every other ember_score's for it after
 * the tokens before it, whether the prompt is computed in one step or in chunks and
 * whether its blocks are cached already (the second request of the same prompt); with
 * prompt_only nothing is generated. */
static void check_prompt(ember_engine *e, ember_model *m, const char *name)
{
    enum { N = 40 }; /* more than two KV blocks: a later request finds them cached */
    uint32_t prompt[N];
    for (uint32_t k = 0; k < N; k++) prompt[k] = k ? 30 + (k * 7) % 50 : 1;
    lp_result *x = calloc(3, sizeof *x);
    for (int i = 0; i < 3; i++) {
        ember_request_desc d = desc(&x[i], 4, 3);
        d.tokens = prompt, d.n_tokens = N;
        d.on_prompt_logprobs = on_prompt_logprobs;
        d.prompt_only = i < 2;
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
        run(e); /* one after the other: the later ones find the prompt's blocks cached */
    }
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        CHECKF(x[i].n_prompt == N && x[i].r.done == 1, "%s: %u prompt entries, done %d", name, x[i].n_prompt,
               x[i].r.done);
        CHECK(i < 2 ? x[i].r.n == 0 && x[i].r.why == EMBER_FINISH_LENGTH && x[i].r.m.n_gen == 0 : x[i].r.n == 4);
        CHECK(x[i].prompt[0].chosen.token == prompt[0] && isnan(x[i].prompt[0].chosen.logprob) &&
              x[i].prompt[0].n_top == 0);
        for (uint32_t k = 1; k < x[i].n_prompt; k++) {
            const ember_logprobs *lp = &x[i].prompt[k];
            double want = -score_last(m, prompt, k + 1), diff = fabs(lp->chosen.logprob - want);
            if (diff > worst) worst = diff;
            CHECKF(lp->chosen.token == prompt[k] && diff < 2e-3 && lp->n_top == 3 &&
                   lp->top[0].logprob >= lp->chosen.logprob, "%s request %d, prompt token %u: %.6f, score %.6f", name,
                   i, k, lp->chosen.logprob, want);
        }
    }
    printf("%s: prompt log-probabilities of 3 requests, largest difference from ember_score %.2e\n", name, worst);
    free(x);
}

static void check_refused(ember_engine *e)
{
    lp_result x;
    ember_request_desc d = desc(&x, 4, EMBER_MAX_TOP_LOGPROBS + 1);
    CHECK(ember_submit(e, &d, NULL) == EMBER_ERR_INVALID_ARG && strstr(ember_engine_error(e), "top_logprobs"));
}

int main(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/logprobs.gguf", tu_tmp_dir());
    tu_make_model(path, "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 256 --seed 21");
    ember_model_opts mo = {.enable_validation = tu_validation(), .memory = tu_memory_mode()};
    ember_model *m = ef_load(path, &mo), *c = NULL;
    if (!m) return tu_skip("no Vulkan device");
    ember_model_opts co = {.backend = EMBER_BACKEND_CPU};
    CHECK(ember_model_load(path, &co, &c) == EMBER_OK);
    ember_engine *e = ef_engine(m, (ember_engine_opts){.max_seqs = 8, .sample_from = EMBER_SAMPLE_CANDIDATES});
    ember_engine *re = ef_engine(m, (ember_engine_opts){.max_seqs = 8, .sample_from = EMBER_SAMPLE_ROWS});
    ember_engine *ce = c ? ef_engine(c, (ember_engine_opts){.max_seqs = 8}) : NULL;
    if (e) check_all(e, m, "device, candidates");
    if (re) check_all(re, m, "device, rows");
    if (ce) check_all(ce, c, "CPU backend");
    if (e && ce) check_backends_agree(e, ce);
    if (e) check_refused(e);
    if (e) check_prompt(e, m, "device");
    if (ce) check_prompt(ce, c, "CPU backend");
    ember_engine *small = ef_engine(m, (ember_engine_opts){.max_seqs = 8, .max_batch_tokens = 4});
    if (small) check_prompt(small, m, "device, prompt in chunks of 4");
    ember_engine_destroy(small);
    ember_engine_destroy(ce);
    ember_engine_destroy(re);
    ember_engine_destroy(e);
    ember_model_free(c);
    ember_model_free(m);
    return tu_finish("test_logprobs");
}
