/* test_forward_arch.c — the GPU forward pass on models beyond plain llama against the CPU
 * reference (docs/models.md), on models made by `ember make-test-model`:
 *  - qwen2 (Q/K/V biases, NeoX RoPE), Llama 3.1-style RoPE frequency factors, linear
 *    RoPE scaling by 4, and qwen2 with factors and scaling 2.5; grouped-query attention;
 *    a 45-token prompt prefilled in chunks of 20 through a shuffled block table (blocks
 *    of 16, so chunks and blocks straddle each other) and 8 decode steps after it, logits
 *    of every row compared (F32 to 1e-4, Q8_0 weights to 1e-3);
 *  - `ember generate --backend cpu` and `--backend vulkan` give the same 32 greedy tokens
 *    on a qwen2 Q8_0 model. */
#include <string.h>

#include "model_fixture.h"

#define NV 512
#define CTX 128
#define BS 16
#define MAXB (CTX / BS)

static bool make_model(const char *name, const char *args, char *path, size_t cap)
{
    char all[512];
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
        {"qwen2_fs", "--arch qwen2 --rope-freqs --rope-scale 2.5 --type f32", 1e-4},
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
    mf_vk_close(vk);
    test_generate_qwen2();
    return tu_finish("test_forward_arch");
}
