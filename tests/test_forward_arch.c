/* test_forward_arch.c — the GPU forward pass on models beyond plain llama against the CPU
 * reference (docs/models.md), on models made by `ember make-test-model`:
 *  - qwen2 (Q/K/V biases, NeoX RoPE), Llama 3.1-style RoPE frequency factors, linear
 *    RoPE scaling by 4, and qwen2 with factors and scaling 2.5; grouped-query attention;
 *    a 45-token prompt prefilled in chunks of 20 through a shuffled block table (blocks
 *    of 16, so chunks and blocks straddle each other) and 8 decode steps after it, logits
 *    of every row compared (F32 to 1e-4, Q8_0 weights to 1e-3);
 *  - `ember generate --backend cpu` and `--backend vulkan` give the same 32 greedy tokens
 *    on a qwen2 Q8_0 model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/forward.h"
#include "engine/reference.h"
#include "tests/testutil.h"

#define NV 512
#define CTX 128
#define BS 16
#define MAXB (CTX / BS)

static int make_model(const char *name, const char *args, char *path, size_t cap)
{
    snprintf(path, cap, "%s/fwd_arch_%s.gguf", tu_tmp_dir(), name);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s make-test-model %s --dim 128 --layers 2 --heads 8 --kv-heads 2 --ffn 320 --vocab %d --ctx %d "
             "--seed 5 %s",
             tu_ember_bin(), path, NV, CTX, args);
    return tu_run(cmd, NULL, 0);
}

/* Worst relative error of the GPU's logits against the reference over a chunked
 * prefill and decode steps; -1 on a failure. */
static double compare(ember_vk *vk, const char *path)
{
    enum { N = 45, CHUNK = 20, DEC = 8 };
    ember_err err = {0};
    ember_gguf *g = NULL;
    ember_llama m = {0};
    ember_ref *ref = NULL;
    ember_gpu_model *gm = NULL;
    ember_forward *f = NULL;
    ember_forward_opts o = {.max_tokens = CHUNK, .max_seqs = 1, .n_blocks = MAXB + 3, .block_size = BS,
                            .max_blocks_per_seq = MAXB};
    int ok = ember_gguf_open(path, &g, &err) == EMBER_OK && ember_llama_load(g, &m, &err) == EMBER_OK &&
             ember_ref_create(&m, &ref, &err) == EMBER_OK &&
             ember_gpu_model_create(vk, &m, 0, NULL, &gm, &err) == EMBER_OK &&
             ember_forward_create(gm, &o, &f, &err) == EMBER_OK;
    CHECKF(ok, "%s: %s", path, err.msg);
    uint32_t toks[N + DEC], bt[MAXB], pos[CHUNK], seq[CHUNK] = {0}, rows[CHUNK];
    tu_rng rng = {17};
    for (int i = 0; i < N + DEC; i++) toks[i] = 3 + (uint32_t)(tu_next(&rng) % (NV - 3));
    for (uint32_t i = 0; i < MAXB; i++) bt[i] = (5 * i + 3) % (MAXB + 3); /* scattered blocks */
    float *want = malloc(sizeof(float) * (N + DEC) * NV), *got = malloc(sizeof(float) * CHUNK * NV);
    ok = ok && ember_ref_forward(ref, toks, N + DEC, 0, want, 1, &err) == EMBER_OK;
    double worst = ok ? 0 : -1;
    for (uint32_t p = 0; ok && p < N + DEC;) {
        uint32_t n = p < N ? (N - p < CHUNK ? N - p : CHUNK) : 1;
        for (uint32_t i = 0; i < n; i++) pos[i] = p + i, rows[i] = i;
        ember_batch b = {n, toks + p, pos, seq, bt, n, rows};
        ok = ember_forward_run(f, &b, got, NULL, NULL, &err) == EMBER_OK;
        CHECKF(ok, "%s: %s", path, err.msg);
        for (uint32_t i = 0; ok && i < n; i++)
            worst = fmax(worst, tu_rel_err(got + (size_t)i * NV, want + (size_t)(p + i) * NV, NV));
        p += n;
    }
    free(want);
    free(got);
    ember_forward_free(f);
    ember_gpu_model_free(gm);
    ember_ref_free(ref);
    if (m.layers) ember_llama_free(&m);
    ember_gguf_close(g);
    return ok ? worst : -1;
}

static void test_models(ember_vk *vk)
{
    static const struct { const char *name, *args; double tol; } cases[] = {
        {"qwen2", "--arch qwen2 --type f32", 1e-4},
        {"freqs", "--rope-freqs --type f32", 1e-4},
        {"scale4", "--rope-scale 4 --type f32", 1e-4},
        {"qwen2_fs", "--arch qwen2 --rope-freqs --rope-scale 2.5 --type f32", 1e-4},
        {"qwen2_q8", "--arch qwen2 --type q8_0", 1e-3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        if (make_model(cases[i].name, cases[i].args, path, sizeof path) != 0) {
            CHECKF(0, "make-test-model %s failed", cases[i].args);
            continue;
        }
        double e = compare(vk, path);
        printf("%-9s (%s): GPU vs reference, 45-token prompt in chunks of 20 + 8 decode steps: max rel err %.2e\n",
               cases[i].name, cases[i].args, e);
        CHECKF(e >= 0 && e < cases[i].tol, "%s: rel err %.3e", cases[i].name, e);
        remove(path);
    }
}

static void test_generate_qwen2(void)
{
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/fwd_arch_gen_qwen2.gguf", tu_tmp_dir());
    snprintf(cmd, sizeof cmd,
             "%s make-test-model %s --arch qwen2 --dim 256 --layers 3 --heads 8 --kv-heads 2 --ffn 512 "
             "--vocab 1024 --ctx 512 --type q8_0 --seed 11",
             tu_ember_bin(), path);
    CHECK(tu_run(cmd, NULL, 0) == 0);
    static char out[2][65536];
    static const char *backends[2] = {"cpu", "vulkan"};
    uint32_t tok[2][40];
    size_t n[2];
    for (int b = 0; b < 2; b++) {
        snprintf(cmd, sizeof cmd,
                 "%s generate -m %s -p 'the quick brown fox jumps over the lazy dog and runs into the forest' "
                 "-n 32 --backend %s --ignore-eos --json",
                 tu_ember_bin(), path, backends[b]);
        CHECKF(tu_run(cmd, out[b], sizeof out[b]) == 0, "%s", cmd);
        n[b] = tu_json_tokens(out[b], tok[b], 40);
    }
    printf("qwen2 q8_0 generate: cpu %zu tokens, vulkan %zu tokens\n", n[0], n[1]);
    CHECKF(n[0] == 32 && n[1] == 32 && memcmp(tok[0], tok[1], sizeof tok[0][0] * 32) == 0,
           "greedy tokens differ\ncpu: %s\nvulkan: %s", out[0], out[1]);
    remove(path);
}

int main(void)
{
    ember_err err = {0};
    ember_vk_opts o = {.validation = tu_validation()};
    ember_vk *vk;
    if (ember_vk_create(&o, &vk, &err) != EMBER_OK) return tu_skip(err.msg);
    test_models(vk);
    char first[512];
    uint32_t nv = ember_vk_validation_count(vk, first, sizeof first);
    CHECKF(nv == 0, "%u validation messages; first: %s", nv, first);
    ember_vk_destroy(vk);
    test_generate_qwen2();
    return tu_finish("test_forward_arch");
}
