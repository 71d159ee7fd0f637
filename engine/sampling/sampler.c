/* sampler.c — the sampling chain of sampler.h.
 *
 * Working state is an array of candidates (logit, id), a copy of the row in id order.
 * Top-k moves the k best to the front by partial selection (then puts them back in id
 * order); top-p and min-p compact the array in place, keeping its order. So the
 * survivors reach the softmax in id order, and drawing walks them in the same order as
 * ember_sampler_draw walks a full probability row: the two give the same token for
 * the same random number. */
#include "candidates.h"
#include "common/alloc.h"
#include "sampler.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_LAST_N 64
#define MAX_LAST_N (1u << 20)
#define TOP_P_BUCKETS 1024 /* histogram of probability mass for top-p */
#define TOP_P_RANGE 64.0f  /* logits this far below the maximum share the last bucket */

typedef struct cand {
    float v;     /* logit; the probability after the softmax */
    uint32_t id;
} cand;

struct ember_sampler {
    ember_sampling_params p;
    uint32_t n_vocab;
    uint64_t rng;           /* splitmix64 state */
    cand *cand;             /* n_vocab */
    cand *edge;             /* n_vocab when top-p is on: the bucket where top-p cuts */
    double mass[TOP_P_BUCKETS];
    uint32_t *ring;         /* the last `last_n` accepted tokens */
    uint32_t *saved;        /* a copy of ring for ember_sampler_save/restore */
    uint32_t saved_pos, saved_len;
    uint32_t *scratch;      /* last_n: the window, sorted to count repeats */
    ember_logit_bias *bias; /* the params' biases, copied (p.logit_bias points here) */
    uint32_t last_n, ring_pos, ring_len;
};

/* ---- random numbers ----------------------------------------------------------- */

/* splitmix64: one word of state, passes BigCrush, trivially seeded by any value. */
static uint64_t next_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double ember_sampler_uniform(ember_sampler *s)
{
    return (double)(next_u64(&s->rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- create / free ------------------------------------------------------------ */

static bool top_p_on(const ember_sampling_params *p) { return p->top_p > 0 && p->top_p < 1; }

static ember_status check_bias(const ember_sampling_params *p, uint32_t n_vocab, ember_err *err)
{
    if (p->n_logit_bias > EMBER_MAX_LOGIT_BIAS || (p->n_logit_bias && !p->logit_bias))
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "sampler: %u logit biases (at most %u, and not NULL)",
                          p->n_logit_bias, EMBER_MAX_LOGIT_BIAS);
    for (uint32_t i = 0; i < p->n_logit_bias; i++) {
        const ember_logit_bias *b = &p->logit_bias[i];
        if (b->token >= n_vocab)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "sampler: logit bias for token %u, past the "
                              "vocabulary of %u", b->token, n_vocab);
        if (!isfinite(b->bias) && b->bias != -INFINITY)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "sampler: logit bias %g for token %u is not a "
                              "finite number or -inf", b->bias, b->token);
    }
    return EMBER_OK;
}

static ember_status check_params(const ember_sampling_params *p, uint32_t n_vocab, ember_err *err)
{
    if (n_vocab == 0)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "sampler: n_vocab is 0");
    if (!(p->temperature >= 0 && isfinite(p->temperature)))
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "sampler: temperature %g is not a finite "
                          "number >= 0", p->temperature);
    if (!(p->top_p >= 0 && p->top_p <= 1))
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "sampler: top_p %g is not in [0, 1]", p->top_p);
    if (!(p->min_p >= 0 && p->min_p <= 1))
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "sampler: min_p %g is not in [0, 1]", p->min_p);
    if (!(p->repetition_penalty >= 0 && isfinite(p->repetition_penalty)))
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "sampler: repetition_penalty %g is not a "
                          "finite number >= 0", p->repetition_penalty);
    if (!isfinite(p->frequency_penalty) || !isfinite(p->presence_penalty))
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "sampler: frequency/presence penalty "
                          "is not finite");
    if (p->penalty_last_n > MAX_LAST_N)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "sampler: penalty_last_n %u is larger "
                          "than %u", p->penalty_last_n, MAX_LAST_N);
    return check_bias(p, n_vocab, err);
}

