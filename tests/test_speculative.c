/* test_speculative.c — speculative decoding:
 *  - n-gram proposals and the greedy acceptance rule on hand-made cases;
 *  - the sampling rule keeps the target's distribution: over 40,000 verification steps
 *    the first token out matches p by a chi-square test, for a draft that agrees often,
 *    one that rarely does, and a point-mass (n-gram) draft;
 *  - greedy output is identical with and without speculation (n-gram and draft model)
 *    over 96 tokens, alone and in a batch of 8 concurrent requests;
 *  - a draft model with another vocabulary is refused. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/speculative/speculative.h"
#include "ember.h"
#include "testutil.h"

static void test_ngram(void)
{
    uint32_t t[] = {1, 2, 3, 4, 5, 9, 2, 3, 4, 7, 8, 2, 3, 4}, out[8];
    uint32_t n = ember_ngram_propose(t, 14, 3, 4, out); /* last 3 = 2 3 4: latest earlier at 6 */
    CHECK(n == 4 && out[0] == 7 && out[1] == 8 && out[2] == 2 && out[3] == 3);
    CHECK(ember_ngram_propose(t, 14, 3, 1, out) == 1 && out[0] == 7);
    uint32_t u[] = {1, 2, 3, 4};
    CHECK(ember_ngram_propose(u, 4, 2, 4, out) == 0); /* no earlier occurrence */
    uint32_t g[] = {5, 6, 7}, d[] = {5, 6, 9};
    CHECK(ember_spec_accept_greedy(g, d, 2, out) == 3 && out[0] == 5 && out[1] == 6 && out[2] == 7);
    uint32_t g2[] = {5, 8, 7};
    CHECK(ember_spec_accept_greedy(g2, d, 2, out) == 2 && out[0] == 5 && out[1] == 8);
}

/* p and q rows over V tokens; drafts d ~ q from the test's own generator. */
#define V 12
#define TRIALS 40000

static void normalize(float *x)
{
    double s = 0;
    for (int i = 0; i < V; i++) s += x[i];
    for (int i = 0; i < V; i++) x[i] = (float)(x[i] / s);
}

static uint32_t draw(tu_rng *r, const float *q)
{
    double u = tu_uniform(r, 0, 1), c = 0;
    for (int i = 0; i < V; i++)
        if (u < (c += q[i])) return (uint32_t)i;
    return V - 1;
}

/* Runs verification with k = 2 drafts; counts the first token out. */
static double first_token_pvalue(const float *p, const float *q, bool point_mass, double *accept_rate)
{
    ember_sampling_params sp = {.temperature = 1.0f, .seed = 77};
    ember_sampler *s;
    ember_err err;
    CHECK(ember_sampler_create(&sp, V, &s, &err) == EMBER_OK);
    tu_rng rng = {123};
    uint64_t counts[V] = {0}, accepted = 0;
    float scratch[V];
    for (int t = 0; t < TRIALS; t++) {
        uint32_t d[2], out[3];
        d[0] = point_mass ? 3 : draw(&rng, q);
        d[1] = point_mass ? 4 : draw(&rng, q + V);
        uint32_t n = ember_spec_accept(s, p, point_mass ? NULL : q, d, 2, V, scratch, out);
        counts[out[0]]++;
        accepted += n - 1;
    }
    ember_sampler_free(s);
    double pd[V];
    for (int i = 0; i < V; i++) pd[i] = p[i];
    *accept_rate = (double)accepted / (2.0 * TRIALS);
    return tu_chi2_test(counts, pd, V, TRIALS);
}

