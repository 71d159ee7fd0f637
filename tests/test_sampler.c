/* test_sampler.c — the sampling chain (engine/sampling/sampler.c) against a naive reference.
 *
 * The reference applies the chain by definition (penalties from a count array, a full
 * sort, filters, softmax in double). The sampler's probability rows must equal it; the
 * frequencies of 200,000 draws must pass a chi-square test against it (p > 0.001); no
 * filtered token may ever be drawn. The chi-square survival function is implemented
 * here (regularized incomplete gamma) and checked against closed forms and tables.
 * Sampling from a row's best candidates (what the GPU reads back) gives the token the row
 * gives, wherever the candidates decide; which filters they decide is checked too. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/sampling/sampler.h"
#include "testutil.h"

#define N_DRAWS 200000

/* ---- chi-square ------------------------------------------------------------------ */


/* Closed forms: even k: e^{-x/2} sum_{j<k/2} (x/2)^j / j!; k = 1: erfc(sqrt(x/2));
 * k = 3: erfc(sqrt(x/2)) + sqrt(2x/pi) e^{-x/2}. */
static double chi2_sf_even(double x, int k)
{
    double term = 1, sum = 1;
    for (int j = 1; j < k / 2; j++) sum += (term *= (x / 2) / j);
    return exp(-x / 2) * sum;
}

static void test_chi2(void)
{
    static const double xs[] = { 0.01, 0.5, 1, 2.5, 7, 15, 33.3, 60, 120 };
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        for (int k = 2; k <= 60; k += 2) {
            double want = chi2_sf_even(x, k), got = tu_chi2_sf(x, k);
            CHECKF(fabs(got - want) <= 1e-12 + 1e-9 * want, "sf(%g, %d) = %.15g, want %.15g", x, k, got, want);
        }
        double w1 = erfc(sqrt(x / 2)), w3 = w1 + sqrt(2 * x / M_PI) * exp(-x / 2);
        CHECKF(fabs(tu_chi2_sf(x, 1) - w1) <= 1e-12 + 1e-9 * w1, "sf(%g, 1) = %.15g, want %.15g", x, tu_chi2_sf(x, 1), w1);
        CHECKF(fabs(tu_chi2_sf(x, 3) - w3) <= 1e-12 + 1e-9 * w3, "sf(%g, 3) = %.15g, want %.15g", x, tu_chi2_sf(x, 3), w3);
    }
    /* critical values from the standard tables */
    static const struct { double x, k, p; } tab[] = {
        { 3.841458820694124, 1, 0.05 }, { 6.634896601021214, 1, 0.01 },
        { 18.307038053275146, 10, 0.05 }, { 29.588298445074418, 10, 0.001 },
        { 50.89218131151707, 30, 0.01 }, { 124.34211340400407, 100, 0.05 },
        { 11.070497693516351, 5, 0.05 }, { 1.1454762260617692, 5, 0.95 },
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        double got = tu_chi2_sf(tab[i].x, tab[i].k);
        CHECKF(fabs(got - tab[i].p) < 1e-9, "sf(%g, %g) = %.12g, want %g", tab[i].x, tab[i].k, got, tab[i].p);
    }
}


/* ---- the reference chain ----------------------------------------------------------- */

typedef struct ref_tok {
    double l;
    uint32_t id;
} ref_tok;

