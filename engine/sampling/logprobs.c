/* logprobs.c — see logprobs.h. Sums in double: a 128k-token row of float terms would lose
 * the small ones. */
#include <math.h>

#include "logprobs.h"

static float finite_or_neg_inf(float v)
{
    return isnan(v) ? -INFINITY : v;
}

/* Whether (a, ta) ranks above (b, tb): higher logit, then lower id (the candidates' order). */
static bool above(float a, uint32_t ta, float b, uint32_t tb)
{
    return a > b || (a == b && ta < tb);
}

void ember_logprobs_of_row(const float *logits, uint32_t n_vocab, uint32_t k, ember_row_logprobs *out)
{
    float m = -INFINITY;
    for (uint32_t i = 0; i < n_vocab; i++) {
        float v = finite_or_neg_inf(logits[i]);
        if (isfinite(v) && v > m) m = v;
    }
    if (!isfinite(m)) m = 0;
    double z = 0;
    uint32_t n = 0;
    ember_token_logprob *top = out->lp.top;
    if (k > n_vocab) k = n_vocab;
    for (uint32_t i = 0; i < n_vocab; i++) {
        float v = finite_or_neg_inf(logits[i]);
        z += exp((double)v - m);
        if (k == 0 || (n == k && !above(v, i, top[n - 1].logprob, top[n - 1].token))) continue;
        uint32_t j = n < k ? n++ : k - 1; /* insert, dropping the last when full */
        for (; j > 0 && above(v, i, top[j - 1].logprob, top[j - 1].token); j--) top[j] = top[j - 1];
        top[j] = (ember_token_logprob){i, v};
    }
    out->shift = m + log(z);
    out->lp.n_top = n;
    for (uint32_t j = 0; j < n; j++) top[j].logprob = (float)(top[j].logprob - out->shift);
}

void ember_logprobs_of_cands(const ember_cand_row *row, uint32_t k, ember_row_logprobs *out)
{
    float best = row->n ? finite_or_neg_inf(row->c[0].logit) : -INFINITY;
    double m = isfinite(best) ? best : 0; /* as topk.comp takes it */
    out->shift = m + log((double)row->z);
    out->lp.n_top = k < row->n ? k : row->n;
    for (uint32_t j = 0; j < out->lp.n_top; j++)
        out->lp.top[j] = (ember_token_logprob){row->c[j].id, (float)(finite_or_neg_inf(row->c[j].logit) - out->shift)};
}

void ember_logprobs_pick(ember_row_logprobs *out, uint32_t tok, float logit)
{
    out->lp.chosen = (ember_token_logprob){tok, (float)(finite_or_neg_inf(logit) - out->shift)};
}

bool ember_logprobs_cand_logit(const ember_cand_row *row, uint32_t tok, float *logit)
{
    for (uint32_t j = 0; j < row->n; j++)
        if (row->c[j].id == tok) return (*logit = row->c[j].logit), true;
    return false;
}
