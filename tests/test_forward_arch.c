/* test_forward_arch.c — the GPU forward pass on models beyond plain llama against the CPU
 * reference (docs/models.md), on models made by `ember make-test-model`:
 *  - qwen2 (Q/K/V biases, NeoX RoPE), Llama 3.1-style RoPE frequency factors, linear
 *    RoPE scaling by 4 and qwen2 scaled by 2.5; grouped-query attention; a 45-token
 *    prompt prefilled in chunks of 20 through a shuffled block table (blocks of 16, so
 *    chunks and blocks straddle each other) and 8 decode steps after it, logits of every
 *    row compared (F32 to 1e-4, Q8_0 weights to 1e-3);
 *  - the same for one model of every family of tests/data/families.txt (F32, 1e-4: window
 *    8 against a 53-token sequence, soft-caps, QK-norm, post-norms, NoPE, YaRN, LongRoPE,
 *    scales, fused matrices), and 16 greedy tokens after a 24-token prompt identical on
 *    both backends for each;
 *  - `ember generate --backend cpu` and `--backend vulkan` give the same 32 greedy tokens
 *    on a qwen2 Q8_0 model. */
#include <stdlib.h>
#include <string.h>

#include "model_fixture.h"

#define NV 512
#define CTX 128
#define BS 16
#define MAXB (CTX / BS)

static bool make_model(const char *name, const char *args, char *path, size_t cap)
{
    char all[1024];
    snprintf(path, cap, "%s/fwd_arch_%s.gguf", tu_tmp_dir(), name);
    snprintf(all, sizeof all, "--dim 128 --layers 2 --heads 8 --kv-heads 2 --ffn 320 --vocab %d --ctx %d --seed 5 %s",
             NV, CTX, args);
    return tu_make_model(path, all);
}

/* Worst relative error of the GPU's logits against the reference over a chunked
 * prefill and decode steps; -1 on a failure. */
static double compare(ember_vk *vk, const char *path)
{
    enum { N = 45, CHUNK = 20, DEC = 8 };
    ember_forward_opts o = {.max_tokens = CHUNK, .max_seqs = 1, .n_blocks = MAXB + 3, .block_size = BS,
                            .max_blocks_per_seq = MAXB};
    uint32_t bt[MAXB];
    for (uint32_t i = 0; i < MAXB; i++) bt[i] = (5 * i + 3) % (MAXB + 3); /* scattered blocks */
    mf_chunked c = {.seed = 17, .n_prompt = N, .chunk = CHUNK, .n_decode = DEC, .bt = bt};
    mf_model mm;
    double worst = mf_gpu_open(&mm, vk, path, 0, &o) ? mf_chunked_err(&mm, &c) : -1;
    mf_unload(&mm);
    return worst;
}