static int cmp_ref(const void *a, const void *b)
{
    const ref_tok *x = a, *y = b;
    if (x->l != y->l) return x->l > y->l ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* The chain by definition. window: the tokens the penalties see. */
static void ref_probs(const ember_sampling_params *p, const float *logits, uint32_t n,
                      const uint32_t *window, size_t n_window, double *out)
{
    ref_tok *t = malloc(n * sizeof *t);
    uint32_t *cnt = calloc(n, sizeof *cnt);
    for (size_t i = 0; i < n_window; i++) cnt[window[i]]++;
    double r = p->repetition_penalty;
    for (uint32_t i = 0; i < n; i++) {
        double l = isnan(logits[i]) ? -INFINITY : logits[i];
        for (uint32_t b = 0; b < p->n_logit_bias; b++)
            if (p->logit_bias[b].token == i) l += p->logit_bias[b].bias;
        if (cnt[i]) {
            if (r != 0 && r != 1) l = l > 0 ? l / r : l * r;
            l -= cnt[i] * (double)p->frequency_penalty + p->presence_penalty;
        }
        t[i] = (ref_tok){ l, i };
    }
    qsort(t, n, sizeof *t, cmp_ref);
    memset(out, 0, n * sizeof *out);
    uint32_t keep = n;
    if (p->temperature == 0) keep = 1;
    if (p->top_k > 0 && p->top_k < keep) keep = p->top_k;
    if (p->top_p > 0 && p->top_p < 1) {
        double z = 0, cum = 0;
        for (uint32_t i = 0; i < keep; i++) z += exp(t[i].l - t[0].l);
        for (uint32_t i = 0; i < keep; i++)
            if ((cum += exp(t[i].l - t[0].l) / z) >= p->top_p) {
                keep = i + 1;
                break;
            }
    }
    if (p->min_p > 0) {
        uint32_t k = 1;
        while (k < keep && exp(t[k].l - t[0].l) >= p->min_p) k++;
        keep = k;
    }
    double temp = p->temperature > 0 ? p->temperature : 1, z = 0;
    for (uint32_t i = 0; i < keep; i++) z += exp((t[i].l - t[0].l) / temp);
    for (uint32_t i = 0; i < keep; i++) out[t[i].id] = exp((t[i].l - t[0].l) / temp) / z;
    free(t), free(cnt);
}

/* The sampler's row equals the reference: same support, values within tol. Returns the
 * number of tokens kept. */
static uint32_t check_probs(const char *what, ember_sampler *s, const ember_sampling_params *p,
                        const float *logits, uint32_t n, const uint32_t *window, size_t nw, double tol)
{
    float *got = malloc(n * sizeof *got);
    double *want = malloc(n * sizeof *want), err = 0, sum = 0;
    ember_sampler_probs(s, logits, got);
    ref_probs(p, logits, n, window, nw, want);
    uint32_t bad_support = 0, kept = 0;
    for (uint32_t i = 0; i < n; i++) {
        kept += got[i] > 0;
        if ((got[i] > 0) != (want[i] > 0)) bad_support++;
        if (fabs(got[i] - want[i]) > err) err = fabs(got[i] - want[i]);
        sum += got[i];
    }
    CHECKF(bad_support == 0, "%s: %u tokens kept/filtered differently from the reference", what, bad_support);
    CHECKF(err <= tol, "%s: max |p - ref| = %g", what, err);
    CHECKF(fabs(sum - 1) < 1e-5, "%s: probabilities sum to %.9f", what, sum);
    free(got), free(want);
    return kept;
}

/* ---- tests ------------------------------------------------------------------------- */

static ember_sampler *make(const ember_sampling_params *p, uint32_t n)
{
    ember_sampler *s = NULL;
    ember_err err = {{0}};
    ember_status st = ember_sampler_create(p, n, &s, &err);
    CHECKF(st == EMBER_OK && s, "create: %s", err.msg);
    if (!s) exit(tu_finish("test_sampler"));
    return s;
}

#define NV 40

/* 40 logits with a spread: a few strong tokens, a tail, some ties. */
static void fixed_logits(float *l)
{
    tu_rng r = { 12345 };
    for (int i = 0; i < NV; i++) l[i] = tu_uniform(&r, -2.5f, 2.5f);
    l[7] = 3, l[21] = 2.75f, l[3] = 2.75f, l[30] = 2.5f;
}

static void test_greedy(void)
{
    float l[NV];
    fixed_logits(l);
    ember_sampler *s = make(NULL, NV);
    for (int i = 0; i < 5; i++) CHECK(ember_sampler_sample(s, l) == 7);
    l[12] = 3; /* a tie: the lower id wins */
    CHECK(ember_sampler_sample(s, l) == 7);
    l[2] = 3;
    CHECK(ember_sampler_sample(s, l) == 2);
    l[0] = NAN; /* NaN is -inf, never the arg-max */
    CHECK(ember_sampler_sample(s, l) == 2);
    float pr[NV];
    ember_sampler_probs(s, l, pr);
    for (int i = 0; i < NV; i++) CHECK(pr[i] == (i == 2 ? 1.0f : 0.0f));
    ember_sampler_free(s);

    /* greedy after a repetition penalty: 7 (logit 3 -> 1.5) loses to 3 and 21 (2.75) */
    fixed_logits(l);
    ember_sampling_params p = { .repetition_penalty = 2 };
    s = make(&p, NV);
    ember_sampler_accept(s, 7);
    CHECK(ember_sampler_sample(s, l) == 3);
    ember_sampler_free(s);
}

/* Draws N_DRAWS tokens and compares the frequencies with the reference distribution. */
static void freq_test(const char *what, const ember_sampling_params *p)
{
    float l[NV];
    double want[NV];
    uint64_t counts[NV] = {0};
    fixed_logits(l);
    ref_probs(p, l, NV, NULL, 0, want);
    ember_sampler *s = make(p, NV);
    check_probs(what, s, p, l, NV, NULL, 0, 2e-6);
    for (int i = 0; i < N_DRAWS; i++) counts[ember_sampler_sample(s, l)]++;
    uint64_t filtered = 0;
    int kept = 0;
    for (int i = 0; i < NV; i++) {
        if (want[i] == 0) filtered += counts[i];
        else kept++;
    }
    double pv = tu_chi2_test(counts, want, NV, N_DRAWS);
    CHECKF(filtered == 0, "%s: %llu draws of filtered tokens", what, (unsigned long long)filtered);
    CHECKF(pv > 0.001, "%s: chi-square p-value %g", what, pv);
    printf("  %-34s kept %2d of %d tokens, chi-square p = %.3f\n", what, kept, NV, pv);
    ember_sampler_free(s);
}

static void test_frequencies(void)
{
    static const struct { const char *what; ember_sampling_params p; } cases[] = {
        { "temperature 1", { .temperature = 1, .seed = 1 } },
        { "temperature 0.7", { .temperature = 0.7f, .seed = 2 } },
        { "temperature 1.5", { .temperature = 1.5f, .seed = 3 } },
        { "top-k 5", { .temperature = 1, .top_k = 5, .seed = 4 } },
        { "top-p 0.8", { .temperature = 1, .top_p = 0.8f, .seed = 5 } },
        { "min-p 0.1", { .temperature = 1, .min_p = 0.1f, .seed = 6 } },
        { "top-k 10 + top-p 0.9, T 0.7", { .temperature = 0.7f, .top_k = 10, .top_p = 0.9f, .seed = 7 } },
        { "top-p 0.95 + min-p 0.05, T 1.5", { .temperature = 1.5f, .top_p = 0.95f, .min_p = 0.05f, .seed = 8 } },
        { "top-k 8 + top-p 0.9 + min-p 0.2", { .temperature = 1.2f, .top_k = 8, .top_p = 0.9f, .min_p = 0.2f, .seed = 9 } },
        { "top-k 1 (greedy in effect)", { .temperature = 1, .top_k = 1, .seed = 10 } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) freq_test(cases[i].what, &cases[i].p);
}

/* The test can tell distributions apart: T 0.7 draws against T 1 probabilities fail. */
static void test_chi2_power(void)
{
    float l[NV];
    double want[NV];
    uint64_t counts[NV] = {0};
    fixed_logits(l);
    ember_sampling_params p1 = { .temperature = 1 }, p07 = { .temperature = 0.7f, .seed = 99 };
    ref_probs(&p1, l, NV, NULL, 0, want);
    ember_sampler *s = make(&p07, NV);
    for (int i = 0; i < N_DRAWS; i++) counts[ember_sampler_sample(s, l)]++;
    double pv = tu_chi2_test(counts, want, NV, N_DRAWS);
    CHECKF(pv < 1e-6, "wrong distribution passed the chi-square test (p = %g)", pv);
    ember_sampler_free(s);
}

/* ember_sampler_draw on a given row follows it. */
static void test_draw(void)
{
    float row[NV];
    double want[NV];
    uint64_t counts[NV] = {0};
    tu_rng r = { 7 };
    double z = 0;
    for (int i = 0; i < NV; i++) z += (row[i] = (i % 3 == 0) ? 0 : tu_uniform(&r, 0, 2));
    for (int i = 0; i < NV; i++) want[i] = row[i] / z;
    ember_sampling_params p = { .seed = 5 };
    ember_sampler *s = make(&p, NV);
    for (int i = 0; i < N_DRAWS; i++) counts[ember_sampler_draw(s, row)]++;
    uint64_t zero_drawn = 0;
    for (int i = 0; i < NV; i += 3) zero_drawn += counts[i];
    CHECKF(zero_drawn == 0, "draw picked zero-weight tokens %llu times", (unsigned long long)zero_drawn);
    double pv = tu_chi2_test(counts, want, NV, N_DRAWS);
    CHECKF(pv > 0.001, "draw: chi-square p-value %g", pv);
    float zero[NV] = {0};
    CHECK(ember_sampler_draw(s, zero) == 0);
    zero[9] = INFINITY;
    CHECK(ember_sampler_draw(s, zero) == 9);
    ember_sampler_free(s);
}

static void sequence(const ember_sampling_params *p, uint32_t *out, int n)
{
    float l[NV];
    fixed_logits(l);
    ember_sampler *s = make(p, NV);
    for (int i = 0; i < n; i++) out[i] = ember_sampler_sample(s, l);
    ember_sampler_free(s);
}

static void test_seeds(void)
{
    enum { N = 1000 };
    static uint32_t a[N], b[N], c[N];
    ember_sampling_params p = { .temperature = 1, .top_p = 0.95f, .seed = 42 };
    sequence(&p, a, N);
    sequence(&p, b, N);
    CHECK(memcmp(a, b, sizeof a) == 0);
    p.seed = 43;
    sequence(&p, c, N);
    int differ = 0;
    for (int i = 0; i < N; i++) differ += a[i] != c[i];
    CHECKF(differ > N / 4, "seeds 42 and 43 differ in only %d of %d tokens", differ, N);

    /* reset replays the sequence */
    float l[NV];
    fixed_logits(l);
    p.seed = 42;
    ember_sampler *s = make(&p, NV);
    for (int i = 0; i < 10; i++) ember_sampler_sample(s, l);
    ember_sampler_reset(s);
    for (int i = 0; i < N; i++) b[i] = ember_sampler_sample(s, l);
    CHECK(memcmp(a, b, sizeof a) == 0);
    ember_sampler_free(s);
}

/* sample(l) == draw(probs(l)) with two samplers of the same seed, step by step. */
static void test_sample_equals_draw(void)
{
    ember_sampling_params p = { .temperature = 0.9f, .top_k = 20, .top_p = 0.9f, .min_p = 0.02f,
                                .repetition_penalty = 1.3f, .seed = 77 };
    ember_sampler *a = make(&p, NV), *b = make(&p, NV);
    tu_rng r = { 3 };
    float l[NV], pr[NV];
    int same = 0;
    for (int i = 0; i < 2000; i++) {
        tu_fill(&r, l, NV, -3, 3);
        uint32_t ta = ember_sampler_sample(a, l);
        ember_sampler_probs(b, l, pr);
        uint32_t tb = ember_sampler_draw(b, pr);
        same += ta == tb;
        ember_sampler_accept(a, ta), ember_sampler_accept(b, tb);
    }
    CHECKF(same == 2000, "sample and probs+draw agree on %d of 2000 steps", same);
    ember_sampler_free(a), ember_sampler_free(b);
}

/* Penalties, against hand-computed logits and against the reference. */
static void test_penalties(void)
{
    float l[4] = { 2, -1, 0.5f, 1 }, pr[4];
    ember_sampling_params p = { .temperature = 1, .repetition_penalty = 2 };
    ember_sampler *s = make(&p, 4);
    ember_sampler_accept(s, 0), ember_sampler_accept(s, 1), ember_sampler_accept(s, 1);
    ember_sampler_probs(s, l, pr);
    double pen[4] = { 1, -2, 0.5, 1 }, z = 0; /* 2/2, -1*2, untouched, untouched */
    for (int i = 0; i < 4; i++) z += exp(pen[i]);
    for (int i = 0; i < 4; i++) CHECKF(fabs(pr[i] - exp(pen[i]) / z) < 1e-6, "rep: p[%d] = %g", i, pr[i]);
    ember_sampler_free(s);

    p = (ember_sampling_params){ .temperature = 1, .frequency_penalty = 0.5f, .presence_penalty = 0.25f };
    s = make(&p, 4);
    ember_sampler_accept(s, 0), ember_sampler_accept(s, 1), ember_sampler_accept(s, 1);
    ember_sampler_probs(s, l, pr);
    double fp[4] = { 2 - 0.5 - 0.25, -1 - 2 * 0.5 - 0.25, 0.5, 1 };
    z = 0;
    for (int i = 0; i < 4; i++) z += exp(fp[i]);
    for (int i = 0; i < 4; i++) CHECKF(fabs(pr[i] - exp(fp[i]) / z) < 1e-6, "freq/presence: p[%d] = %g", i, pr[i]);
    ember_sampler_free(s);

    /* the window: with last_n = 2 only the last two accepted tokens count */
    p = (ember_sampling_params){ .temperature = 1, .repetition_penalty = 1.5f, .frequency_penalty = 0.1f,
                                 .presence_penalty = 0.2f, .penalty_last_n = 2 };
    float lw[NV];
    fixed_logits(lw);
    s = make(&p, NV);
    uint32_t hist[] = { 7, 3, 3, 21, 7, 7, 30 };
    for (size_t i = 0; i < sizeof hist / sizeof hist[0]; i++) ember_sampler_accept(s, hist[i]);
    check_probs("window of 2", s, &p, lw, NV, hist + 5, 2, 2e-6);
    ember_sampler_free(s);

    /* the default window is 64; reset forgets */
    p.penalty_last_n = 0;
    s = make(&p, NV);
    uint32_t many[100];
    tu_rng r = { 11 };
    for (int i = 0; i < 100; i++) ember_sampler_accept(s, many[i] = (uint32_t)(tu_next(&r) % 8) * 5);
    check_probs("default window 64", s, &p, lw, NV, many + 36, 64, 2e-6);
    ember_sampler_reset(s);
    check_probs("after reset", s, &p, lw, NV, NULL, 0, 2e-6);
    ember_sampler_accept(s, NV + 5); /* out of range: ignored */
    check_probs("out-of-range accept", s, &p, lw, NV, NULL, 0, 2e-6);
    ember_sampler_free(s);

    /* penalties combined with every filter */
    p = (ember_sampling_params){ .temperature = 0.8f, .top_k = 12, .top_p = 0.9f, .min_p = 0.05f,
                                 .repetition_penalty = 1.2f, .frequency_penalty = 0.3f, .presence_penalty = 0.1f };
    s = make(&p, NV);
    for (size_t i = 0; i < sizeof hist / sizeof hist[0]; i++) ember_sampler_accept(s, hist[i]);
    check_probs("penalties + filters", s, &p, lw, NV, hist, sizeof hist / sizeof hist[0], 2e-6);
    ember_sampler_free(s);
}

/* Big vocabularies: the partial-selection paths against the full-sort reference. */
static void test_large_vocab(void)
{
    enum { V = 150000, REPS = 50 };
    float *base = malloc(V * sizeof *base), *l = malloc(V * sizeof *l);
    tu_rng r = { 2024 };
    for (int i = 0; i < V; i++) { /* roughly normal, spread like real logits */
        float u = 0;
        for (int k = 0; k < 4; k++) u += tu_uniform(&r, -1.5f, 1.5f);
        base[i] = 2 * u;
    }
    static const struct { const char *what; float scale; ember_sampling_params p; } cases[] = {
        { "V=150k top-k 40", 1, { .temperature = 0.8f, .top_k = 40 } },
        { "V=150k top-p 0.9", 1, { .temperature = 1, .top_p = 0.9f } },
        { "V=150k top-p 0.5, flat logits", 0.05f, { .temperature = 1, .top_p = 0.5f } },
        { "V=150k min-p 0.05", 1, { .temperature = 1, .min_p = 0.05f } },
        { "V=150k temperature only", 1, { .temperature = 1.1f } },
        { "V=150k top-k 1000 + top-p 0.95", 1, { .temperature = 1, .top_k = 1000, .top_p = 0.95f } },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ember_sampler *s = make(&cases[c].p, V);
        for (int i = 0; i < V; i++) l[i] = base[i] * cases[c].scale;
        uint32_t kept = check_probs(cases[c].what, s, &cases[c].p, l, V, NULL, 0, 1e-6);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < REPS; i++) ember_sampler_sample(s, l);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / REPS;
        printf("  %-34s kept %6u, %6.0f us/token\n", cases[c].what, kept, us);
        ember_sampler_free(s);
    }
    free(base), free(l);
}

static void test_edges(void)
{
    float l[NV];
    for (int i = 0; i < NV; i++) l[i] = -INFINITY;
    ember_sampling_params p = { .temperature = 1, .top_p = 0.5f, .min_p = 0.5f, .seed = 1 };
    ember_sampler *s = make(&p, NV);
    float pr[NV];
    ember_sampler_probs(s, l, pr);  /* nothing to prefer: top-p keeps half, uniformly */
    int kept = 0;
    for (int i = 0; i < NV; i++) kept += pr[i] > 0;
    CHECKF(kept == NV / 2, "all -inf with top-p 0.5: %d kept", kept);
    l[17] = INFINITY, l[5] = NAN;
    for (int i = 0; i < 100; i++) CHECK(ember_sampler_sample(s, l) == 17);
    ember_sampler_free(s);

    /* ties are broken by id: the lowest ids survive top-k and top-p */
    float flat[10] = {0}, fp[10];
    ember_sampling_params pk = { .temperature = 1, .top_k = 3 }, pp = { .temperature = 1, .top_p = 0.35f };
    s = make(&pk, 10);
    ember_sampler_probs(s, flat, fp);
    for (int i = 0; i < 10; i++) CHECKF(fabsf(fp[i] - (i < 3 ? 1 / 3.0f : 0)) < 1e-7f, "top-k tie p[%d] = %g", i, fp[i]);
    ember_sampler_free(s);
    s = make(&pp, 10);
    ember_sampler_probs(s, flat, fp);
    for (int i = 0; i < 10; i++) CHECKF(fp[i] == (i < 4 ? 0.25f : 0), "top-p tie p[%d] = %g", i, fp[i]);
    ember_sampler_free(s);

    ember_sampler *bad = NULL;
    ember_err err = {{0}};
    ember_sampling_params b1 = { .temperature = -1 }, b2 = { .top_p = 1.5f }, b3 = { .min_p = NAN },
                          b4 = { .repetition_penalty = -2 }, b5 = { .penalty_last_n = 1u << 30 },
                          b6 = { .frequency_penalty = INFINITY };
    const ember_sampling_params *bads[] = { &b1, &b2, &b3, &b4, &b5, &b6 };
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        err.msg[0] = 0;
        CHECK(ember_sampler_create(bads[i], NV, &bad, &err) == EMBER_ERR_INVALID_ARG && !bad);
        CHECKF(strncmp(err.msg, "sampler: ", 9) == 0, "message '%s'", err.msg);
    }
    CHECK(ember_sampler_create(NULL, 0, &bad, &err) == EMBER_ERR_INVALID_ARG && !bad);
}

