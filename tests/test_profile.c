/* test_profile.c — an engine's profile (ember_engine_opts.profile, docs/profiling.md)
 * through the public API, on a made F32 model (2 layers, dim 128, 8/2 heads, FFN 320,
 * vocab 512) whose step is known dispatch by dispatch:
 *  - one prefill step and 7 decode steps, each phase's steps and rows;
 *  - per step: 1 embed + 8 a layer (6 where the device fuses each RMSNorm into the next
 *    product) + norm, LM head, argmax dispatches; a barrier after each dependent one;
 *    one submission;
 *  - the kernels: each one's count per step, their GPU times adding up to the steps';
 *  - the weights read by a decode step, to the byte (every matrix, the norms, one
 *    embedding row), and the bandwidth being that over the GPU time;
 *  - the bytes read back a step: the argmax alone (greedy), a sampled row's candidates or
 *    its whole row;
 *  - reset; an engine without the option refuses with a message; the CPU backend gives
 *    counts and host time without GPU times. */
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "engine_fixture.h"
#include "testutil.h"

enum { DIM = 128, LAYERS = 2, HEADS = 8, KV_HEADS = 2, FFN = 320, VOCAB = 512, PROMPT = 24, GEN = 8 };

static void generate_with(ember_engine *e, ember_sampling sampling)
{
    uint32_t prompt[PROMPT];
    for (int i = 0; i < PROMPT; i++) prompt[i] = 3 + (uint32_t)(i * 37 % (VOCAB - 3));
    static ef_result r;
    ember_request_desc d = ef_desc(prompt, PROMPT, GEN, &r);
    d.sampling = sampling;
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    ember_status s;
    while ((s = ember_engine_step(e)) == EMBER_OK) {}
    CHECKF(s == EMBER_IDLE && r.done == 1 && r.n == GEN, "step: %s", ember_engine_error(e));
}

static void generate(ember_engine *e) { generate_with(e, (ember_sampling){0}); }

/* Bytes read back a step: the argmax (4 a row), then a sampled row's 256 candidates and
 * its two normalisers (2,064), or its whole row of logits. */
static void test_readback(ember_model *m)
{
    static const struct {
        ember_sample_from from;
        ember_sampling sampling;
        uint64_t want;
    } cases[] = {
        {EMBER_SAMPLE_CANDIDATES, {0}, 4},
        {EMBER_SAMPLE_CANDIDATES, {.temperature = 1, .top_k = 40, .seed = 1}, 4 + 8 * 258},
        {EMBER_SAMPLE_ROWS, {.temperature = 1, .top_k = 40, .seed = 1}, 4 + 4 * VOCAB},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ember_engine *e = ef_engine(m, (ember_engine_opts){.max_seqs = 1, .profile = 1, .sample_from = cases[i].from});
        if (!e) return;
        generate_with(e, cases[i].sampling);
        ember_profile p;
        CHECK(ember_engine_get_profile(e, &p) == EMBER_OK);
        uint64_t got = p.decode.steps ? p.decode.readback_bytes / p.decode.steps : 0;
        CHECKF(p.decode.readback_bytes == p.decode.steps * cases[i].want && p.prefill.readback_bytes == cases[i].want,
               "case %zu: %llu bytes read back a decode step, want %llu", i, (unsigned long long)got,
               (unsigned long long)cases[i].want);
        ember_engine_destroy(e);
    }
}

static const ember_profile_kernel *find(const ember_profile_phase *ph, const char *prefix, uint64_t *count)
{
    const ember_profile_kernel *k = NULL;
    *count = 0;
    for (uint32_t i = 0; i < ph->n_kernels; i++)
        if (strncmp(ph->kernels[i].name, prefix, strlen(prefix)) == 0)
            *count += ph->kernels[i].dispatches, k = &ph->kernels[i];
    return k;
}

/* Bytes of weights a decode step reads (F32): every matrix, the 2L+1 norms, one embedding row. */
static uint64_t decode_weight_bytes(void)
{
    uint64_t hd = DIM / HEADS, qkv = (uint64_t)DIM * (HEADS + 2 * KV_HEADS) * hd, wo = (uint64_t)HEADS * hd * DIM;
    uint64_t ffn = 3ull * FFN * DIM, head = (uint64_t)VOCAB * DIM;
    return 4 * (LAYERS * (qkv + wo + ffn) + head + (2 * LAYERS + 1) * DIM + DIM);
}

/* The dispatches of a layer: 8, or 6 where the device fuses each RMSNorm into the product
 * after it (GPUs; lavapipe does not): told by the rmsnorm dispatches a step. */
static uint64_t per_layer(const ember_profile_phase *ph)
{
    uint64_t c;
    find(ph, "rmsnorm", &c);
    return ph->steps && c == ph->steps ? 6 : 8;
}