ember_status ember_sampler_create(const ember_sampling_params *params, uint32_t n_vocab,
                                  ember_sampler **out, ember_err *err)
{
    static const ember_sampling_params greedy;
    const ember_sampling_params *p = params ? params : &greedy;
    *out = NULL;
    ember_status st = check_params(p, n_vocab, err);
    if (st) return st;
    ember_sampler *s = ember_calloc(1, sizeof *s);
    if (!s) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "sampler: out of memory");
    s->p = *p;
    s->n_vocab = n_vocab;
    s->last_n = p->penalty_last_n ? p->penalty_last_n : DEFAULT_LAST_N;
    s->cand = ember_malloc((size_t)n_vocab * sizeof *s->cand);
    s->ring = ember_malloc((size_t)s->last_n * sizeof *s->ring);
    s->saved = ember_malloc((size_t)s->last_n * sizeof *s->saved);
    s->scratch = ember_malloc((size_t)s->last_n * sizeof *s->scratch);
    if (top_p_on(p)) s->edge = ember_malloc((size_t)n_vocab * sizeof *s->edge);
    if (p->n_logit_bias && (s->bias = ember_malloc(p->n_logit_bias * sizeof *s->bias)))
        memcpy(s->bias, p->logit_bias, p->n_logit_bias * sizeof *s->bias);
    s->p.logit_bias = s->bias;
    if (!s->cand || !s->ring || !s->saved || !s->scratch || (top_p_on(p) && !s->edge) ||
        (p->n_logit_bias && !s->bias)) {
        ember_sampler_free(s);
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "sampler: out of memory for %u tokens",
                          n_vocab);
    }
    ember_sampler_reset(s);
    *out = s;
    return EMBER_OK;
}

void ember_sampler_free(ember_sampler *s)
{
    if (!s) return;
    ember_free(s->cand);
    ember_free(s->edge);
    ember_free(s->ring);
    ember_free(s->saved);
    ember_free(s->scratch);
    ember_free(s->bias);
    ember_free(s);
}

void ember_sampler_reset(ember_sampler *s)
{
    s->rng = s->p.seed;
    s->ring_pos = s->ring_len = 0;
}

uint32_t ember_sampler_n_vocab(const ember_sampler *s) { return s->n_vocab; }

void ember_sampler_accept(ember_sampler *s, uint32_t token)
{
    if (token >= s->n_vocab) return;
    s->ring[s->ring_pos] = token;
    s->ring_pos = (s->ring_pos + 1) % s->last_n;
    if (s->ring_len < s->last_n) s->ring_len++;
}

void ember_sampler_save(ember_sampler *s)
{
    memcpy(s->saved, s->ring, (size_t)s->last_n * sizeof *s->ring);
    s->saved_pos = s->ring_pos;
    s->saved_len = s->ring_len;
}

void ember_sampler_restore(ember_sampler *s)
{
    memcpy(s->ring, s->saved, (size_t)s->last_n * sizeof *s->ring);
    s->ring_pos = s->saved_pos;
    s->ring_len = s->saved_len;
}

/* ---- penalties ---------------------------------------------------------------- */

static bool penalties_on(const ember_sampling_params *p)
{
    return (p->repetition_penalty != 0 && p->repetition_penalty != 1) ||
           p->frequency_penalty != 0 || p->presence_penalty != 0;
}

int ember_sampler_has_penalties(const ember_sampler *s) { return penalties_on(&s->p); }

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void penalize(const ember_sampling_params *p, cand *c, uint32_t count)
{
    float r = p->repetition_penalty;
    if (r != 0 && r != 1) c->v = c->v > 0 ? c->v / r : c->v * r;
    c->v -= (float)count * p->frequency_penalty + p->presence_penalty;
    if (isnan(c->v)) c->v = -INFINITY; /* inf - inf: keep the order total */
}

/* Applies the penalties to c, which is still in id order (c[id].id == id). The window
 * is sorted in a scratch copy so that each distinct token is penalized once with its
 * count, at a cost independent of the vocabulary size. */
static void apply_penalties(ember_sampler *s, cand *c)
{
    uint32_t n = s->ring_len;
    if (n == 0 || !penalties_on(&s->p)) return;
    memcpy(s->scratch, s->ring, n * sizeof *s->scratch);
    qsort(s->scratch, n, sizeof *s->scratch, cmp_u32);
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j < n && s->scratch[j] == s->scratch[i]) j++;
        penalize(&s->p, &c[s->scratch[i]], j - i);
        i = j;
    }
}

/* ---- ordering and selection --------------------------------------------------- */

