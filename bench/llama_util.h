/* llama_util.h — what the bench/ programs built against llama.cpp's library share
 * (bench/logprobs_vs_llama/llama_logprobs.c, bench/speed_vs_llama/llama_speed.c): a
 * token file and a model loaded from the backends of one prebuilt build. Header-only
 * (static functions): each program is one C file compiled by bench/llama_cpp.sh. */
#ifndef BENCH_LLAMA_UTIL_H
#define BENCH_LLAMA_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "ggml-backend.h"
#include "llama.h"

/* The whitespace-separated ids of path (at least min of them), into *t (malloc'd);
 * returns their count, or -1 with a message. */
static int read_tokens(const char *path, int min, llama_token **t)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    int n = 0, cap = 0, v;
    *t = NULL;
    while (fscanf(f, "%d", &v) == 1) {
        if (n == cap && !(*t = realloc(*t, (size_t)(cap = cap ? 2 * cap : 256) * sizeof **t))) return -1;
        (*t)[n++] = v;
    }
    fclose(f);
    if (n < min) {
        fprintf(stderr, "%s: fewer than %d tokens\n", path, min);
        return -1;
    }
    return n;
}

/* The model at path, every layer on the build's GPU device when it has one, with the
 * backends of libdir; NULL with a message. log: llama.cpp's log callback. */
static struct llama_model *load_model(const char *libdir, const char *path, ggml_log_callback log)
{
    llama_log_set(log, NULL);
    ggml_backend_load_all_from_path(libdir);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = -1;
    struct llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) fprintf(stderr, "%s: llama.cpp cannot load it\n", path);
    return model;
}

/* 0 when every id of t is in the model's vocabulary, else -1 with a message. */
static int check_tokens(const struct llama_model *model, const llama_token *t, int n)
{
    int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    for (int i = 0; i < n; i++)
        if (t[i] < 0 || t[i] >= n_vocab) {
            fprintf(stderr, "token %d outside the vocabulary (%d)\n", t[i], n_vocab);
            return -1;
        }
    return 0;
}

/* Frees what a run made and llama.cpp's backends; returns 0 (main's exit status). */
static int finish(struct llama_batch b, struct llama_context *ctx, struct llama_model *model, llama_token *t)
{
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    free(t);
    return 0;
}

#endif
