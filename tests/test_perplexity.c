/* test_perplexity.c — `ember perplexity`: the Vulkan and CPU backends agree on the
 * log-likelihood; windows of --ctx tokens score every token but each window's first;
 * --method llama gives llama-perplexity's figure (windows of -c tokens made to start with
 * BOS, their second half scored; running values per window), checked against the same
 * rule applied here to per-token values from the CPU reference; stories260K predicts a
 * TinyStories-like text well, and its Q8_0 copy (ember quantize) nearly as well. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static int ppl(const char *model, const char *backend, const char *extra, char *out, size_t cap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s perplexity -m %s -f %s/../bench/data/story.txt --backend %s --json %s",
             tu_ember_bin(), model, EMBER_TESTS_DIR, backend, extra);
    return tu_run(cmd, out, cap);
}

static void backends_agree(const char *model, const char *extra, double *ppl_out)
{
    char cpu[1024], gpu[1024];
    CHECK(ppl(model, "cpu", extra, cpu, sizeof cpu) == 0);
    CHECK(ppl(model, "vulkan", extra, gpu, sizeof gpu) == 0);
    double a = tu_json_num(cpu, "nll"), b = tu_json_num(gpu, "nll");
    printf("%s %s: nll cpu %.5f, vulkan %.5f, perplexity %.4f, scored %.0f of %.0f\n", model, extra, a, b,
           tu_json_num(gpu, "perplexity"), tu_json_num(gpu, "scored"), tu_json_num(gpu, "tokens"));
    CHECK(a > 0 && fabs(a - b) <= 1e-4 * a);
    CHECK(tu_json_num(cpu, "scored") == tu_json_num(gpu, "scored"));
    *ppl_out = tu_json_num(gpu, "perplexity");
}

/* -log p of w[i] given w[0..i), for i = 1..n-1, into nll[i]: differences of the scores
 * of growing prefixes (each a window of its own), on the CPU reference backend. */
static bool per_token(ember_model *m, const uint32_t *w, uint32_t n, double *nll)
{
    double prev = 0, all;
    size_t k;
    for (uint32_t i = 1; i < n; i++) {
        if (ember_score(m, w, i + 1, i + 1, &all, &k) != EMBER_OK) return false;
        nll[i] = all - prev, prev = all;
    }
    return true;
}

/* llama-perplexity's rule (tools/perplexity/perplexity.cpp, perplexity()): n / ctx
 * windows, each's first token replaced by BOS, tokens ctx/2 + 1 .. ctx-1 scored; the
 * running perplexity after each window into running[]. Returns the windows' count. */
static size_t llama_reference(ember_model *m, const uint32_t *ids, size_t n, uint32_t ctx, double *running,
                              size_t *scored)
{
    uint32_t w[64];
    double nll[64], sum = 0;
    size_t chunks = n / ctx;
    *scored = 0;
    for (size_t c = 0; c < chunks; c++) {
        memcpy(w, ids + c * ctx, ctx * sizeof *w);
        w[0] = ids[0]; /* the text's BOS */
        CHECK(per_token(m, w, ctx, nll));
        for (uint32_t i = ctx / 2 + 1; i < ctx; i++) sum += nll[i], ++*scored;
        running[c] = exp(sum / (double)*scored);
    }
    return chunks;
}

/* The numbers of the JSON array after "key": [ into out; their count. */
static size_t json_array(const char *json, const char *key, double *out, size_t cap)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\": [", key);
    const char *p = strstr(json, k);
    size_t n = 0;
    for (p = p ? p + strlen(k) : NULL; p && *p != ']' && n < cap; n++) {
        char *end;
        out[n] = strtod(p, &end);
        if (end == p) break;
        p = end + strspn(end, ", ");
    }
    return n;
}

static void llama_method(const char *model)
{
    char text[4096], out[4096];
    FILE *f = fopen(EMBER_TESTS_DIR "/../bench/data/story.txt", "rb");
    size_t len = f ? fread(text, 1, sizeof text, f) : 0;
    if (f) fclose(f);
    ember_model_opts mo = {.backend = EMBER_BACKEND_CPU};
    ember_model *m = NULL;
    CHECK(len > 0 && ember_model_load(model, &mo, &m) == EMBER_OK);
    uint32_t ids[2048];
    size_t n = 0;
    CHECK(ember_tokenize(m, text, len, EMBER_TOKENIZE_ADD_BOS, ids, 2048, &n) == EMBER_OK && n >= 64 && n <= 2048);
    double ref[64], got[64];
    size_t scored, chunks = llama_reference(m, ids, n, 32, ref, &scored);
    ember_model_free(m);
    CHECK(ppl(model, "vulkan", "--method llama -c 32", out, sizeof out) == 0);
    size_t n_got = json_array(out, "chunks", got, 64);
    printf("llama method, -c 32: %zu chunks, perplexity %.6f (reference %.6f), scored %.0f (reference %zu)\n", n_got,
           tu_json_num(out, "perplexity"), ref[chunks - 1], tu_json_num(out, "scored"), scored);
    CHECK(strstr(out, "\"method\": \"llama\"") && tu_json_num(out, "ctx") == 32);
    CHECK(n_got == chunks && tu_json_num(out, "scored") == (double)scored && scored == chunks * 15);
    for (size_t c = 0; c < chunks && c < n_got; c++) CHECKF(fabs(got[c] - ref[c]) <= 1e-4 * ref[c], "chunk %zu", c + 1);
    CHECK(fabs(tu_json_num(out, "perplexity") - ref[chunks - 1]) <= 1e-4 * ref[chunks - 1]);
}

int main(void)
{
    char model[512], cmd[2048], out[1024];
    double p;
    snprintf(model, sizeof model, "%s/ppl_model.gguf", tu_tmp_dir());
    snprintf(cmd, sizeof cmd,
             "%s make-test-model %s --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 128 --type q8_0",
             tu_ember_bin(), model);
    CHECK(tu_run(cmd, NULL, 0) == 0);
    backends_agree(model, "--ctx 100", &p);
    CHECK(ppl(model, "cpu", "--ctx 100", out, sizeof out) == 0);
    double n = tu_json_num(out, "tokens");
    CHECK(tu_json_num(out, "scored") == n - ceil(n / 100)); /* each window's first token is context */
    CHECK(strstr(out, "\"method\": \"ember\"") != NULL);
    llama_method(model);

    const char *shared = tu_shared_dir();
    if (!shared) return tu_skip("../shared absent: stories260K perplexity not checked");
    char f32[512], q8[512];
    snprintf(f32, sizeof f32, "%s/models/stories260K/stories260K-f32.v3.gguf", shared);
    snprintf(q8, sizeof q8, "%s/stories_q8_0.gguf", tu_tmp_dir());
    snprintf(cmd, sizeof cmd, "%s quantize %s %s q8_0", tu_ember_bin(), f32, q8);
    CHECK(tu_run(cmd, NULL, 0) == 0);
    double pf, pq;
    backends_agree(f32, "", &pf);
    backends_agree(q8, "", &pq);
    printf("stories260K: perplexity F32 %.4f, Q8_0 %.4f (%+.2f%%)\n", pf, pq, 100 * (pq - pf) / pf);
    CHECK(pf > 1 && pf < 10);
    CHECK(fabs(pq - pf) < 0.01 * pf);
    return tu_finish("test_perplexity");
}
