/* test_state.c — KV states through the public API (ember_request_desc.on_state and
 * .state, docs/state.md):
 *  - a prompt saved on one engine (prompt_only + on_state) and restored on a fresh one
 *    continues with exactly the greedy tokens of an engine that computed it, the state's
 *    tokens as the prompt or a longer prompt beginning with them, on F32 and Q8_0 caches,
 *    Q8_0 and F32 weights, and on the CPU backend; a restore writes all but the last prompt position
 *    (n_restored) and computes that one;
 *  - restored blocks join the prefix cache: the same prompt again takes them;
 *  - prefill on one engine and decode on another (each on its worker thread) gives the
 *    tokens of one engine;
 *  - a Q8_0 engine takes an F32 state (converted) and the CPU backend a GPU state;
 *  - a state with one byte changed, cut short, of another version or another model, or
 *    whose tokens the prompt does not begin with is refused at submit with a message,
 *    nothing held, and the engine serves the next request as before (a state of more
 *    tokens than the engine takes: test_kv_state, the same reader);
 *  - a saved chat (ember_chat_save / ember_chat_load): not saved between a prompt and its
 *    reply; every shorter length and changed byte, another template family and a state
 *    of other tokens refused. */
#include <stdlib.h>
#include <string.h>

#include "ember.h"
#include "engine_fixture.h"
#include "testutil.h"

#define PLEN 80
#define NGEN 24

static uint32_t prompt[PLEN + 20];

typedef struct saved {
    uint8_t *bytes;
    size_t len;
    int calls;
} saved;

static void on_state(void *user, ember_request_id id, const void *state, size_t len)
{
    saved *s = user;
    s->calls++;
    s->bytes = malloc(len);
    memcpy(s->bytes, state, len);
    s->len = len;
}

static void drain(ember_engine *e)
{
    ember_status s;
    while ((s = ember_engine_step(e)) == EMBER_OK) {}
    CHECKF(s == EMBER_IDLE, "step: %s", ember_engine_error(e));
}

/* Greedy NGEN tokens of ids[0..n) on a fresh engine, or from state when given. */
static void run_ids(ember_model *m, ember_kv_type kv, const uint32_t *ids, uint32_t n, const saved *state,
                    ef_result *out)
{
    ember_engine *e = ef_engine(m, (ember_engine_opts){.kv_type = kv});
    if (!e) return;
    ember_request_desc d = ef_desc(ids, n, NGEN, out);
    if (state) d.state = state->bytes, d.state_len = state->len;
    if (state && n == 0) d.tokens = NULL, d.n_tokens = 0;
    CHECKF(ember_submit(e, &d, NULL) == EMBER_OK, "%s", ember_engine_error(e));
    drain(e);
    ember_engine_destroy(e);
}

static void run(ember_model *m, ember_kv_type kv, uint32_t n, const saved *state, ef_result *out)
{
    run_ids(m, kv, prompt, n, state, out);
}

/* The state of prompt[0..PLEN) saved by an engine of m. */
static saved save(ember_model *m, ember_kv_type kv)
{
    saved s = {0};
    ef_result r;
    ember_engine *e = ef_engine(m, (ember_engine_opts){.kv_type = kv});
    if (!e) return s;
    ember_request_desc d = ef_desc(prompt, PLEN, 1, &r);
    d.prompt_only = 1;
    d.on_state = on_state;
    d.user = &s;
    d.on_token = NULL, d.on_done = NULL; /* r stays empty: the state is what counts */
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    drain(e);
    CHECKF(s.calls == 1 && s.len > 0, "%d states", s.calls);
    ember_engine_destroy(e);
    return s;
}

/* Saved on one engine, restored on another: the tokens an engine gives that computed it. */
static void check_round_trip(ember_model *m, ember_kv_type kv, const char *what)
{
    ef_result ref, ref_long, got, got_long;
    run(m, kv, PLEN, NULL, &ref);
    run(m, kv, PLEN + 20, NULL, &ref_long);
    saved s = save(m, kv);
    run(m, kv, 0, &s, &got);
    run(m, kv, PLEN + 20, &s, &got_long);
    printf("%s: state of %u tokens is %zu bytes; restored %u positions, then %u tokens\n", what, PLEN, s.len,
           got.m.n_restored, got.n);
    CHECKF(ef_same_tokens(&got, &ref, NGEN), "%s: restored tokens differ from computed", what);
    CHECKF(ef_same_tokens(&got_long, &ref_long, NGEN), "%s: a longer prompt after the state differs", what);
    CHECK(got.m.n_restored == PLEN - 1 && got.m.n_cached == 0 && got.m.n_prompt == PLEN);
    CHECK(got_long.m.n_restored == PLEN);
    free(s.bytes);
}