static void test_rejection_rule(void)
{
    float p[3 * V], q_close[2 * V], q_far[2 * V];
    tu_rng rng = {9};
    for (int i = 0; i < 3 * V; i++) p[i] = tu_uniform(&rng, 0.05f, 1.0f) * (i % V < 4 ? 4.0f : 1.0f);
    for (int r = 0; r < 3; r++) normalize(p + r * V);
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < V; i++) {
            q_close[r * V + i] = p[r * V + i] * tu_uniform(&rng, 0.8f, 1.2f);
            q_far[r * V + i] = i < 4 ? 0.001f : 1.0f; /* mass where p has little */
        }
        normalize(q_close + r * V);
        normalize(q_far + r * V);
    }
    double acc, pv;
    pv = first_token_pvalue(p, q_close, false, &acc);
    printf("draft that agrees: acceptance %.2f, chi-square p = %.4f\n", acc, pv);
    CHECK(acc > 0.8 && pv > 0.001);
    pv = first_token_pvalue(p, q_far, false, &acc);
    printf("draft that rarely agrees: acceptance %.2f, chi-square p = %.4f\n", acc, pv);
    CHECK(acc < 0.5 && pv > 0.001);
    pv = first_token_pvalue(p, NULL, true, &acc);
    printf("point-mass (n-gram) draft: acceptance %.2f, chi-square p = %.4f\n", acc, pv);
    CHECK(pv > 0.001);
    /* The test has power: comparing against q instead of p fails. */
    uint64_t counts[V] = {0};
    double qd[V];
    for (int i = 0; i < V; i++) counts[i] = (uint64_t)llround(p[i] * TRIALS), qd[i] = q_far[i];
    CHECK(tu_chi2_test(counts, qd, V, TRIALS) < 1e-6);
}

/* ---- through the engine ------------------------------------------------------------ */

typedef struct out {
    uint32_t tok[128], n;
    ember_request_metrics m;
    int done;
} out;

static int on_tok(void *u, ember_request_id id, uint32_t t, const char *x, size_t n)
{
    out *o = u;
    if (o->n < 128) o->tok[o->n++] = t;
    return 0;
}

static void on_done(void *u, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    out *o = u;
    o->m = *m;
    o->done = 1;
}

/* Prompts that repeat themselves, so that n-gram lookup finds proposals. */
static uint32_t prompts[8][60];

static void serve_sampled(ember_model *m, ember_model *draft, int n_req, ember_speculation spec, ember_sampling samp,
                          out *o)
{
    ember_engine_opts eo = {.max_seqs = 8, .draft = draft};
    ember_engine *e = NULL;
    ember_status s = ember_engine_create(m, &eo, &e);
    CHECKF(s == EMBER_OK, "%s", ember_engine_error(e));
    for (int i = 0; s == EMBER_OK && i < n_req; i++) {
        memset(&o[i], 0, sizeof o[i]);
        ember_request_desc d = {.tokens = prompts[i], .n_tokens = 60, .max_tokens = 96, .ignore_eos = 1,
                                .on_token = on_tok, .on_done = on_done, .user = &o[i], .spec = spec,
                                .sampling = samp};
        s = ember_submit(e, &d, NULL);
        CHECKF(s == EMBER_OK, "%s", ember_engine_error(e));
    }
    while (s == EMBER_OK) s = ember_engine_step(e);
    CHECKF(s == EMBER_IDLE, "%s", ember_engine_error(e));
    ember_engine_destroy(e);
}

static void serve(ember_model *m, ember_model *draft, int n_req, ember_speculation spec, out *o)
{
    serve_sampled(m, draft, n_req, spec, (ember_sampling){0}, o);
}

static int same(const out *a, const out *b, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) k += a[i].done && b[i].done && a[i].n == 96 && b[i].n == 96 &&
                                   memcmp(a[i].tok, b[i].tok, sizeof a[i].tok[0] * 96) == 0;
    return k;
}

/* Every speculation mode with every kind of sampling: each runs to the end (this is
 * where n-gram drafts with temperature crashed); the draft model always proposes; the
 * greedy ones (penalties too, which change greedy tokens) give exactly the tokens of the
 * same sampling without speculation. */
