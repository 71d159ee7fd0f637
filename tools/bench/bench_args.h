/* bench_args.h — `ember bench`'s options (bench_args.c): the workload's, the in-process
 * engine's and how the requests are sent, parsed, checked against each other and listed
 * with their defaults in --help. */
#ifndef EMBER_TOOLS_BENCH_ARGS_H
#define EMBER_TOOLS_BENCH_ARGS_H

#include <stdio.h>

#include "tools/cli.h"

typedef struct bench_args {
    cli_model_args model;
    long requests, prompt_lo, prompt_hi, gen_lo, gen_hi, shared_prefix, seed;
    double rate;                       /* requests per second; 0 = all at once */
    float slo_ttft_ms, slo_tpot_ms;
    ember_engine_opts eo;
    const char *draft;            /* --draft: a draft model for speculative decoding */
    ember_speculation spec;
    long concurrency;             /* most requests submitted and unfinished; 0 = no limit */
    const char *url, *api_key;    /* --url: a server to drive instead of an engine */
    long vocab;                   /* --url: prompt token ids are drawn below this */
    const char *engine_flag;      /* the first engine option given, refused with --url */
    ember_sampling sampling;      /* --temp, --top-k, ...: every request's (greedy by default) */
    ember_logit_bias bias[CLI_MAX_BIAS];
    const char *sampling_flag;    /* the first sampling option given, refused with --url */
    bool disaggregate;            /* prefill engine -> KV state -> decode engine */
    long prefill_device;          /* --prefill-device N: N + 1 (a device_index); 0 = automatic */
    bool json, help;
} bench_args;

/* Fills *a from the command line (defaults first); false after saying on stderr what is
 * wrong. --help sets a->help. */
bool bench_parse(int argc, char **argv, bench_args *a);
/* Prints the usage with every option's default to out; returns code. */
int bench_usage(FILE *out, int code);
/* The --batching name of b, as the report prints it. */
const char *bench_batching_name(ember_batching b);

#endif
