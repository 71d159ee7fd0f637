/* test_swa.c — sliding-window layers over the paged KV cache (docs/serving.md), through
 * the public API, on a Gemma-3-shaped random model (window 16, two local layers and a
 * global one, blocks of 16):
 *  - a 300-token generation keeps at most a window's slots in the local layers' pool
 *    (kv_local_peak_used 4, where the global layers hold 20 blocks), and its greedy tokens
 *    are those of the CPU backend (which keeps every position) and of an engine without
 *    local slots (a contiguous layout);
 *  - eight sequences at once: the same tokens as each alone, the local pool bounded;
 *  - the prefix cache: a request continuing a finished one's tokens (the next turn of a
 *    chat) takes its cached blocks, the window's local slots with them, and gives the
 *    tokens of an engine that computes everything;
 *  - a KV state saved after a prompt longer than the window and restored on a fresh
 *    engine continues with the tokens of one that computed it. */
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "engine_fixture.h"
#include "testutil.h"

#define PLEN 100
#define NGEN 48

static uint32_t prompt[PLEN];

static void drain(ember_engine *e)
{
    ember_status s;
    while ((s = ember_engine_step(e)) == EMBER_OK) {}
    CHECKF(s == EMBER_IDLE, "step: %s", ember_engine_error(e));
}

/* Greedy n_gen tokens of ids[0..n) on engine e, into out. */
static void generate(ember_engine *e, const uint32_t *ids, uint32_t n, uint32_t n_gen, ef_result *out)
{
    ember_request_desc d = ef_desc(ids, n, n_gen, out);
    CHECKF(ember_submit(e, &d, NULL) == EMBER_OK, "%s", ember_engine_error(e));
    drain(e);
}

/* One long generation: the local pool stays a window, the tokens are the CPU's and those
 * of an engine without local slots. */
static void test_long(ember_model *gpu, ember_model *cpu)
{
    static ef_result a, b, c;
    ember_engine *e = ef_engine(gpu, (ember_engine_opts){0});
    if (!e) return;
    generate(e, prompt, 8, 292, &a);
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    printf("300 positions, window %u: local slots %u of a pool of %u at most; %u blocks for the global layers\n",
           st.kv_window, st.kv_local_peak_used, st.kv_local_slots, st.kv_peak_blocks_used);
    CHECKF(st.kv_window == 16 && st.kv_local_slots > 0 && st.kv_local_slots < st.kv_blocks_total,
           "window %u, %u local slots of %u blocks", st.kv_window, st.kv_local_slots, st.kv_blocks_total);
    CHECKF(st.kv_local_peak_used <= 4 && st.kv_peak_blocks_used >= 19, "local peak %u, block peak %u",
           st.kv_local_peak_used, st.kv_peak_blocks_used);
    /* finished: no block in use, the cache keeping the last window's slots for a request
     * that would continue it */
    CHECKF(st.kv_blocks_used == 0 && st.kv_local_slots_used <= 2, "%u blocks, %u local slots in use",
           st.kv_blocks_used, st.kv_local_slots_used);
    ember_engine_destroy(e);
    e = ef_engine(cpu, (ember_engine_opts){0});
    if (e) generate(e, prompt, 8, 292, &b), ember_engine_destroy(e);
    e = ef_engine(gpu, (ember_engine_opts){.kv_layout = EMBER_KV_CONTIGUOUS});
    if (e) {
        generate(e, prompt, 8, 292, &c);
        ember_engine_get_stats(e, &st);
        CHECK(st.kv_local_slots == 0); /* a contiguous layout keeps whole sequences */
        ember_engine_destroy(e);
    }
    /* the first tokens, then all 292 through their text */
    CHECKF(ef_same_tokens(&a, &b, EF_MAX_TOKENS) && strcmp(a.text, b.text) == 0, "the Vulkan and the CPU backend differ");
    CHECKF(ef_same_tokens(&a, &c, EF_MAX_TOKENS) && strcmp(a.text, c.text) == 0, "local slots change the tokens");
    CHECK(a.m.n_gen == 292 && b.m.n_gen == 292);
}

