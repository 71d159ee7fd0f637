/* bench_workload.h — the seeded synthetic workload of `ember bench` (bench_workload.c):
 * Poisson arrivals, prompt and output lengths drawn from the --prompt-len and --gen-len
 * ranges, random token ids after an optional shared prefix; the same for an in-process
 * engine and for a server (--url). */
#ifndef EMBER_TOOLS_BENCH_WORKLOAD_H
#define EMBER_TOOLS_BENCH_WORKLOAD_H

#include "bench_args.h"

typedef struct req {
    double arrival_s;
    uint32_t *prompt, n_prompt, n_gen;
    double *token_ms;                  /* arrival of each token, for inter-token latency */
    uint32_t n_tokens;
    ember_request_metrics m;
    bool done;
    ember_finish why;
    double t_submit;                   /* --disaggregate: when it went to the prefill engine */
    ember_request_desc decode;         /* --disaggregate: what goes to the decode engine */
    ember_engine *decoder;
} req;

typedef struct workload {
    req *r;
    uint32_t n, completed;
    uint32_t concurrency;              /* most submitted and unfinished; 0 = no limit */
    double t0;
    ember_speculation spec;
    ember_sampling sampling;           /* request i samples with seed sampling.seed + i */
    const char *prefill_on, *decode_on; /* --disaggregate: the engines' devices */
} workload;

/* Draws a's workload into *w (w->r allocated; free with bench_free_workload) with token
 * ids in [3, n_vocab); false when memory runs out. */
bool bench_make_workload(const bench_args *a, uint32_t n_vocab, workload *w);
void bench_free_workload(workload *w);
/* A progress bar on stderr when it is a terminal: completed of all, and how many were
 * submitted; cleared when all are done. */
void bench_progress(const workload *w, uint32_t submitted);

#endif