static void test_every_sampling(ember_model *mt, ember_model *md)
{
    /* Filled once the plain greedy tokens are known: their first token banned, another
     * lifted. */
    static ember_logit_bias bias[2];
    static const struct {
        const char *name;
        ember_sampling s;
    } kinds[] = {
        {"greedy", {0}},
        {"greedy, penalties", {.repetition_penalty = 1.3f, .frequency_penalty = 0.4f, .presence_penalty = 0.4f}},
        {"temperature", {.temperature = 0.8f, .seed = 3}},
        {"top-k", {.temperature = 0.9f, .top_k = 20, .seed = 4}},
        {"top-p", {.temperature = 0.9f, .top_p = 0.9f, .seed = 5}},
        {"min-p", {.temperature = 0.9f, .min_p = 0.1f, .seed = 6}},
        {"temperature, penalties", {.temperature = 0.7f, .repetition_penalty = 1.3f, .frequency_penalty = 0.5f,
                                    .presence_penalty = 0.5f, .seed = 7}},
        {"greedy, logit bias", {.logit_bias = bias, .n_logit_bias = 2}},
        {"temperature, logit bias", {.temperature = 0.8f, .seed = 8, .logit_bias = bias, .n_logit_bias = 2}},
    };
    static out plain[1], spec[1], greedy_plain[1];
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        bool greedy = kinds[k].s.temperature == 0;
        if (greedy) serve_sampled(mt, NULL, 1, (ember_speculation){0}, kinds[k].s, plain);
        if (k == 0) {
            greedy_plain[0] = plain[0];
            bias[0] = (ember_logit_bias){plain[0].tok[0], -INFINITY};
            bias[1] = (ember_logit_bias){plain[0].tok[0] == 5 ? 6 : 5, 1.5f};
        }
        /* Penalties and biases apply at temperature 0 too (penalties were once skipped there). */
        if (k == 1) CHECKF(same(greedy_plain, plain, 1) == 0, "greedy with penalties gives the greedy tokens");
        if (kinds[k].s.n_logit_bias && greedy)
            CHECKF(plain[0].n == 96 && plain[0].tok[0] != bias[0].token && same(greedy_plain, plain, 1) == 0,
                   "greedy with a bias banning the greedy first token %u: first token %u", bias[0].token,
                   plain[0].tok[0]);
        for (int mode = 0; mode < 2; mode++) {
            ember_speculation sp = mode ? (ember_speculation){.draft_k = 4, .ngram = 2}
                                        : (ember_speculation){.draft_k = 3};
            serve_sampled(mt, mode ? NULL : md, 1, sp, kinds[k].s, spec);
            bool banned = false;
            for (uint32_t i = 0; kinds[k].s.n_logit_bias && i < spec[0].n; i++) banned |= spec[0].tok[i] == bias[0].token;
            bool ok = spec[0].done && spec[0].n == 96 && (mode || spec[0].m.n_drafted > 0) &&
                      (!greedy || same(plain, spec, 1) == 1) && !banned;
            printf("%s with %s: %u tokens, drafted %u, accepted %u%s\n", mode ? "n-gram" : "draft model",
                   kinds[k].name, spec[0].n, spec[0].m.n_drafted, spec[0].m.n_accepted,
                   greedy ? (same(plain, spec, 1) ? ", identical to no speculation" : ", DIFFERENT") : "");
            CHECKF(ok, "%s with %s", mode ? "n-gram" : "draft model", kinds[k].name);
        }
    }
}

static char *model_path(const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", tu_tmp_dir(), name);
    return buf;
}

