/* test_kv_types.c — the KV caches smaller than F32: INT8 (EMBER_KV_Q8_0, `--kv-type q8_0`)
 * and half floats (EMBER_KV_F16, `--kv-type f16`), on a whole model made by `ember
 * make-test-model` (head_dim 64: two Q8_0 scale groups of 32 per row, as in most real
 * models):
 *  - accuracy: logits of a 130-token prompt (prefilled in chunks) and of 32 decode steps
 *    with each cache against the same steps with an F32 cache; the decode steps are
 *    teacher-forced with the F32 run's greedy tokens, so every step compares the same
 *    context and the count of equal argmaxes does not collapse after one difference;
 *  - batch invariance: greedy tokens of requests served together (chunked prefill, late
 *    joiners, preemption) equal those of each request alone, with each cache;
 *  - memory: bytes per token and the blocks a --kv-mem budget buys;
 *  - the command line: `--kv-type` in generate, batch and bench (bench JSON reports the
 *    type and bytes per token), and the CPU backend's refusal. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/gpu/forward.h"
#include "engine/cpu/reference.h"
#include "engine_fixture.h"
#include "testutil.h"

#define NV 512
#define CTX 512
#define BS 16
#define MAXB (CTX / BS)
#define ARGS "--dim 256 --layers 2 --heads 4 --kv-heads 2 --ffn 512 --vocab 512 --ctx 512 --type f32 --seed 3"

/* ---- accuracy: the forward pass with each cache type ---------------------------------- */

typedef struct fixture {
    ember_gguf *g;
    ember_llama m;
    ember_gpu_model *gm;
    ember_forward *f[3]; /* the caches of KV_TYPES */
} fixture;

/* The caches compared, F32 first (the yardstick). */
static const ember_kv_type KV_TYPES[3] = {EMBER_KV_F32, EMBER_KV_Q8_0, EMBER_KV_F16};
static const char *const KV_NAMES[3] = {"f32", "q8_0", "f16"};

static bool setup(fixture *fx, ember_vk *vk, const char *path)
{
    ember_err err = {0};
    memset(fx, 0, sizeof *fx);
    bool ok = ember_gguf_open(path, &fx->g, &err) == EMBER_OK && ember_llama_load(fx->g, &fx->m, &err) == EMBER_OK &&
              ember_gpu_model_create(vk, &fx->m, 0, NULL, &fx->gm, &err) == EMBER_OK;
    for (int q = 0; ok && q < 3; q++) {
        ember_forward_opts o = {.max_tokens = 32, .max_seqs = 1, .n_blocks = MAXB, .block_size = BS,
                                .max_blocks_per_seq = MAXB, .kv_type = KV_TYPES[q]};
        ok = ember_forward_create(fx->gm, &o, &fx->f[q], &err) == EMBER_OK;
    }
    CHECKF(ok, "%s", err.msg);
    return ok;
}

static void teardown(fixture *fx)
{
    for (int q = 0; q < 3; q++) ember_forward_free(fx->f[q]);
    ember_gpu_model_free(fx->gm);
    if (fx->m.layers) ember_llama_free(&fx->m);
    ember_gguf_close(fx->g);
}

/* n tokens at positions pos0.. in one step of forward f: all logits and argmaxes. */
static bool step(ember_forward *f, const uint32_t *toks, uint32_t n, uint32_t pos0, float *logits, uint32_t *am)
{
    static const uint32_t bt[MAXB] = {7, 3, 30, 12, 0, 21, 5, 9, 14, 1, 2, 4, 6, 8, 10, 11,
                                      13, 15, 16, 17, 18, 19, 20, 22, 23, 24, 25, 26, 27, 28, 29, 31};
    uint32_t pos[32], seq[32] = {0}, rows[32];
    for (uint32_t i = 0; i < n; i++) pos[i] = pos0 + i, rows[i] = i;
    ember_batch b = {n, toks, pos, seq, bt, n, rows};
    ember_err err = {0};
    ember_status s = ember_forward_run(f, &b, logits, am, NULL, &err);
    CHECKF(s == EMBER_OK, "%s", err.msg);
    return s == EMBER_OK;
}

/* Cache q (KV_TYPES) against the F32 cache on the same steps: the largest relative error
 * of the logits must stay under tol, the argmaxes of the decode steps and the prompt rows
 * differ at most max_diff times. */