/* The order of "better": higher logit, then lower id. A strict total order, so that
 * selection and sorting give one answer whatever the algorithm. */
static bool better(const cand *a, const cand *b)
{
    return a->v > b->v || (a->v == b->v && a->id < b->id);
}

static int cmp_better(const void *a, const void *b)
{
    return better(a, b) ? -1 : better(b, a) ? 1 : 0;
}

static int cmp_id(const void *a, const void *b)
{
    uint32_t x = ((const cand *)a)->id, y = ((const cand *)b)->id;
    return (x > y) - (x < y);
}

static void swap(cand *a, cand *b)
{
    cand t = *a;
    *a = *b;
    *b = t;
}

/* Restores the heap property below i in a heap of m whose root is the worst. */
static void sift_down(cand *h, size_t m, size_t i)
{
    for (;;) {
        size_t worst = i, l = 2 * i + 1, r = l + 1;
        if (l < m && better(&h[worst], &h[l])) worst = l;
        if (r < m && better(&h[worst], &h[r])) worst = r;
        if (worst == i) return;
        swap(&h[i], &h[worst]);
        i = worst;
    }
}

/* Moves the m best of c[0..n) to c[0..m), in no particular order: c[0..m) becomes a
 * heap with the worst kept candidate at the root, and each later candidate costs one
 * comparison with it unless it is better. O(n + m log m log(n/m)) on typical rows,
 * O(n log m) at worst, and no mispredicted branch per element as in a quickselect. */
static void select_best(cand *c, size_t n, size_t m)
{
    if (m == 0 || m >= n) return;
    for (size_t i = m / 2; i-- > 0;) sift_down(c, m, i);
    for (size_t i = m; i < n; i++)
        if (better(&c[i], &c[0])) {
            c[0] = c[i];
            sift_down(c, m, 0);
        }
}

/* ---- filters ------------------------------------------------------------------ */

static float max_logit(const cand *c, size_t n)
{
    float mx = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if (c[i].v > mx) mx = c[i].v;
    return mx;
}

/* exp(l - mx) made safe for infinite maxima: with mx = +inf (or -inf, when every logit
 * is -inf) the tokens at the maximum share the probability equally. */
static float weight(float l, float mx, float inv_t)
{
    if (isinf(mx)) return l == mx;
    return expf((l - mx) * inv_t);
}

static uint32_t bucket_of(float l, float mx, float scale)
{
    float b = (mx - l) * scale; /* NaN or +inf for -inf logits: the last bucket */
    return b < TOP_P_BUCKETS - 1 ? (uint32_t)b : TOP_P_BUCKETS - 1;
}

/* The scale that spreads logits from mx down to the lowest finite one (at most
 * TOP_P_RANGE below: weights under e^-TOP_P_RANGE all share the last bucket) over the
 * buckets; 0 (everything in one bucket) when there is no finite spread. */
static float bucket_scale(const cand *c, size_t n, float mx)
{
    float mn = mx;
    for (size_t i = 0; i < n; i++)
        if (c[i].v < mn && c[i].v > -INFINITY) mn = c[i].v;
    float range = mx - mn;
    if (!(range > 0) || !isfinite(range)) return 0;
    return TOP_P_BUCKETS / (range < TOP_P_RANGE ? range : TOP_P_RANGE);
}

/* Keeps, in their order, the smallest set of best candidates whose probability reaches
 * top_p. A histogram of probability mass over logit ranges finds the bucket where the
 * running mass (best first) crosses top_p; only that bucket's candidates are sorted;
 * then one pass keeps every candidate at least as good as the last one needed. So the
 * cost is a few passes over c plus the sort of one bucket, never a sort of them all,
 * and candidates in id order stay in id order. */
static size_t top_p_cut(ember_sampler *s, cand *c, size_t n, float top_p)
{
    float mx = max_logit(c, n), scale = bucket_scale(c, n, mx);
    double *mass = s->mass, z = 0, cum = 0;
    memset(mass, 0, sizeof s->mass);
    for (size_t i = 0; i < n; i++) {
        float w = weight(c[i].v, mx, 1);
        z += w;
        mass[bucket_of(c[i].v, mx, scale)] += w;
    }
    double target = (double)top_p * z;
    uint32_t b = 0;
    for (; b < TOP_P_BUCKETS - 1 && cum + mass[b] < target; b++) cum += mass[b];
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (bucket_of(c[i].v, mx, scale) == b) s->edge[m++] = c[i];
    if (m == 0) return n; /* only by rounding at top_p ~ 1: keep everything */
    qsort(s->edge, m, sizeof *s->edge, cmp_better);
    cand last = s->edge[m - 1];
    for (size_t j = 0; j < m; j++)
        if ((cum += weight(s->edge[j].v, mx, 1)) >= target) {
            last = s->edge[j];
            break;
        }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!better(&last, &c[i])) c[k++] = c[i];
    return k;
}