/* Logit biases: added first, greedy or not; a ban; copied at create; bad ones refused. */
static void test_logit_bias(void)
{
    float l[NV];
    fixed_logits(l);
    ember_logit_bias ban7[] = {{7, -INFINITY}}, lift[] = {{12, 10}, {7, -0.5f}};
    ember_sampling_params p = { .logit_bias = ban7, .n_logit_bias = 1 };
    ember_sampler *s = make(&p, NV);
    CHECK(ember_sampler_sample(s, l) == 3); /* 7 banned: 3 and 21 tie at 2.75, lowest id */
    ember_sampler_free(s);
    p = (ember_sampling_params){ .logit_bias = lift, .n_logit_bias = 2 };
    s = make(&p, NV);
    lift[0].token = 13; /* the sampler holds its own copy */
    CHECK(ember_sampler_sample(s, l) == 12);
    ember_sampler_free(s);
    lift[0].token = 12;
    /* 7 at 2.5 now ties 30 and trails 3 and 21: against the reference, filters included. */
    p = (ember_sampling_params){ .temperature = 0.7f, .top_k = 6, .top_p = 0.95f, .logit_bias = lift,
                                 .n_logit_bias = 2, .seed = 3 };
    freq_test("bias + top-k + top-p", &p);
    ember_sampling_params pr = { .temperature = 1, .repetition_penalty = 1.5f, .logit_bias = lift, .n_logit_bias = 2 };
    uint32_t hist[] = {12, 7};
    s = make(&pr, NV);
    for (int i = 0; i < 2; i++) ember_sampler_accept(s, hist[i]);
    check_probs("bias, then the repetition penalty", s, &pr, l, NV, hist, 2, 2e-6);
    ember_sampler_free(s);

    ember_logit_bias past[] = {{NV, 1}}, nan_b[] = {{1, NAN}}, inf_b[] = {{1, INFINITY}};
    ember_sampling_params bads[] = { { .logit_bias = past, .n_logit_bias = 1 },
                                     { .logit_bias = nan_b, .n_logit_bias = 1 },
                                     { .logit_bias = inf_b, .n_logit_bias = 1 },
                                     { .logit_bias = NULL, .n_logit_bias = 1 },
                                     { .logit_bias = past, .n_logit_bias = EMBER_MAX_LOGIT_BIAS + 1 } };
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        ember_sampler *bad = NULL;
        ember_err err = {{0}};
        CHECKF(ember_sampler_create(&bads[i], NV, &bad, &err) == EMBER_ERR_INVALID_ARG && !bad &&
               strstr(err.msg, "logit bias"), "bad bias %zu: '%s'", i, err.msg);
    }
}