/* Eight sequences of different prompts at once, each as alone. */
static void test_batch(ember_model *gpu)
{
    enum { N = 8 };
    static ef_result together[N], alone[N];
    ember_engine *e = ef_engine(gpu, (ember_engine_opts){0});
    if (!e) return;
    for (int i = 0; i < N; i++) {
        ember_request_desc d = ef_desc(prompt + 4 * i, 20 + 7 * i, 80, &together[i]);
        CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    }
    drain(e);
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    printf("%d sequences of about 100 positions: local slots %u at most, blocks %u\n", N, st.kv_local_peak_used,
           st.kv_peak_blocks_used);
    CHECKF(st.kv_local_peak_used <= N * 4 + 2, "local peak %u", st.kv_local_peak_used);
    ember_engine_destroy(e);
    for (int i = 0; i < N; i++) {
        e = ef_engine(gpu, (ember_engine_opts){.no_prefix_cache = 1});
        if (e) generate(e, prompt + 4 * i, 20 + 7 * i, 80, &alone[i]), ember_engine_destroy(e);
    }
    CHECKF(ef_count_same(together, alone, N, EF_MAX_TOKENS) == N, "a batched sequence differs from itself alone");
}

/* A finished request's tokens and more: its blocks come from the cache, the last
 * window's local slots with them. */
static void test_prefix(ember_model *gpu)
{
    static ef_result first, next, fresh;
    uint32_t ids[PLEN + 64];
    ember_engine *e = ef_engine(gpu, (ember_engine_opts){0});
    if (!e) return;
    generate(e, prompt, PLEN, 40, &first);
    memcpy(ids, prompt, PLEN * sizeof *ids);
    memcpy(ids + PLEN, first.tokens, 40 * sizeof *ids);
    for (int i = 0; i < 10; i++) ids[PLEN + 40 + i] = 5 + i;
    generate(e, ids, PLEN + 50, 30, &next);
    printf("a continuation of %u tokens: %u from the cache\n", PLEN + 50, next.m.n_cached);
    CHECKF(next.m.n_cached >= 128, "only %u tokens from the cache", next.m.n_cached);
    ember_engine_destroy(e);
    e = ef_engine(gpu, (ember_engine_opts){.no_prefix_cache = 1});
    if (e) generate(e, ids, PLEN + 50, 30, &fresh), ember_engine_destroy(e);
    CHECKF(ef_same_tokens(&next, &fresh, 30), "the cached continuation differs from one computed");
}

typedef struct saved {
    uint8_t *bytes;
    size_t len;
} saved;

static void on_state(void *user, ember_request_id id, const void *state, size_t len)
{
    saved *s = user;
    (void)id;
    s->bytes = malloc(len);
    memcpy(s->bytes, state, len);
    s->len = len;
}

/* A state of a 100-token prompt (its first 84 positions behind the window: saved as
 * zeros) restored on another engine. */
static void test_state(ember_model *gpu)
{
    static ef_result r, restored, computed;
    saved s = {0};
    ember_engine *e = ef_engine(gpu, (ember_engine_opts){0});
    if (!e) return;
    ember_request_desc d = ef_desc(prompt, PLEN, 1, &r);
    d.prompt_only = 1, d.on_state = on_state, d.user = &s;
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    drain(e);
    ember_engine_destroy(e);
    CHECK(s.len > 0);
    e = ef_engine(gpu, (ember_engine_opts){0});
    if (e && s.len) {
        d = ef_desc(prompt, PLEN, NGEN, &restored);
        d.state = s.bytes, d.state_len = s.len;
        CHECKF(ember_submit(e, &d, NULL) == EMBER_OK, "%s", ember_engine_error(e));
        drain(e);
        ember_engine_destroy(e);
    }
    e = ef_engine(gpu, (ember_engine_opts){.no_prefix_cache = 1});
    if (e) generate(e, prompt, PLEN, NGEN, &computed), ember_engine_destroy(e);
    printf("a restored state of %u positions: %u restored\n", PLEN, restored.m.n_restored);
    CHECK(restored.m.n_restored == PLEN - 1);
    CHECKF(ef_same_tokens(&restored, &computed, NGEN), "the restored state continues differently");
    free(s.bytes);
}

int main(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/swa.gguf", tu_tmp_dir());
    if (!tu_make_model(path, "--arch gemma3 --dim 64 --heads 4 --kv-heads 2 --head-dim 32 --layers 3 --ffn 128 "
                             "--ctx 512 --seed 3 --key attention.sliding_window=16 "
                             "--key attention.sliding_window_pattern=3"))
        return tu_finish("test_swa");
    tu_rng rng = {7};
    for (int i = 0; i < PLEN; i++) prompt[i] = 3 + (uint32_t)(tu_next(&rng) % 500);
    ember_model *gpu = ef_load(path, &(ember_model_opts){0});
    if (!gpu) return tu_skip("no Vulkan device");
    ember_model *cpu = ef_load(path, &(ember_model_opts){.backend = EMBER_BACKEND_CPU});
    test_long(gpu, cpu);
    test_batch(gpu);
    test_prefix(gpu);
    test_state(gpu);
    ember_model_free(cpu);
    ember_model_free(gpu);
    remove(path);
    return tu_finish("test_swa");
}