/* Keeps, in their order, the candidates with p >= min_p * p_max, i.e. logit >=
 * max + log(min_p). The best one always stays. */
static size_t min_p_cut(cand *c, size_t n, float min_p)
{
    float mx = max_logit(c, n);
    double floor_ = isinf(mx) ? mx : (double)mx + log((double)min_p);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i].v >= floor_ || c[i].v == mx) c[k++] = c[i];
    return k;
}

/* Turns the logits of c[0..n) into probabilities at temperature t, in place. Returns
 * their sum as the draw adds them up (in double, in order), saving it a pass. */
static double softmax(cand *c, size_t n, float t)
{
    float mx = max_logit(c, n), inv_t = 1 / t;
    if (!(inv_t <= FLT_MAX)) inv_t = FLT_MAX; /* t under 1/FLT_MAX: one-hot on the max */
    double z = 0, total = 0;
    for (size_t i = 0; i < n; i++) z += (c[i].v = weight(c[i].v, mx, inv_t));
    double inv_z = 1 / z;
    for (size_t i = 0; i < n; i++) total += (c[i].v = (float)(c[i].v * inv_z));
    return total;
}

/* Copies the row into the candidates (id order, NaN -> -inf) and applies the biases,
 * then the penalties. */
static void load(ember_sampler *s, const float *logits)
{
    for (uint32_t i = 0; i < s->n_vocab; i++) {
        s->cand[i].v = isnan(logits[i]) ? -INFINITY : logits[i];
        s->cand[i].id = i;
    }
    for (uint32_t i = 0; i < s->p.n_logit_bias; i++) s->cand[s->bias[i].token].v += s->bias[i].bias;
    apply_penalties(s, s->cand);
}

/* Runs the whole chain. Leaves the survivors in s->cand[0..n), in id order, holding
 * their final probabilities, and their sum in *total; returns n (>= 1). */
static size_t run_chain(ember_sampler *s, const float *logits, double *total)
{
    const ember_sampling_params *p = &s->p;
    cand *c = s->cand;
    size_t n = s->n_vocab;
    bool moved = false;
    load(s, logits);
    if (p->temperature == 0) {
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            if (c[i].v > c[best].v) best = i; /* strict: lowest id wins ties */
        c[0].id = c[best].id;
        c[0].v = 1;
        *total = 1;
        return 1;
    }
    if (p->top_k > 0 && p->top_k < n) {
        select_best(c, n, p->top_k);
        n = p->top_k;
        moved = true;
    }
    if (top_p_on(p)) n = top_p_cut(s, c, n, p->top_p);
    if (p->min_p > 0) n = min_p_cut(c, n, p->min_p);
    if (moved) qsort(c, n, sizeof *c, cmp_id);
    *total = softmax(c, n, p->temperature);
    return n;
}

/* ---- drawing ------------------------------------------------------------------ */

/* Drawing: the token whose running sum of weights first passes u * total, walking
 * either the survivors (id order) or a full row. Zero weights add exactly nothing, so
 * both walks, and both totals, are the same sums: the same u gives the same token. */
static uint32_t pick_cand(const cand *c, size_t n, double total, double u)
{
    double target = u * total, cum = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i].v > 0 && (cum += c[i].v) > target) return c[i].id;
    for (size_t i = n; i-- > 0;) /* u * total rounded up past the sum */
        if (c[i].v > 0) return c[i].id;
    return c[0].id;
}

static uint32_t pick_row(const float *w, size_t n, double total, double u)
{
    double target = u * total, cum = 0;
    for (size_t i = 0; i < n; i++)
        if (w[i] > 0 && (cum += w[i]) > target) return (uint32_t)i;
    for (size_t i = n; i-- > 0;)
        if (w[i] > 0) return (uint32_t)i;
    return 0;
}

/* The first largest weight, for rows that do not sum to a positive finite number. */
static uint32_t first_largest(const float *w, size_t n)
{
    size_t best = 0;
    for (size_t i = 0; i < n; i++)
        if (w[i] > w[best] || isnan(w[best])) best = i;
    return (uint32_t)best;
}