/* ---- from a row's best candidates ------------------------------------------------ */

/* What shaders/topk.comp delivers for a row (tests/test_kernel_topk.c checks that it
 * does), made by a sort here, z and z_t (temperature t) summed in double. */
static void make_candidates(const float *l, uint32_t n, float t, ember_cand_row *row)
{
    ref_tok *all = malloc(sizeof *all * n);
    for (uint32_t i = 0; i < n; i++) all[i] = (ref_tok){l[i], i};
    qsort(all, n, sizeof *all, cmp_ref); /* the sampler's order */
    double z = 0, z_t = 0;
    for (uint32_t i = 0; i < n; i++) z += exp(all[i].l - all[0].l), z_t += exp((all[i].l - all[0].l) / t);
    row->z = (float)z;
    row->z_t = (float)z_t;
    row->n = n < EMBER_CANDIDATES ? n : EMBER_CANDIDATES;
    for (uint32_t i = 0; i < row->n; i++) row->c[i] = (ember_cand){all[i].id, (float)all[i].l};
    free(all);
}

/* Two samplers of one seed, one given each row, the other the row's candidates (and the
 * row when they do not decide): the same token every time, so the generator was left
 * untouched where they did not decide. Rows from peaked (scale 10) to flat (scale 0.3);
 * both accept each token drawn, and the last 8 drawn lead the next row (so that
 * penalties reorder the best candidates). Returns how many of n_rows the candidates
 * decided. For samplers with a filter, or none that candidates may decide. */