/* Restored blocks are published: the same prompt again comes from the prefix cache. */
static void check_shared(ember_model *m)
{
    saved s = save(m, EMBER_KV_F32);
    ember_engine *e = ef_engine(m, (ember_engine_opts){0});
    ef_result a, b;
    ember_request_desc d = ef_desc(prompt, PLEN, 4, &a);
    d.state = s.bytes, d.state_len = s.len;
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    drain(e);
    d = ef_desc(prompt, PLEN, 4, &b);
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    drain(e);
    CHECKF(a.m.n_restored == PLEN - 1 && b.m.n_cached == PLEN - 1 && b.m.n_restored == 0,
           "restored %u, then cached %u", a.m.n_restored, b.m.n_cached);
    CHECK(ef_same_tokens(&a, &b, 4));
    ember_engine_stats st;
    ember_engine_get_stats(e, &st);
    CHECKF(st.kv_states_restored == 1 && st.kv_state_bytes_restored == s.len && st.kv_states_saved == 0 &&
               st.kv_state_positions_restored == PLEN - 1 && st.kv_state_transfer_s > 0,
           "stats: %llu restored, %llu bytes", (unsigned long long)st.kv_states_restored,
           (unsigned long long)st.kv_state_bytes_restored);
    ember_engine_destroy(e);
    free(s.bytes);
}