static void compare_cache(fixture *fx, int q, double tol, int max_diff)
{
    enum { N = 130, CHUNK = 32, DEC = 32 };
    uint32_t toks[N + DEC], am[2][CHUNK];
    tu_rng rng = {8};
    for (int i = 0; i < N; i++) toks[i] = 3 + (uint32_t)(tu_next(&rng) % (NV - 3));
    float *lg[2] = {malloc(sizeof(float) * CHUNK * NV), malloc(sizeof(float) * CHUNK * NV)};
    double prompt_err = 0, prompt_err_sum = 0, dec_err = 0, dec_err_sum = 0;
    int agree = 0, prompt_agree = 0;
    bool ok = true;
    for (uint32_t p = 0; ok && p < N; p += CHUNK) {
        uint32_t n = N - p < CHUNK ? N - p : CHUNK;
        ok = step(fx->f[0], toks + p, n, p, lg[0], am[0]) && step(fx->f[q], toks + p, n, p, lg[1], am[1]);
        for (uint32_t i = 0; ok && i < n; i++) {
            double e = tu_rel_err(lg[1] + (size_t)i * NV, lg[0] + (size_t)i * NV, NV);
            prompt_err = fmax(prompt_err, e);
            prompt_err_sum += e;
            prompt_agree += am[0][i] == am[1][i];
        }
        if (ok && p + n == N) toks[N] = am[0][n - 1];
    }
    /* Decode, both caches fed the F32 run's greedy tokens. */
    for (uint32_t d = 0; ok && d < DEC; d++) {
        ok = step(fx->f[0], toks + N + d, 1, N + d, lg[0], am[0]) &&
             step(fx->f[q], toks + N + d, 1, N + d, lg[1], am[1]);
        double e = tu_rel_err(lg[1], lg[0], NV);
        dec_err = fmax(dec_err, e);
        dec_err_sum += e;
        agree += am[0][0] == am[1][0];
        if (d + 1 < DEC) toks[N + d + 1] = am[0][0];
    }
    const char *name = KV_NAMES[q];
    printf("%s vs f32 KV: prompt of %d tokens: max rel err %.2e (mean %.2e), argmax equal in %d of %d rows\n", name,
           N, prompt_err, prompt_err_sum / N, prompt_agree, N);
    printf("%s vs f32 KV: %d decode steps: max rel err %.2e (mean %.2e), greedy token equal in %d of %d\n", name, DEC,
           dec_err, dec_err_sum / DEC, agree, DEC);
    CHECK(ok);
    CHECKF(prompt_err < tol && dec_err < tol, "%s: rel err %.3e / %.3e", name, prompt_err, dec_err);
    CHECKF(prompt_err > 0, "a %s cache that changes nothing is not rounding", name);
    CHECKF(agree >= DEC - max_diff && prompt_agree >= N - 2 * max_diff, "%s: argmax agreement %d/%d, %d/%d", name,
           agree, DEC, prompt_agree, N);
    free(lg[0]);
    free(lg[1]);
}

static void test_accuracy(ember_vk *vk, const char *path)
{
    fixture fx;
    if (setup(&fx, vk, path)) {
        compare_cache(&fx, 1, 2e-2, 2); /* Q8_0: a step of max|x|/127 per group */
        compare_cache(&fx, 2, 2e-3, 1); /* F16: 11 bits of mantissa */
    }
    teardown(&fx);
}

/* ---- the engine through the public API ------------------------------------------------ */

#define NREQ 8
#define NGEN 20

typedef struct result {
    uint32_t tokens[NGEN];
    uint32_t n;
    int done;
} result;

static int on_token(void *user, ember_request_id id, uint32_t tok, const char *text, size_t len)
{
    result *r = user;
    (void)id, (void)text, (void)len;
    if (r->n < NGEN) r->tokens[r->n++] = tok;
    return 0;
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    (void)id, (void)why, (void)m;
    ((result *)user)->done++;
}

static uint32_t prompts[NREQ][160], plen[NREQ];

static bool submit(ember_engine *e, int i, result *r)
{
    memset(r, 0, sizeof *r);
    ember_request_desc d = {.tokens = prompts[i], .n_tokens = plen[i], .max_tokens = NGEN, .ignore_eos = 1,
                            .on_token = on_token, .on_done = on_done, .user = r};
    return ember_submit(e, &d, NULL) == EMBER_OK;
}

static int kv_q = 1; /* the cache of KV_TYPES the engine tests use */

static ember_engine *engine(ember_model *m, ember_engine_opts o)
{
    o.kv_type = KV_TYPES[kv_q];
    return ef_engine(m, o);
}

static void drain(ember_engine *e)
{
    ember_status s;
    while ((s = ember_engine_step(e)) == EMBER_OK) {}
    CHECKF(s == EMBER_IDLE, "step: %s", ember_engine_error(e));
}