static int candidates_vs_rows(const ember_sampling_params *p, uint32_t n_vocab, int n_rows)
{
    ember_sampler *a, *b;
    ember_err err;
    CHECK(ember_sampler_create(p, n_vocab, &a, &err) == EMBER_OK);
    CHECK(ember_sampler_create(p, n_vocab, &b, &err) == EMBER_OK);
    float *l = malloc(sizeof *l * n_vocab);
    ember_cand_row *row = malloc(sizeof *row);
    tu_rng r = {77};
    int decided = 0, differ = 0;
    uint32_t recent[8] = {0};
    for (int k = 0; k < n_rows; k++) {
        static const float scales[] = {10, 3, 1, 0.3f};
        float sc = scales[k % 4];
        for (uint32_t i = 0; i < n_vocab; i++) l[i] = sc * (tu_uniform(&r, -1, 1) + tu_uniform(&r, -1, 1));
        for (int j = 0; j < 8 && j < k; j++) l[recent[j]] = 2.5f * sc - 0.1f * (float)j;
        make_candidates(l, n_vocab, p->temperature > 0 ? p->temperature : 1, row);
        uint32_t want = ember_sampler_sample(a, l), got;
        if (ember_sampler_sample_candidates(b, row, NULL, &got)) decided++;
        else CHECK(ember_sampler_sample_candidates(b, row, l, &got)); /* with the row: decided */
        differ += got != want;
        ember_sampler_accept(a, want);
        ember_sampler_accept(b, got);
        recent[k % 8] = want;
    }
    CHECKF(differ == 0, "%d of %d rows differ (temp %g top_k %u top_p %g min_p %g)", differ, n_rows, p->temperature,
           p->top_k, p->top_p, p->min_p);
    free(l);
    free(row);
    ember_sampler_free(a);
    ember_sampler_free(b);
    return decided;
}