/* ---- from a row's best candidates ----------------------------------------------- */

static bool top_k_on(const ember_sampler *s) { return s->p.top_k > 0 && s->p.top_k < s->n_vocab; }

static bool filters_on(const ember_sampler *s) { return top_k_on(s) || top_p_on(&s->p) || s->p.min_p > 0; }

/* Penalties that can only lower a logit: then a token outside the candidates stays below
 * the last candidate's raw logit. */
static bool penalties_lower(const ember_sampling_params *p)
{
    float r = p->repetition_penalty;
    return (r == 0 || r >= 1) && p->frequency_penalty >= 0 && p->presence_penalty >= 0;
}

bool ember_sampler_candidates_may_decide(const ember_sampler *s)
{
    const ember_sampling_params *p = &s->p;
    if (p->temperature == 0 || p->n_logit_bias) return false;
    /* With penalties, only a top-k set or a min-p set can be bounded by the candidates:
     * top-p and temperature alone need the whole row's sum after the penalties. */
    if (penalties_on(p) && !(penalties_lower(p) && (top_k_on(s) || (!top_p_on(p) && p->min_p > 0)))) return false;
    return !top_k_on(s) || p->top_k <= EMBER_CANDIDATES;
}

/* Applies the penalties to candidates c[0..n), as apply_penalties does to a row: each
 * candidate in the window once, with its count. */
static void penalize_candidates(ember_sampler *s, cand *c, size_t n)
{
    uint32_t w = s->ring_len, *win = s->scratch;
    if (w == 0 || !penalties_on(&s->p)) return;
    memcpy(win, s->ring, w * sizeof *win);
    qsort(win, w, sizeof *win, cmp_u32);
    for (size_t i = 0; i < n; i++) {
        const uint32_t *hit = bsearch(&c[i].id, win, w, sizeof *win, cmp_u32), *lo = hit, *hi = hit;
        if (!hit) continue;
        while (lo > win && lo[-1] == c[i].id) lo--;
        while (hi + 1 < win + w && hi[1] == c[i].id) hi++;
        penalize(&s->p, &c[i], (uint32_t)(hi - lo + 1));
    }
}

float ember_sampler_temperature(const ember_sampler *s) { return s->p.temperature; }

/* The nucleus of candidates c[0..n), best first, whose weights under mx reach target:
 * its size, or 0 when all n together fall short. The same tokens as top_p_cut keeps (the
 * shortest best-first prefix that reaches the target), walked directly. */
static size_t nucleus(const cand *c, size_t n, float mx, double target)
{
    double cum = 0;
    for (size_t i = 0; i < n; i++)
        if ((cum += weight(c[i].v, mx, 1)) >= target) return i + 1;
    return 0;
}

/* The chain of run_chain on a row's best candidates: the survivors in s->cand[0..n), in
 * id order, holding their probabilities; 0 when the candidates do not decide them, that
 * is when a filter would keep a token past them. */
static size_t candidate_chain(ember_sampler *s, const ember_cand_row *row, double *total)
{
    const ember_sampling_params *p = &s->p;
    cand *c = s->cand;
    size_t n = row->n;
    float mx = n ? row->c[0].logit : NAN;
    if (!ember_sampler_candidates_may_decide(s) || !filters_on(s) || n > EMBER_CANDIDATES || n > s->n_vocab ||
        !isfinite(mx))
        return 0;
    for (size_t i = 0; i < n; i++) c[i] = (cand){row->c[i].logit, row->c[i].id};
    bool all = n == s->n_vocab; /* the candidates are the whole row */
    /* Penalties (lowering only: may_decide) reorder the candidates; every other token stays
     * at or below the last candidate's raw logit, bound. */
    float bound = row->c[n - 1].logit;
    bool moved = penalties_on(p) && s->ring_len > 0;
    if (moved) {
        penalize_candidates(s, c, n);
        qsort(c, n, sizeof *c, cmp_better);
        mx = c[0].v;
        if (!all && !(mx > bound)) return 0;
    }
    double z = row->z;
    if (top_k_on(s)) { /* may_decide: top_k <= EMBER_CANDIDATES */
        if (p->top_k > n || (moved && !all && !(c[p->top_k - 1].v > bound))) return 0;
        n = p->top_k;
        z = 0;
        for (size_t i = 0; i < n; i++) z += weight(c[i].v, mx, 1);
        all = true;
    }
    if (top_p_on(p)) {
        size_t k = z > 0 ? nucleus(c, n, mx, (double)p->top_p * z) : 0;
        if (k == 0 && !all) return 0;
        n = k ? k : n; /* the whole set short of its own sum: rounding at top_p ~ 1 */
        all = true;
    }
    if (p->min_p > 0) {
        if (moved && !all && !((double)mx + log((double)p->min_p) > bound)) return 0; /* an unseen token may pass */
        size_t k = min_p_cut(c, n, p->min_p);
        if (k == n && !all) return 0; /* every candidate passes: so might the next token */
        n = k;
        all = true;
    }
    if (!all) return 0;
    qsort(c, n, sizeof *c, cmp_id);
    *total = softmax(c, n, p->temperature);
    return n;
}