static void check_counts(const ember_profile_phase *ph, const char *phase)
{
    uint64_t n = ph->steps, pl = per_layer(ph), per_step = 1 + pl * LAYERS + 3;
    CHECKF(ph->dispatches == n * per_step, "%s: %llu dispatches in %llu steps", phase,
           (unsigned long long)ph->dispatches, (unsigned long long)n);
    CHECKF(ph->barriers == n * (per_step - 1), "%s: %llu barriers", phase, (unsigned long long)ph->barriers);
    CHECKF(ph->submissions == n, "%s: %llu submissions", phase, (unsigned long long)ph->submissions);
    /* what each kernel is called per step: prefixes of the pipeline names */
    struct { const char *prefix; uint64_t per_step; } want[] = {
        {"embed", 1}, {"rmsnorm", pl == 6 ? 1 : 2 * LAYERS + 1}, {"linear_", 4 * LAYERS + 1}, {"rope_store", LAYERS},
        {"attention", LAYERS}, {"argmax", 1}};
    uint64_t total = 0;
    double ms = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint64_t c;
        CHECKF(find(ph, want[i].prefix, &c) && c == n * want[i].per_step, "%s: %s called %llu times", phase,
               want[i].prefix, (unsigned long long)c);
    }
    for (uint32_t i = 0; i < ph->n_kernels; i++) {
        total += ph->kernels[i].dispatches, ms += ph->kernels[i].gpu_ms;
        CHECKF(ph->kernels[i].gpu_ms >= 0, "%s: %s", phase, ph->kernels[i].name);
        CHECK(i == 0 || ph->kernels[i].gpu_ms <= ph->kernels[i - 1].gpu_ms); /* most time first */
    }
    CHECKF(total == ph->dispatches, "%s: kernels add up to %llu dispatches", phase, (unsigned long long)total);
    CHECKF(ph->gpu_ms > 0 && ms > 0.999 * ph->gpu_ms && ms < 1.001 * ph->gpu_ms, "%s: kernels %.4f ms, steps %.4f ms",
           phase, ms, ph->gpu_ms);
    CHECKF(ph->host_ms > 0, "%s: host %.4f ms", phase, ph->host_ms);
}

static void test_gpu(ember_model *m)
{
    ember_engine *e = ef_engine(m, (ember_engine_opts){.max_seqs = 1, .profile = 1});
    if (!e) return;
    generate(e);
    ember_profile p;
    CHECK(ember_engine_get_profile(e, &p) == EMBER_OK);
    CHECK(p.gpu_timed == 1);
    CHECKF(p.prefill.steps == 1 && p.prefill.tokens == PROMPT, "prefill: %llu steps, %llu tokens",
           (unsigned long long)p.prefill.steps, (unsigned long long)p.prefill.tokens);
    CHECKF(p.decode.steps == GEN - 1 && p.decode.tokens == GEN - 1, "decode: %llu steps, %llu tokens",
           (unsigned long long)p.decode.steps, (unsigned long long)p.decode.tokens);
    check_counts(&p.prefill, "prefill");
    check_counts(&p.decode, "decode");
    uint64_t want = decode_weight_bytes(), sum = 0;
    CHECKF(p.decode.weight_bytes == p.decode.steps * want, "decode reads %llu bytes a step, want %llu",
           (unsigned long long)(p.decode.weight_bytes / (p.decode.steps ? p.decode.steps : 1)),
           (unsigned long long)want);
    for (uint32_t i = 0; i < p.decode.n_kernels; i++) sum += p.decode.kernels[i].weight_bytes;
    CHECK(sum == p.decode.weight_bytes);
    uint64_t c;
    const ember_profile_kernel *att = find(&p.decode, "attention", &c);
    CHECK(att && att->weight_bytes == 0);
    printf("decode: %.1f dispatches, %.3f ms GPU, %.3f ms host a step; %llu weight bytes a token\n",
           (double)p.decode.dispatches / p.decode.steps, p.decode.gpu_ms / p.decode.steps,
           p.decode.host_ms / p.decode.steps, (unsigned long long)(p.decode.weight_bytes / p.decode.tokens));

    ember_engine_reset_profile(e);
    CHECK(ember_engine_get_profile(e, &p) == EMBER_OK && p.gpu_timed == 1);
    CHECK(p.decode.steps == 0 && p.prefill.steps == 0 && p.decode.n_kernels == 0 && p.decode.weight_bytes == 0);
    generate(e); /* the same prompt again: the prefix cache serves all but its last row */
    CHECK(ember_engine_get_profile(e, &p) == EMBER_OK && p.decode.steps >= GEN - 1);
    check_counts(&p.decode, "decode after reset");
    ember_engine_destroy(e);

    e = ef_engine(m, (ember_engine_opts){.max_seqs = 1});
    if (!e) return;
    CHECK(ember_engine_get_profile(e, &p) == EMBER_ERR_INVALID_ARG);
    CHECKF(strstr(ember_engine_error(e), "profile") != NULL, "message: %s", ember_engine_error(e));
    ember_engine_destroy(e);
}

static void test_cpu(const char *path)
{
    ember_model_opts o = {.backend = EMBER_BACKEND_CPU};
    ember_model *m = ef_load(path, &o);
    CHECK(m != NULL);
    ember_engine *e = m ? ef_engine(m, (ember_engine_opts){.max_seqs = 1, .profile = 1}) : NULL;
    if (e) {
        generate(e);
        ember_profile p;
        CHECK(ember_engine_get_profile(e, &p) == EMBER_OK);
        CHECK(p.gpu_timed == 0 && p.prefill.steps == 1 && p.decode.steps == GEN - 1);
        CHECK(p.decode.dispatches == 0 && p.decode.n_kernels == 0 && p.decode.gpu_ms == 0);
        CHECK(p.decode.submissions == GEN - 1 && p.decode.host_ms > 0);
    }
    ember_engine_destroy(e);
    ember_model_free(m);
}

int main(void)
{
    char path[512], args[256];
    snprintf(path, sizeof path, "%s/profile_f32.gguf", tu_tmp_dir());
    snprintf(args, sizeof args, "--dim %d --layers %d --heads %d --kv-heads %d --ffn %d --vocab %d --ctx 256 "
                                "--type f32 --seed 5", DIM, LAYERS, HEADS, KV_HEADS, FFN, VOCAB);
    if (!tu_make_model(path, args)) return tu_finish("test_profile");
    ember_model_opts o = {.memory = tu_memory_mode()};
    ember_model *m = ef_load(path, &o);
    if (!m) return tu_skip("no Vulkan device");
    test_gpu(m);
    test_readback(m);
    ember_model_free(m);
    test_cpu(path);
    return tu_finish("test_profile");
}
