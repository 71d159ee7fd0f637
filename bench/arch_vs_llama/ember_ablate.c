/* ember_ablate.c — `ember_ablate MODEL.gguf FEATURE TOKENS OUT`: Ember's per-token -log p
 * of a token sequence (ember_logprobs.c's output) from its CPU reference pass with one
 * feature of the model's recipe switched off, for bench/arch-vs-llama.sh to show that its
 * comparison with llama.cpp would catch that feature missing (docs/models.md).
 * FEATURE: softcap (attention and final soft-caps), window (every layer global), qk-norm,
 * nope (every layer rotates), top1 (a token runs one expert), expert-norm (the picked
 * experts' weights not renormalised), sinks (no attention sinks), oai-swiglu (the plain
 * SwiGLU for gpt-oss's clamped one), or none (the model as it is: the CPU backend's
 * numbers).
 * Built against the library's internals (libember.a): the description is edited after
 * it is loaded, which no public call does. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cpu/reference.h"
#include "engine/model/model.h"

/* Switches feature off in m; false for an unknown name. */
static bool ablate(ember_llama *m, const char *feature)
{
    ember_hparams *hp = &m->hp;
    if (strcmp(feature, "sinks") == 0) {
        for (uint32_t l = 0; l < hp->n_layers; l++) m->layers[l].sinks = NULL;
        return true;
    }
    if (strcmp(feature, "softcap") == 0) hp->attn_softcap = hp->final_softcap = 0;
    else if (strcmp(feature, "window") == 0) hp->swa_window = 0;
    else if (strcmp(feature, "qk-norm") == 0) hp->qk_norm = EMBER_QK_NORM_NONE;
    else if (strcmp(feature, "nope") == 0) hp->nope_step = 0;
    else if (strcmp(feature, "top1") == 0) hp->n_expert_used = 1;
    else if (strcmp(feature, "expert-norm") == 0) hp->expert_norm = false;
    else if (strcmp(feature, "oai-swiglu") == 0) hp->act = EMBER_FFN_SILU;
    else if (strcmp(feature, "none") != 0) return false;
    return true;
}

static uint32_t *read_tokens(const char *path, uint32_t *n)
{
    FILE *f = fopen(path, "r");
    uint32_t *t = NULL, cap = 0;
    unsigned v;
    *n = 0;
    while (f && fscanf(f, "%u", &v) == 1) {
        if (*n == cap && !(t = realloc(t, (cap = cap ? 2 * cap : 256) * sizeof *t))) break;
        t[(*n)++] = v;
    }
    if (f) fclose(f);
    return t;
}

/* -log softmax(row)[target], stably in double. */
static double nll_of(const float *row, uint32_t n_vocab, uint32_t target)
{
    double max = row[0], sum = 0;
    for (uint32_t j = 1; j < n_vocab; j++) max = row[j] > max ? row[j] : max;
    for (uint32_t j = 0; j < n_vocab; j++) sum += exp((double)row[j] - max);
    return log(sum) - ((double)row[target] - max);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: ember_ablate MODEL.gguf softcap|window|qk-norm|nope|top1|expert-norm|sinks|oai-swiglu|none "
                        "TOKENS OUT\n");
        return 2;
    }
    ember_gguf *g = NULL;
    ember_llama m;
    ember_ref *r = NULL;
    ember_err err = {{0}};
    uint32_t n = 0, *t = read_tokens(argv[3], &n);
    if (n < 2) return fprintf(stderr, "%s: fewer than 2 tokens\n", argv[3]), 1;
    if (ember_gguf_open(argv[1], &g, &err) || ember_llama_load(g, &m, &err))
        return fprintf(stderr, "%s\n", err.msg), 1;
    if (!ablate(&m, argv[2])) return fprintf(stderr, "unknown feature '%s'\n", argv[2]), 2;
    float *logits = malloc((size_t)n * m.hp.n_vocab * sizeof *logits);
    if (!logits || ember_ref_create(&m, &r, &err) || ember_ref_forward(r, t, n, 0, logits, 1, &err))
        return fprintf(stderr, "reference: %s\n", err.msg), 1;
    FILE *out = fopen(argv[4], "w");
    for (uint32_t i = 1; out && i < n; i++)
        fprintf(out, "%.17g\n", nll_of(logits + (size_t)(i - 1) * m.hp.n_vocab, m.hp.n_vocab, t[i]));
    if (out) fclose(out);
    ember_ref_free(r);
    ember_llama_free(&m);
    ember_gguf_close(g);
    free(logits);
    free(t);
    return out ? 0 : 1;
}