/* Temperature alone: the whole row is the support. One number u picks the token whose
 * running sum of weights exp((l - max) / t), walked over the candidates in id order and
 * then over the rest of the row in id order, first passes u * z_t (the GPU's sum over the
 * row). Without the row, only a u that lands among the candidates decides; else the
 * generator is put back. */
static bool draw_whole(ember_sampler *s, const ember_cand_row *row, const float *logits, uint32_t *token)
{
    size_t n = row->n;
    float mx = n ? row->c[0].logit : NAN, inv_t = 1 / s->p.temperature;
    if (!(inv_t <= FLT_MAX)) inv_t = FLT_MAX;
    if (n == 0 || n > EMBER_CANDIDATES || n > s->n_vocab || !isfinite(mx) || !(row->z_t > 0 && isfinite(row->z_t))) {
        if (logits) *token = ember_sampler_sample(s, logits);
        return logits != NULL;
    }
    cand *c = s->cand;
    for (size_t i = 0; i < n; i++) c[i] = (cand){weight(row->c[i].logit, mx, inv_t), row->c[i].id};
    qsort(c, n, sizeof *c, cmp_id);
    uint64_t before = s->rng;
    double target = ember_sampler_uniform(s) * row->z_t, cum = 0;
    uint32_t last = c[0].id; /* the last token of positive weight walked: rounding's answer */
    for (size_t i = 0; i < n; i++)
        if (c[i].v > 0 && (last = c[i].id, cum += c[i].v) > target) return *token = c[i].id, true;
    if (n < s->n_vocab && !logits) {
        s->rng = before;
        return false;
    }
    for (uint32_t id = 0, k = 0; n < s->n_vocab && id < s->n_vocab; id++) {
        if (k < n && c[k].id == id) { /* a candidate: walked already */
            k++;
            continue;
        }
        float w = weight(isnan(logits[id]) ? -INFINITY : logits[id], mx, inv_t);
        if (w > 0 && (last = id, cum += w) > target) return *token = id, true;
    }
    return *token = last, true;
}

bool ember_sampler_sample_candidates(ember_sampler *s, const ember_cand_row *row, const float *logits,
                                     uint32_t *token)
{
    double total;
    size_t n = candidate_chain(s, row, &total);
    if (n) {
        *token = pick_cand(s->cand, n, total, ember_sampler_uniform(s));
        return true;
    }
    if (ember_sampler_candidates_may_decide(s) && !filters_on(s)) return draw_whole(s, row, logits, token);
    if (logits) *token = ember_sampler_sample(s, logits);
    return logits != NULL;
}

uint32_t ember_sampler_sample(ember_sampler *s, const float *logits)
{
    double total;
    size_t n = run_chain(s, logits, &total);
    return pick_cand(s->cand, n, total, ember_sampler_uniform(s));
}

void ember_sampler_probs(ember_sampler *s, const float *logits, float *probs)
{
    double total;
    size_t n = run_chain(s, logits, &total);
    memset(probs, 0, (size_t)s->n_vocab * sizeof *probs);
    for (size_t i = 0; i < n; i++) probs[s->cand[i].id] = s->cand[i].v;
}

uint32_t ember_sampler_draw(ember_sampler *s, const float *probs)
{
    double total = 0, u = ember_sampler_uniform(s);
    for (size_t i = 0; i < s->n_vocab; i++)
        if (probs[i] > 0) total += probs[i];
    if (!(total > 0 && total <= DBL_MAX)) return first_largest(probs, s->n_vocab);
    return pick_row(probs, s->n_vocab, total, u);
}
