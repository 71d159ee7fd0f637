/* ember_logprobs.c — `ember_logprobs MODEL.gguf vulkan|cpu TOKENS OUT`: Ember's
 * per-token -log p of a token sequence, for bench/logprobs-vs-llama.sh to compare with
 * llama.cpp's. TOKENS holds the ids (whitespace-separated, BOS first); OUT gets one line
 * per predicted token i = 1..n-1: -log p(t[i] | t[0..i)), %.17g.
 *
 * Through the public API only: ember_score gives the sum of -log p over a window, so the
 * value of token i is score(t[0..i]) - score(t[0..i-1]), each prefix one window from
 * position 0. A token's logits do not depend on its batch (docs/architecture.md), so
 * each prefix's terms are the same numbers, and the difference of two double sums of
 * about n terms of a few units is exact to ~1e-13. It costs n passes over prefixes
 * (n^2/2 token rows): fine for the bench's small model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember.h"

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[2], "vulkan") != 0 && strcmp(argv[2], "cpu") != 0)) {
        fprintf(stderr, "usage: ember_logprobs MODEL.gguf vulkan|cpu TOKENS OUT\n");
        return 2;
    }
    FILE *f = fopen(argv[3], "r");
    if (!f) {
        perror(argv[3]);
        return 1;
    }
    uint32_t *t = NULL;
    size_t n = 0, cap = 0;
    unsigned v;
    while (fscanf(f, "%u", &v) == 1) {
        if (n == cap && !(t = realloc(t, (cap = cap ? 2 * cap : 256) * sizeof *t))) return 1;
        t[n++] = v;
    }
    fclose(f);
    if (n < 2) {
        fprintf(stderr, "%s: fewer than 2 tokens\n", argv[3]);
        return 1;
    }
    ember_model_opts o = {.backend = strcmp(argv[2], "cpu") == 0 ? EMBER_BACKEND_CPU : EMBER_BACKEND_VULKAN};
    ember_model *m = NULL;
    if (ember_model_load(argv[1], &o, &m) != EMBER_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], ember_model_error(m));
        ember_model_free(m);
        return 1;
    }
    ember_model_info info;
    ember_model_get_info(m, &info);
    if (n > info.ctx_len) {
        fprintf(stderr, "%zu tokens: more than the model's context (%u)\n", n, info.ctx_len);
        return 1;
    }
    FILE *out = fopen(argv[4], "w");
    if (!out) {
        perror(argv[4]);
        return 1;
    }
    double prev = 0;
    for (size_t k = 2; k <= n; k++) { /* the prefix t[0..k) predicts t[1..k) */
        double nll = 0;
        size_t scored = 0;
        if (ember_score(m, t, k, (uint32_t)k, &nll, &scored) != EMBER_OK || scored != k - 1) {
            fprintf(stderr, "ember_score: %s\n", ember_model_error(m));
            return 1;
        }
        fprintf(out, "%.17g\n", nll - prev);
        prev = nll;
    }
    fclose(out);
    fprintf(stderr, "%s on %s: %zu tokens\n", argv[1], info.device_name, n - 1);
    ember_model_free(m);
    free(t);
    return 0;
}