/* Each bad state refused at submit with a message; the engine then serves as before. */
static void check_refusals(ember_model *m, ember_model *other)
{
    saved s = save(m, EMBER_KV_F32), o = save(other, EMBER_KV_F32);
    ember_engine *e = ef_engine(m, (ember_engine_opts){0});
    if (!e || !s.len || !o.len) return;
    struct { const char *what, *says; ember_status want; size_t cut; int flip; const saved *st; uint32_t first; } cases[] = {
        {"one byte changed", "checksum", EMBER_ERR_FORMAT, 0, 1000, &s, 0},
        {"cut short", "truncated", EMBER_ERR_FORMAT, 100, -1, &s, 0},
        {"another version", "version 5", EMBER_ERR_FORMAT, 0, 8, &s, 0}, /* the u32 after the magic */
        {"not a state", "not a KV state", EMBER_ERR_FORMAT, s.len - 40, -1, &s, 0},
        {"another model", "another model", EMBER_ERR_INVALID_ARG, 0, -1, &o, 0},
        {"another prompt", "part at position 3", EMBER_ERR_INVALID_ARG, 0, -1, &s, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint8_t *bytes = malloc(cases[i].st->len);
        memcpy(bytes, cases[i].st->bytes, cases[i].st->len);
        size_t len = cases[i].st->len - cases[i].cut;
        if (cases[i].cut == s.len - 40) memmove(bytes, bytes + 40, len); /* the header gone */
        if (cases[i].flip >= 0) bytes[cases[i].flip] ^= 0x04;
        uint32_t p[PLEN];
        memcpy(p, prompt, sizeof p);
        if (cases[i].first) p[cases[i].first] = p[cases[i].first] == 7 ? 8 : 7;
        ef_result r;
        ember_request_desc d = ef_desc(p, PLEN, 4, &r);
        d.state = bytes, d.state_len = len;
        ember_status st = ember_submit(e, &d, NULL);
        const char *msg = ember_engine_error(e);
        CHECKF(st == cases[i].want && strstr(msg, cases[i].says), "%s: status %d, '%s'", cases[i].what, (int)st, msg);
        free(bytes);
    }
    ember_engine_stats stats;
    ember_engine_get_stats(e, &stats);
    CHECK(stats.requests_waiting == 0 && stats.kv_blocks_used == 0);
    ef_result after, ref;
    ember_request_desc d = ef_desc(prompt, PLEN, NGEN, &after);
    CHECK(ember_submit(e, &d, NULL) == EMBER_OK);
    drain(e);
    run(m, EMBER_KV_F32, PLEN, NULL, &ref);
    CHECK(ef_same_tokens(&after, &ref, NGEN));
    ember_engine_destroy(e);
    free(s.bytes);
    free(o.bytes);
}

/* An F32 state in a Q8_0 engine, a GPU state on the CPU backend: converted, restored. */
static void check_crossing(ember_model *gpu, ember_model *cpu)
{
    saved s = save(gpu, EMBER_KV_F32);
    ef_result q8, on_cpu;
    run(gpu, EMBER_KV_Q8_0, 0, &s, &q8);
    run(cpu, EMBER_KV_F32, 0, &s, &on_cpu);
    CHECK(q8.n == NGEN && q8.m.n_restored == PLEN - 1);
    CHECK(on_cpu.n == NGEN && on_cpu.m.n_restored == PLEN - 1);
    ef_result q8_ref, cpu_ref;
    run(gpu, EMBER_KV_Q8_0, PLEN, NULL, &q8_ref);
    run(cpu, EMBER_KV_F32, PLEN, NULL, &cpu_ref);
    int q8_same = 0, cpu_same = 0;
    while (q8_same < NGEN && q8.tokens[q8_same] == q8_ref.tokens[q8_same]) q8_same++;
    while (cpu_same < NGEN && on_cpu.tokens[cpu_same] == cpu_ref.tokens[cpu_same]) cpu_same++;
    printf("crossing: an F32 state in a Q8_0 engine agrees with its own prefill for %d of %d tokens; a GPU state "
           "on the CPU backend for %d\n", q8_same, NGEN, cpu_same);
    free(s.bytes);
}

/* Prefill on one engine, decode on another, each on its worker thread (ember bench
 * --disaggregate's hand-over): the prefill engine's state callback submits the request
 * with the state to the decode engine. Four prompts at once give the greedy tokens of one
 * engine that computes them, with both engines on one model and on two loads of it (as on
 * two devices). */
typedef struct handed {
    ember_engine *decoder;
    const uint32_t *prompt;
    uint32_t n;
    ef_result *out;
    ember_status submitted;
} handed;

static void hand_over(void *user, ember_request_id id, const void *state, size_t len)
{
    handed *h = user;
    ember_request_desc d = ef_desc(h->prompt, h->n, NGEN, h->out);
    d.state = state, d.state_len = len;
    h->submitted = ember_submit(h->decoder, &d, NULL);
}

static void check_disaggregated(ember_model *m, ember_model *decode_model)
{
    ember_engine *p = ef_engine(m, (ember_engine_opts){0}), *d = ef_engine(decode_model, (ember_engine_opts){0});
    if (!p || !d) return;
    ef_result got[4], ref[4];
    handed h[4];
    CHECK(ember_engine_start(p) == EMBER_OK && ember_engine_start(d) == EMBER_OK);
    for (int i = 0; i < 4; i++) {
        h[i] = (handed){d, prompt + 5 * i, PLEN - 10 * i, &got[i], EMBER_NOT_READY};
        memset(&got[i], 0, sizeof got[i]);
        ember_request_desc pd = {.tokens = h[i].prompt, .n_tokens = h[i].n, .prompt_only = 1, .on_state = hand_over,
                                 .user = &h[i]};
        CHECK(ember_submit(p, &pd, NULL) == EMBER_OK);
    }
    ember_engine_wait_idle(p); /* every state handed over (submitted to d) */
    ember_engine_wait_idle(d);
    ember_engine_destroy(p);
    ember_engine_destroy(d);
    for (int i = 0; i < 4; i++) {
        run_ids(m, EMBER_KV_F32, h[i].prompt, h[i].n, NULL, &ref[i]);
        CHECKF(h[i].submitted == EMBER_OK && ef_same_tokens(&got[i], &ref[i], NGEN) &&
                   got[i].m.n_restored == h[i].n - 1,
               "disaggregated request %d: %s the tokens of one engine", i, h[i].submitted ? "not submitted," : "not");
    }
}

/* ember_chat_save / ember_chat_load beyond the CLI's round trip (test_chat_save.sh): not
 * between a prompt and its reply; a state of other tokens, another template family, a
 * changed byte and each shorter length refused; a chat loaded without a state has the
 * same ids and none to give. */
static void check_chat_file(ember_model *m)
{
    ember_chat *c = NULL;
    CHECK(ember_chat_create(m, NULL, &c) == EMBER_OK && ember_chat_add(c, "user", "hello there") == EMBER_OK);
    const uint32_t *ids;
    size_t n, len = 0;
    CHECK(ember_chat_prompt(c, &ids, &n) == EMBER_OK);
    CHECK(ember_chat_save(c, NULL, 0, NULL, 0, &len) == EMBER_ERR_INVALID_ARG && strstr(ember_chat_error(c), "between"));
    const uint32_t reply[3] = {40, 41, 2};
    CHECK(ember_chat_add_reply(c, reply, 3) == EMBER_OK && ember_chat_tokens(c, &ids, &n) == EMBER_OK && n > 3);
    uint32_t conv[256];
    memcpy(conv, ids, n * sizeof *ids);
    saved other = save(m, EMBER_KV_F32); /* a state of prompt[], not of the conversation */
    CHECK(ember_chat_save(c, other.bytes, other.len, NULL, 0, &len) == EMBER_OK && len > other.len);
    uint8_t *buf = malloc(len);
    CHECK(ember_chat_save(c, other.bytes, other.len, buf, len, &len) == EMBER_OK);
    ember_chat *d = NULL;
    CHECK(ember_chat_load(m, NULL, buf, len, &d) == EMBER_ERR_FORMAT && strstr(ember_chat_error(d), "other tokens"));
    ember_chat_free(d);
    CHECK(ember_chat_save(c, NULL, 0, buf, len, &len) == EMBER_OK);
    CHECK(ember_chat_load(m, "llama3", buf, len, &d) == EMBER_ERR_INVALID_ARG && strstr(ember_chat_error(d), "template"));
    ember_chat_free(d);
    int accepted = 0;
    for (size_t k = 0; k < len; k++) {
        ember_chat *e = NULL;
        accepted += ember_chat_load(m, NULL, buf, k, &e) == EMBER_OK;
        ember_chat_free(e);
        buf[k] ^= 0x08;
        accepted += ember_chat_load(m, NULL, buf, len, &e) == EMBER_OK;
        ember_chat_free(e);
        buf[k] ^= 0x08;
    }
    CHECKF(accepted == 0, "%d damaged chats loaded", accepted);
    CHECK(ember_chat_load(m, NULL, buf, len, &d) == EMBER_OK && ember_chat_tokens(d, &ids, &n) == EMBER_OK &&
          memcmp(ids, conv, n * sizeof *ids) == 0);
    const void *st;
    size_t st_len;
    ember_chat_kv_state(d, &st, &st_len);
    CHECK(st == NULL && st_len == 0);
    ember_chat_info ci; /* the loaded messages, to show: the user's and the reply's text */
    ember_chat_get_info(d, &ci);
    CHECK(ci.n_messages == 2 && ci.messages && strcmp(ci.messages[0].role, "user") == 0 &&
          strcmp(ci.messages[0].content, "hello there") == 0 && strcmp(ci.messages[1].role, "assistant") == 0);
    ember_chat_free(d);
    ember_chat_free(c);
    free(buf);
    free(other.bytes);
}

int main(void)
{
    char path[512], other[512], f32[512];
    snprintf(path, sizeof path, "%s/state_model.gguf", tu_tmp_dir());
    snprintf(f32, sizeof f32, "%s/state_f32.gguf", tu_tmp_dir());
    snprintf(other, sizeof other, "%s/state_other.gguf", tu_tmp_dir());
    const char *shape = "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 256 --type q8_0";
    char args[256];
    snprintf(args, sizeof args, "%s --seed 21", shape);
    CHECK(tu_make_model(path, args));
    snprintf(args, sizeof args, "%s --seed 22", shape);
    CHECK(tu_make_model(other, args));
    CHECK(tu_make_model(f32, "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 512 --ctx 256 --seed 23 "
                             "--type f32"));
    tu_rng rng = {3};
    for (int i = 0; i < PLEN + 20; i++) prompt[i] = 3 + (uint32_t)(tu_next(&rng) % 509);
    ember_model_opts mo = {.enable_validation = tu_validation(), .memory = tu_memory_mode()};
    ember_model *m = ef_load(path, &mo);
    if (!m) return tu_skip("cannot load the test model on a Vulkan device");
    ember_model *o = ef_load(other, &mo);
    ember_model_opts co = {.backend = EMBER_BACKEND_CPU};
    ember_model *cpu = NULL;
    CHECKF(ember_model_load(path, &co, &cpu) == EMBER_OK, "%s", ember_model_error(cpu));
    check_round_trip(m, EMBER_KV_F32, "F32 cache");
    check_round_trip(m, EMBER_KV_Q8_0, "Q8_0 cache");
    ember_model *mf = ef_load(f32, &mo);
    if (mf) check_round_trip(mf, EMBER_KV_F32, "F32 weights");
    ember_model_free(mf);
    if (cpu) check_round_trip(cpu, EMBER_KV_F32, "CPU backend");
    check_shared(m);
    check_disaggregated(m, m);
    ember_model *m2 = ef_load(path, &mo); /* the file again: another model's buffers */
    if (m2) check_disaggregated(m, m2);
    ember_model_free(m2);
    if (o) check_refusals(m, o);
    if (cpu) check_crossing(m, cpu);
    if (cpu) check_chat_file(cpu);
    ember_model_free(cpu);
    ember_model_free(o);
    ember_model_free(m);
    return tu_finish("test_state");
}