static void test_candidates(void)
{
    const uint32_t V = 5000;
    const int N = 400;
    struct {
        ember_sampling_params p;
        int min_decided, max_decided; /* of N rows */
    } cases[] = {
        {{.temperature = 1, .top_k = 40}, N, N},
        {{.temperature = 0.7f, .top_k = EMBER_CANDIDATES}, N, N},
        {{.temperature = 1, .top_k = EMBER_CANDIDATES + 1}, 0, 0},      /* past the candidates */
        {{.temperature = 1, .top_k = 40, .top_p = 0.9f, .min_p = 0.05f}, N, N},
        {{.temperature = 0.8f, .top_p = 0.95f}, N / 4, N - N / 4},       /* peaked rows yes, flat no */
        {{.temperature = 1.3f, .min_p = 0.1f}, N / 4, N - N / 4},
        {{.temperature = 1, .top_p = 0.5f, .min_p = 0.01f}, N / 4, N},
        {{.temperature = 1, .top_k = 40, .repetition_penalty = 1.3f}, N - N / 4, N},   /* reorders */
        {{.temperature = 0.9f, .top_k = 20, .top_p = 0.8f, .frequency_penalty = 0.5f, .presence_penalty = 0.5f},
         N - N / 4, N},
        {{.temperature = 1.2f, .min_p = 0.1f, .repetition_penalty = 1.5f}, N / 4, N - N / 4},
        {{.temperature = 1, .top_p = 0.9f, .frequency_penalty = 0.5f}, 0, 0},  /* top-p alone: the row's sum */
        {{.temperature = 1, .top_k = 40, .repetition_penalty = 0.8f}, 0, 0},   /* raises logits */
        {{.temperature = 0, .top_k = 40}, 0, 0},                         /* greedy: the argmax */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int d = candidates_vs_rows(&cases[i].p, V, N);
        printf("  candidates, case %zu: decided %3d of %d rows, the same tokens as the rows\n", i, d, N);
        CHECKF(d >= cases[i].min_decided && d <= cases[i].max_decided, "case %zu: candidates decided %d of %d rows",
               i, d, N);
    }
    /* A bias moves tokens the candidates do not hold: never decided. */
    ember_logit_bias bias = {3, 0.0f};
    ember_sampling_params pb = {.temperature = 1, .top_k = 40, .logit_bias = &bias, .n_logit_bias = 1};
    CHECK(candidates_vs_rows(&pb, V, 20) == 0);
    /* A vocabulary no larger than the candidates: they are the whole row, always decided. */
    ember_sampling_params pp = {.temperature = 1, .top_p = 0.999f};
    CHECK(candidates_vs_rows(&pp, 100, 40) == 40);
}

