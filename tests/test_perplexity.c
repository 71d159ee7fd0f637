/* test_perplexity.c — `ember perplexity`: the Vulkan and CPU backends agree on the
 * log-likelihood; windows of --ctx tokens score every token but each window's first;
 * stories260K predicts a TinyStories-like text well, and its Q8_0 copy (ember quantize)
 * nearly as well. */
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