static void test_models(ember_vk *vk)
{
    static const struct { const char *name, *args; double tol; } cases[] = {
        {"qwen2", "--arch qwen2 --type f32", 1e-4},
        {"freqs", "--rope-freqs --type f32", 1e-4},
        {"scale4", "--rope-scale 4 --type f32", 1e-4},
        {"qwen2_s", "--arch qwen2 --rope-scale 2.5 --type f32", 1e-4},
        {"qwen2_q8", "--arch qwen2 --type q8_0", 1e-3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        if (!make_model(cases[i].name, cases[i].args, path, sizeof path))
            continue;
        double e = compare(vk, path);
        printf("%-9s (%s): GPU vs reference, 45-token prompt in chunks of 20 + 8 decode steps: max rel err %.2e\n",
               cases[i].name, cases[i].args, e);
        CHECKF(e >= 0 && e < cases[i].tol, "%s: rel err %.3e", cases[i].name, e);
        remove(path);
    }
}

/* Greedy decoding of n tokens after a prompt on the reference (one token at a time). */
static void ref_greedy(ember_ref *r, uint32_t nv, const uint32_t *prompt, uint32_t np, uint32_t *ids, uint32_t n)
{
    float *logits = malloc(nv * sizeof *logits);
    ember_err err = {{0}};
    bool ok = ember_ref_forward(r, prompt, np, 0, logits, 0, &err) == EMBER_OK;
    for (uint32_t i = 0; ok && i < n; i++) {
        uint32_t best = 0;
        for (uint32_t j = 1; j < nv; j++)
            if (logits[j] > logits[best]) best = j;
        ids[i] = best;
        ok = i + 1 == n || ember_ref_forward(r, &ids[i], 1, np + i, logits, 0, &err) == EMBER_OK;
    }
    CHECKF(ok, "reference: %s", err.msg);
    free(logits);
}

/* The same on the GPU: the prompt in one step, then a step per token, the GPU's argmax. */
static void gpu_greedy(mf_model *M, const uint32_t *prompt, uint32_t np, uint32_t *ids, uint32_t n)
{
    uint32_t bt[MAXB], nv = M->m.hp.n_vocab;
    for (uint32_t i = 0; i < MAXB; i++) bt[i] = i;
    float *logits = malloc((size_t)np * nv * sizeof *logits);
    bool ok = mf_gpu_run(M, bt, 0, prompt, np, 0, logits, false);
    for (uint32_t i = 0; ok && i < n; i++) {
        const float *row = logits + (size_t)(i == 0 ? np - 1 : 0) * nv;
        uint32_t best = 0;
        for (uint32_t j = 1; j < nv; j++)
            if (row[j] > row[best]) best = j;
        ids[i] = best;
        ok = i + 1 == n || mf_gpu_run(M, bt, 0, &ids[i], 1, np + i, logits, true);
    }
    free(logits);
}

/* Every family: the GPU against the reference, and greedy tokens on both. */
static void test_families(ember_vk *vk)
{
    enum { NP = 24, NG = 16 };
    tu_family fam[16];
    int n = tu_families(fam, 16);
    CHECKF(n >= 11, "%d families", n);
    for (int i = 0; i < n; i++) {
        char path[512], args[600];
        snprintf(args, sizeof args, "%s --type f32", fam[i].args);
        if (!make_model(fam[i].name, args, path, sizeof path)) continue;
        double e = compare(vk, path);
        ember_forward_opts o = {.max_tokens = NP, .max_seqs = 1, .n_blocks = MAXB, .block_size = BS,
                                .max_blocks_per_seq = MAXB};
        mf_model M;
        uint32_t prompt[NP], cpu[NG] = {0}, gpu[NG] = {0};
        tu_rng rng = {(uint64_t)i + 3};
        for (uint32_t t = 0; t < NP; t++) prompt[t] = 3 + (uint32_t)(tu_next(&rng) % (NV - 3));
        if (mf_gpu_open(&M, vk, path, 0, &o)) {
            ref_greedy(M.ref, NV, prompt, NP, cpu, NG);
            gpu_greedy(&M, prompt, NP, gpu, NG);
        }
        mf_unload(&M);
        bool same = memcmp(cpu, gpu, sizeof cpu) == 0;
        printf("%-9s GPU vs reference: max rel err %.2e; %d greedy tokens %s\n", fam[i].name, e, NG,
               same ? "identical" : "DIFFER");
        CHECKF(e >= 0 && e < 1e-4, "%s: rel err %.3e", fam[i].name, e);
        CHECKF(same, "%s: greedy tokens differ between the backends", fam[i].name);
        remove(path);
    }
}

static void test_generate_qwen2(void)
{
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/fwd_arch_gen_qwen2.gguf", tu_tmp_dir());
    tu_make_model(path, "--arch qwen2 --dim 256 --layers 3 --heads 8 --kv-heads 2 --ffn 512 --vocab 1024 --ctx 512 "
                        "--type q8_0 --seed 11");
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
    ember_vk *vk = mf_vk_open(&err);
    if (!vk) return tu_skip(err.msg);
    test_models(vk);
    test_families(vk);
    mf_vk_close(vk);
    test_generate_qwen2();
    return tu_finish("test_forward_arch");
}