/* Half the requests start together, the rest join while those run. */
static void together(ember_model *m, ember_engine_opts o, const result *alone, const char *what)
{
    static result res[NREQ];
    ember_engine *e = engine(m, o);
    if (!e) return;
    for (int i = 0; i < NREQ / 2; i++) CHECK(submit(e, i, &res[i]));
    for (int k = 0; k < 4; k++) ember_engine_step(e);
    for (int i = NREQ / 2; i < NREQ; i++) {
        CHECK(submit(e, i, &res[i]));
        ember_engine_step(e);
    }
    drain(e);
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    int same = 0;
    for (int i = 0; i < NREQ; i++)
        same += res[i].done == 1 && res[i].n == NGEN &&
                memcmp(res[i].tokens, alone[i].tokens, sizeof res[i].tokens) == 0;
    printf("%s KV, %s: %d/%d requests identical to running alone (%llu preemptions)\n", KV_NAMES[kv_q], what, same, NREQ,
           (unsigned long long)st.preemptions);
    CHECKF(same == NREQ, "%s KV, %s: the batch changed results", KV_NAMES[kv_q], what);
    ember_engine_destroy(e);
}

static void test_invariance(ember_model *m)
{
    static result alone[NREQ];
    tu_rng rng = {12};
    for (int i = 0; i < NREQ; i++) {
        plen[i] = 5 + (uint32_t)(tu_next(&rng) % 150);
        for (uint32_t j = 0; j < plen[i]; j++) prompts[i][j] = 3 + (uint32_t)(tu_next(&rng) % (NV - 3));
    }
    ember_engine *e = engine(m, (ember_engine_opts){.max_seqs = 1});
    for (int i = 0; e && i < NREQ; i++) {
        CHECK(submit(e, i, &alone[i]));
        drain(e);
        CHECK(alone[i].done == 1 && alone[i].n == NGEN);
    }
    ember_engine_destroy(e);
    together(m, (ember_engine_opts){.max_seqs = 8, .max_batch_tokens = 64}, alone, "8 together, chunked prefill");
    /* 24 blocks cannot hold 8 sequences of up to 174 tokens: preemption */
    together(m, (ember_engine_opts){.max_seqs = 8, .max_batch_tokens = 64, .kv_blocks = 24}, alone,
             "8 together, 24 KV blocks");
}

static void test_memory(ember_model *m)
{
    ember_engine_stats st[3];
    for (int q = 0; q < 3; q++) {
        ember_engine *e = NULL;
        ember_engine_opts o = {.kv_mem_mib = 4, .kv_type = KV_TYPES[q]};
        CHECKF(ember_engine_create(m, &o, &e) == EMBER_OK, "%s", ember_engine_error(e));
        ember_engine_get_stats(e, &st[q]);
        ember_engine_destroy(e);
    }
    /* 2 layers x (K + V) x 2 KV heads x 64 values: 4 bytes each, 64 int8 + 2 f16 scales,
     * or 2 bytes each */
    printf("KV bytes per token: f32 %llu, q8_0 %llu, f16 %llu; a 4 MiB budget holds %u / %u / %u blocks of %u "
           "tokens\n", (unsigned long long)st[0].kv_bytes_per_token, (unsigned long long)st[1].kv_bytes_per_token,
           (unsigned long long)st[2].kv_bytes_per_token, st[0].kv_blocks_total, st[1].kv_blocks_total,
           st[2].kv_blocks_total, st[0].kv_block_size);
    for (int q = 0; q < 3; q++) CHECK(st[q].kv_type == KV_TYPES[q]);
    CHECK(st[0].kv_bytes_per_token == 2 * 2 * 2 * 64 * 4 && st[1].kv_bytes_per_token == 2 * 2 * 2 * 68 &&
          st[2].kv_bytes_per_token == 2 * 2 * 2 * 64 * 2);
    /* 4 MiB / (16 x 2048, 544 or 1024) */
    CHECK(st[0].kv_blocks_total == 128 && st[1].kv_blocks_total == 481 && st[2].kv_blocks_total == 256);
}

/* ---- the command line ----------------------------------------------------------------- */

