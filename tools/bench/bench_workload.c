/* bench_workload.c — `ember bench`'s workload (bench_workload.h). */
#include "bench_workload.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static long uniform(uint64_t *s, long lo, long hi) { return lo + (long)(next_rand(s) % (uint64_t)(hi - lo + 1)); }

bool bench_make_workload(const bench_args *a, uint32_t n_vocab, workload *w)
{
    uint64_t s = (uint64_t)a->seed * 7919 + 1;
    w->n = (uint32_t)a->requests;
    if (!(w->r = calloc(w->n, sizeof *w->r))) return false;
    uint32_t *prefix = calloc((size_t)a->shared_prefix + 1, sizeof *prefix);
    if (!prefix) return false;
    for (long i = 0; i < a->shared_prefix; i++) prefix[i] = 3 + (uint32_t)(next_rand(&s) % (n_vocab - 3));
    double t = 0;
    for (uint32_t i = 0; i < w->n; i++) {
        req *r = &w->r[i];
        if (a->rate > 0) t += -log(1.0 - (next_rand(&s) >> 11) * (1.0 / 9007199254740992.0)) / a->rate;
        r->arrival_s = t;
        r->n_prompt = (uint32_t)(a->shared_prefix + uniform(&s, a->prompt_lo, a->prompt_hi));
        r->n_gen = (uint32_t)uniform(&s, a->gen_lo, a->gen_hi);
        r->prompt = malloc(r->n_prompt * sizeof *r->prompt);
        r->token_ms = malloc(r->n_gen * sizeof *r->token_ms);
        if (!r->prompt || !r->token_ms) return false;
        memcpy(r->prompt, prefix, a->shared_prefix * sizeof *prefix);
        for (uint32_t j = (uint32_t)a->shared_prefix; j < r->n_prompt; j++)
            r->prompt[j] = 3 + (uint32_t)(next_rand(&s) % (n_vocab - 3));
    }
    free(prefix);
    return true;
}

void bench_free_workload(workload *w)
{
    for (uint32_t i = 0; w->r && i < w->n; i++) free(w->r[i].prompt), free(w->r[i].token_ms);
    free(w->r);
}

void bench_progress(const workload *w, uint32_t submitted)
{
    char tail[64];
    snprintf(tail, sizeof tail, "%u/%u done, %u submitted", w->completed, w->n, submitted);
    cli_progress("bench", (double)w->completed / w->n, tail);
}