/* Temperature alone: draws through the candidates (and the row when a draw lands past
 * them) follow the softmax (chi-square), and the row is needed about as often as the
 * mass past the candidates says. */
static void whole_freq(const char *what, float scale, float t)
{
    enum { V = 400 };
    float l[V];
    double want[V], z = 0, mx = -INFINITY, past = 0;
    uint64_t counts[V] = {0};
    tu_rng r = {31};
    for (int i = 0; i < V; i++) l[i] = scale * (tu_uniform(&r, -1, 1) + tu_uniform(&r, -1, 1));
    for (int i = 0; i < V; i++) mx = l[i] > mx ? l[i] : mx;
    for (int i = 0; i < V; i++) z += (want[i] = exp((l[i] - mx) / t));
    for (int i = 0; i < V; i++) want[i] /= z;
    ember_cand_row *row = malloc(sizeof *row);
    make_candidates(l, V, t, row);
    bool cand[V] = {false};
    for (uint32_t i = 0; i < row->n; i++) cand[row->c[i].id] = true;
    for (int i = 0; i < V; i++) past += cand[i] ? 0 : want[i];
    ember_sampling_params p = {.temperature = t, .seed = 5};
    ember_sampler *s = make(&p, V);
    CHECK(ember_sampler_candidates_may_decide(s));
    uint64_t needed = 0;
    for (int i = 0; i < N_DRAWS; i++) {
        uint32_t tok;
        if (!ember_sampler_sample_candidates(s, row, NULL, &tok)) {
            needed++;
            CHECK(ember_sampler_sample_candidates(s, row, l, &tok));
        }
        counts[tok]++;
    }
    double pv = tu_chi2_test(counts, want, V, N_DRAWS), frac = (double)needed / N_DRAWS;
    printf("  %-34s the row needed for %.4f of draws (mass past the candidates %.4f), chi-square p = %.3f\n",
           what, frac, past, pv);
    CHECKF(pv > 0.001, "%s: chi-square p-value %g", what, pv);
    CHECKF(fabs(frac - past) < 5 * sqrt(past * (1 - past) / N_DRAWS) + 1e-4, "%s: row needed %.4f, mass %.4f", what,
           frac, past);
    ember_sampler_free(s);
    free(row);
}

static void test_candidates_whole(void)
{
    whole_freq("temperature 1, peaked row", 6, 1);
    whole_freq("temperature 0.7, flat row", 1, 0.7f);
    whole_freq("temperature 1.5, flat row", 1, 1.5f);
}

int main(void)
{
    test_chi2();
    test_greedy();
    test_frequencies();
    test_chi2_power();
    test_draw();
    test_seeds();
    test_sample_equals_draw();
    test_penalties();
    test_logit_bias();
    test_large_vocab();
    test_edges();
    test_candidates();
    test_candidates_whole();
    return tu_finish("test_sampler");
}
