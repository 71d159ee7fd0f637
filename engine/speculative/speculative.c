/* speculative.c — see speculative.h. */
#include <string.h>

#include "speculative.h"

uint32_t ember_ngram_propose(const uint32_t *tokens, uint32_t len, uint32_t n, uint32_t k, uint32_t *out)
{
    if (n == 0 || k == 0 || len <= n) return 0;
    const uint32_t *tail = tokens + len - n;
    /* Latest occurrence first: recent text predicts best. j is where a match starts. */
    for (uint32_t j = len - n; j-- > 0;) {
        if (memcmp(tokens + j, tail, n * sizeof *tokens) != 0) continue;
        uint32_t avail = len - (j + n), m = avail < k ? avail : k;
        memcpy(out, tokens + j + n, m * sizeof *out);
        return m;
    }
    return 0;
}

uint32_t ember_spec_accept_greedy(const uint32_t *argmax, const uint32_t *draft, uint32_t k, uint32_t *out)
{
    uint32_t i = 0;
    while (i < k && argmax[i] == draft[i]) {
        out[i] = draft[i];
        i++;
    }
    out[i] = argmax[i]; /* the correction, or the bonus when all were accepted */
    return i + 1;
}

/* Draws from max(0, p - q) (q = NULL: a point mass at d), renormalized by the draw. */
static uint32_t draw_residual(ember_sampler *s, const float *p, const float *q, uint32_t d, uint32_t n_vocab,
                              float *scratch)
{
    double total = 0;
    for (uint32_t j = 0; j < n_vocab; j++) {
        float qj = q ? q[j] : (j == d ? 1.0f : 0.0f);
        scratch[j] = p[j] > qj ? p[j] - qj : 0.0f;
        total += scratch[j];
    }
    /* p == q exactly: a rejection cannot happen then, but rounding can get us here. */
    return ember_sampler_draw(s, total > 0 ? scratch : p);
}

uint32_t ember_spec_accept(ember_sampler *s, const float *p, const float *q, const uint32_t *draft, uint32_t k,
                           uint32_t n_vocab, float *scratch, uint32_t *out)
{
    for (uint32_t i = 0; i < k; i++) {
        const float *pi = p + (size_t)i * n_vocab, *qi = q ? q + (size_t)i * n_vocab : NULL;
        uint32_t d = draft[i];
        double pd = pi[d], qd = qi ? qi[d] : 1.0;
        double u = ember_sampler_uniform(s);
        if (qd > 0 && u * qd < pd) { /* u < p/q without dividing */
            out[i] = d;
            continue;
        }
        out[i] = draw_residual(s, pi, qi, d, n_vocab, scratch);
        return i + 1;
    }
    out[k] = ember_sampler_draw(s, p + (size_t)k * n_vocab);
    return k + 1;
}

uint32_t ember_spec_adapt(uint32_t k, uint32_t accepted, uint32_t k_max)
{
    if (accepted >= k && k < k_max) return k + 1;
    if (2 * accepted < k && k > 1) return k - 1;
    return k;
}