static void test_engine(void)
{
    char target[512], draft[512], other[512], cmd[4096];
    model_path("spec_target.gguf", target, sizeof target);
    model_path("spec_draft.gguf", draft, sizeof draft);
    model_path("spec_other.gguf", other, sizeof other);
    const char *bin = tu_ember_bin();
    snprintf(cmd, sizeof cmd,
             "%s make-test-model %s --dim 128 --layers 2 --heads 4 --kv-heads 2 --ffn 256 --vocab 512 --ctx 256 "
             "--seed 4 && %s quantize %s %s q8_0 && %s make-test-model %s --dim 64 --layers 1 --heads 2 "
             "--kv-heads 1 --ffn 64 --vocab 600 --ctx 256",
             bin, target, bin, target, draft, bin, other);
    CHECK(tu_run(cmd, NULL, 0) == 0);
    ember_model_opts mo = {.enable_validation = tu_validation(), .memory = tu_memory_mode()};
    ember_model *mt = NULL, *md = NULL, *mx = NULL;
    if (ember_model_load(target, &mo, &mt) != EMBER_OK || ember_model_load(draft, &mo, &md) != EMBER_OK ||
        ember_model_load(other, &mo, &mx) != EMBER_OK) {
        CHECKF(0, "loading the test models failed");
        goto done;
    }
    tu_rng rng = {17};
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 60; j++) prompts[i][j] = j < 20 ? 3 + (uint32_t)(tu_next(&rng) % 500) : prompts[i][j % 20];

    static out plain[8], spec[8];
    serve(mt, NULL, 1, (ember_speculation){0}, plain);
    serve(mt, NULL, 1, (ember_speculation){.draft_k = 4, .ngram = 3}, spec);
    printf("n-gram, alone: identical %d/1, drafted %u, accepted %u\n", same(plain, spec, 1), spec[0].m.n_drafted,
           spec[0].m.n_accepted);
    CHECK(same(plain, spec, 1) == 1 && spec[0].m.n_drafted > 0);
    serve(mt, md, 1, (ember_speculation){.draft_k = 4}, spec);
    printf("draft model, alone: identical %d/1, acceptance %u/%u\n", same(plain, spec, 1), spec[0].m.n_accepted,
           spec[0].m.n_drafted);
    CHECK(same(plain, spec, 1) == 1 && spec[0].m.n_accepted > 0);

    serve(mt, NULL, 8, (ember_speculation){0}, plain);
    serve(mt, NULL, 8, (ember_speculation){.draft_k = 4, .ngram = 2, .adaptive = 1}, spec);
    printf("n-gram (adaptive), 8 together: identical %d/8\n", same(plain, spec, 8));
    CHECK(same(plain, spec, 8) == 8);
    serve(mt, md, 8, (ember_speculation){.draft_k = 3}, spec);
    printf("draft model, 8 together: identical %d/8\n", same(plain, spec, 8));
    CHECK(same(plain, spec, 8) == 8);

    /* N-gram drafts through the sampling path (temperature, top-k 1 so that the text
     * repeats like greedy text and drafts are proposed): the rejection rule needs the
     * target's probabilities (this crashed when only an engine with a draft model had
     * the buffer for them), and the tokens equal plain greedy decoding's. */
    serve_sampled(mt, NULL, 2, (ember_speculation){.draft_k = 4, .ngram = 2}, (ember_sampling){.temperature = 0.8f,
                  .top_k = 1, .seed = 5}, spec);
    serve(mt, NULL, 2, (ember_speculation){0}, plain);
    printf("n-gram, temperature 0.8 top-k 1: identical %d/2, drafted %u, accepted %u\n", same(plain, spec, 2),
           spec[0].m.n_drafted + spec[1].m.n_drafted, spec[0].m.n_accepted + spec[1].m.n_accepted);
    CHECK(same(plain, spec, 2) == 2 && spec[0].m.n_drafted + spec[1].m.n_drafted > 0);

    test_every_sampling(mt, md);

    /* The CPU backend runs the draft model through the same step interface. */
    ember_model_opts co = {.backend = EMBER_BACKEND_CPU};
    ember_model *ct = NULL, *cd = NULL;
    CHECK(ember_model_load(target, &co, &ct) == EMBER_OK && ember_model_load(draft, &co, &cd) == EMBER_OK);
    if (ct && cd) {
        static out cpu_plain[2], cpu_spec[2];
        serve(ct, NULL, 2, (ember_speculation){0}, cpu_plain);
        serve(ct, cd, 2, (ember_speculation){.draft_k = 3}, cpu_spec);
        printf("draft model, cpu backend: identical %d/2 (and %d/2 to vulkan), acceptance %u/%u\n",
               same(cpu_plain, cpu_spec, 2), same(cpu_plain, plain, 2), cpu_spec[0].m.n_accepted,
               cpu_spec[0].m.n_drafted);
        CHECK(same(cpu_plain, cpu_spec, 2) == 2 && cpu_spec[0].m.n_accepted > 0);
    }
    ember_model_free(cd);
    ember_model_free(ct);

    ember_engine_opts eo = {.draft = mx};
    ember_engine *e = NULL;
    CHECK(ember_engine_create(mt, &eo, &e) == EMBER_ERR_INVALID_ARG);
    printf("other vocabulary: %s\n", ember_engine_error(e));
    CHECK(strstr(ember_engine_error(e), "vocabular") != NULL);
    ember_engine_destroy(e);
done:
    ember_model_free(mx);
    ember_model_free(md);
    ember_model_free(mt);
}

int main(void)
{
    test_ngram();
    test_rejection_rule();
    test_engine();
    return tu_finish("test_speculative");
}