static void test_cli(const char *path)
{
    static char out[65536];
    char cmd[2048], prompts_path[512];
    snprintf(cmd, sizeof cmd,
             "%s bench -m %s --requests 4 --prompt-len 8:40 --gen-len 4:8 --kv-type q8_0 --kv-mem 4 --json",
             tu_ember_bin(), path);
    CHECKF(tu_run(cmd, out, sizeof out) == 0, "%s", cmd);
    CHECKF(strstr(out, "\"type\": \"q8_0\", \"bytes_per_token\": 544") && strstr(out, "\"blocks_total\": 481"),
           "bench JSON: %s", out);
    snprintf(prompts_path, sizeof prompts_path, "%s/kv_types_prompts.txt", tu_tmp_dir());
    FILE *f = fopen(prompts_path, "w");
    if (f) fputs("once upon a time\nthe cat sat on the mat\nhello\n", f), fclose(f);
    snprintf(cmd, sizeof cmd, "%s batch -m %s -f %s -n 6 --kv-type q8_0 --json", tu_ember_bin(), path,
             prompts_path);
    CHECKF(tu_run(cmd, out, sizeof out) == 0 && strstr(out, "\"results\""), "%s: %s", cmd, out);
    snprintf(cmd, sizeof cmd, "%s generate -m %s -p hello -n 4 --kv-type q8_0 --json", tu_ember_bin(), path);
    CHECKF(tu_run(cmd, out, sizeof out) == 0 && strstr(out, "\"n_gen\": 4"), "%s: %s", cmd, out);
    snprintf(cmd, sizeof cmd, "%s generate -m %s -p hello -n 4 --kv-type q8_0 --backend cpu 2>&1", tu_ember_bin(),
             path);
    CHECKF(tu_run(cmd, out, sizeof out) != 0 && strstr(out, "needs the Vulkan backend"), "%s: %s", cmd, out);
    snprintf(cmd, sizeof cmd, "%s generate -m %s -p hello --kv-type q4 2>&1", tu_ember_bin(), path);
    CHECKF(tu_run(cmd, out, sizeof out) == 2 && strstr(out, "f32, f16 or q8_0"), "%s: %s", cmd, out);
    /* F16: bench's JSON names it and its bytes; generate runs with it; the CPU refuses it */
    snprintf(cmd, sizeof cmd,
             "%s bench -m %s --requests 4 --prompt-len 8:40 --gen-len 4:8 --kv-type f16 --kv-mem 4 --json",
             tu_ember_bin(), path);
    CHECKF(tu_run(cmd, out, sizeof out) == 0 && strstr(out, "\"type\": \"f16\", \"bytes_per_token\": 1024") &&
               strstr(out, "\"blocks_total\": 256"),
           "%s: %s", cmd, out);
    snprintf(cmd, sizeof cmd, "%s generate -m %s -p hello -n 4 --kv-type f16 --json", tu_ember_bin(), path);
    CHECKF(tu_run(cmd, out, sizeof out) == 0 && strstr(out, "\"n_gen\": 4"), "%s: %s", cmd, out);
    snprintf(cmd, sizeof cmd, "%s generate -m %s -p hello -n 4 --kv-type f16 --backend cpu 2>&1", tu_ember_bin(),
             path);
    CHECKF(tu_run(cmd, out, sizeof out) != 0 && strstr(out, "F16 KV cache needs the Vulkan backend"), "%s: %s", cmd,
           out);
    remove(prompts_path);
}

int main(void)
{
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/kv_types.gguf", tu_tmp_dir());
    snprintf(cmd, sizeof cmd, "%s make-test-model %s " ARGS, tu_ember_bin(), path);
    if (tu_run(cmd, NULL, 0) != 0) {
        CHECKF(0, "%s failed", cmd);
        return tu_finish("test_kv_types");
    }
    ember_err err = {0};
    ember_vk_opts vo = {.validation = tu_validation()};
    ember_vk *vk;
    if (ember_vk_create(&vo, &vk, &err) != EMBER_OK) return tu_skip(err.msg);
    test_accuracy(vk, path);
    char first[512] = "";
    uint32_t nv = ember_vk_validation_count(vk, first, sizeof first);
    CHECKF(nv == 0, "%u validation messages; first: %s", nv, first);
    ember_vk_destroy(vk);

    ember_model *m = NULL;
    ember_model_opts mo = {.enable_validation = tu_validation()};
    ember_status s = ember_model_load(path, &mo, &m);
    CHECKF(s == EMBER_OK, "%s", m ? ember_model_error(m) : "out of memory");
    if (s == EMBER_OK) {
        for (kv_q = 1; kv_q < 3; kv_q++) test_invariance(m);
        test_memory(m);
        nv = ember_model_validation_messages(m, first, sizeof first);
        CHECKF(nv == 0, "%u validation messages; first: %s", nv, first);
    }
    ember_model_free(m);
    test_cli(path);
    remove(path);
    return tu_finish("test_kv_types");
}
