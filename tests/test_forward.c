/* test_forward.c — the whole GPU forward pass against the CPU reference, on models made
 * by `ember make-test-model` (F32, F16 and Q8_0, grouped-query attention):
 *  - a 70-token prompt (5 KV blocks of 16) prefilled in chunks through a shuffled block
 *    table, logits of every row compared;
 *  - decoding token by token after it;
 *  - a ragged batch holding two sequences (one decoding, one prefilling) at once;
 *  - weights bound in many parts (a tiny per-binding limit) give the same logits. */
#include <stdlib.h>
#include <string.h>

#include "model_fixture.h"

#define NV 512
#define CTX 256
#define BS 16
#define MAXB (CTX / BS)

typedef struct fixture {
    mf_model mm;
    uint32_t bt[2 * MAXB]; /* block tables of slots 0 and 1 */
} fixture;

static double tol_for(const char *type) { return strcmp(type, "f32") == 0 ? 1e-4 : 1e-3; }

static void make_model(const char *type, char *path, size_t cap)
{
    char args[256];
    snprintf(path, cap, "%s/fwd_%s.gguf", tu_tmp_dir(), type);
    snprintf(args, sizeof args,
             "--dim 128 --layers 2 --heads 8 --kv-heads 2 --ffn 320 --vocab %d --ctx %d --type %s --seed 7", NV, CTX,
             type);
    tu_make_model(path, args);
}

static bool setup(fixture *fx, ember_vk *vk, const char *path, uint64_t max_part)
{
    ember_forward_opts o = {.max_tokens = 40, .max_seqs = 2, .n_blocks = 2 * MAXB, .block_size = BS,
                            .max_blocks_per_seq = MAXB};
    bool ok = mf_gpu_open(&fx->mm, vk, path, max_part, &o);
    /* Slot 0 gets the odd blocks in reverse, slot 1 the even ones: nothing contiguous. */
    for (uint32_t i = 0; i < MAXB; i++) {
        fx->bt[i] = 2 * (MAXB - 1 - i) + 1;
        fx->bt[MAXB + i] = 2 * i;
    }
    return ok;
}

static void test_prefill_decode(fixture *fx, const char *type)
{
    enum { N = 70, CHUNK = 32, DEC = 6 };
    mf_chunked c = {.seed = 42, .n_prompt = N, .chunk = CHUNK, .n_decode = DEC, .bt = fx->bt, .check_argmax = true};
    double worst = mf_chunked_err(&fx->mm, &c);
    printf("%s: prefill %d tokens in chunks of %d + %d decode steps: max rel err %.2e\n", type, N, CHUNK, DEC,
           worst);
    CHECKF(worst < tol_for(type), "%s: rel err %.3e", type, worst);
}

/* Slot 0 decodes one token at position N while slot 1 prefills 9 tokens, in one batch. */
static void test_ragged(fixture *fx, const char *type)
{
    enum { N = 20, M = 9 };
    tu_rng rng = {99};
    uint32_t a[N + 1], bt[M];
    for (int i = 0; i <= N; i++) a[i] = 3 + (uint32_t)(tu_next(&rng) % (NV - 3));
    for (int i = 0; i < M; i++) bt[i] = 3 + (uint32_t)(tu_next(&rng) % (NV - 3));
    float *want_a = malloc((size_t)(N + 1) * NV * sizeof(float)), *want_b = malloc((size_t)M * NV * sizeof(float));
    float *got = malloc((size_t)N * NV * sizeof(float)); /* N > M + 1 rows */
    ember_err err = {0};
    ember_ref *rb;
    CHECK(ember_ref_create(&fx->mm.m, &rb, &err) == EMBER_OK);
    CHECK(ember_ref_forward(fx->mm.ref, a, N + 1, 0, want_a, 1, &err) == EMBER_OK);
    CHECK(ember_ref_forward(rb, bt, M, 0, want_b, 1, &err) == EMBER_OK);
    ember_ref_free(rb);

    if (mf_gpu_run(&fx->mm, fx->bt, 0, a, N, 0, got, true)) {
        uint32_t toks[M + 1], pos[M + 1], seq[M + 1], rows[2] = {0, M};
        toks[0] = a[N], pos[0] = N, seq[0] = 0;
        for (uint32_t i = 0; i < M; i++) toks[i + 1] = bt[i], pos[i + 1] = i, seq[i + 1] = 1;
        ember_batch b = {M + 1, toks, pos, seq, fx->bt, 2, rows};
        CHECKF(ember_forward_run(fx->mm.f, &b, got, NULL, NULL, &err) == EMBER_OK, "%s", err.msg);
        double ea = tu_rel_err(got, want_a + (size_t)N * NV, NV);
        double eb = tu_rel_err(got + NV, want_b + (size_t)(M - 1) * NV, NV);
        printf("%s: ragged batch (decode + prefill of another sequence): rel err %.2e, %.2e\n", type, ea, eb);
        CHECK(ea < tol_for(type) && eb < tol_for(type));
    }
    free(want_a);
    free(want_b);
    free(got);
}

int main(void)
{
    ember_err err = {0};
    ember_vk *vk = mf_vk_open(&err);
    if (!vk) return tu_skip(err.msg);
    const char *types[] = {"f32", "f16", "q8_0"};
    for (int t = 0; t < 3; t++) {
        char path[512];
        make_model(types[t], path, sizeof path);
        /* Per-binding limits: the device's, then 16 KiB so every weight comes in parts. */
        uint64_t parts[2] = {0, 16384};
        for (int p = 0; p < 2; p++) {
            fixture fx;
            if (setup(&fx, vk, path, parts[p])) {
                printf("-- %s, %s\n", types[t], p ? "weights in 16 KiB parts" : "whole bindings");
                test_prefill_decode(&fx, types[t]);
                if (p == 0) test_ragged(&fx, types[t]);
            }
            mf_unload(&fx.mm);
        }
    }
    mf_vk_close(vk);
    return tu_finish("test_forward");
}
