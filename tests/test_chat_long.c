/* test_chat_long.c — conversations longer than the context (engine/chat/chat_fit.c,
 * ember_chat_set_fit, docs/chat.md "Long conversations"):
 *  - the turns of a message list and the fewest drops, against a measure of the test's
 *    own (no model);
 *  - with stories260K (context 512; skipped without ../shared): a 30-turn conversation
 *    through the ember_chat API and an engine, ten times longer than the context: every
 *    turn answered, each prompt leaves the reply's room, the system prompt still opens
 *    every prompt, the dropped turns add up (per prompt, in total, and with the messages
 *    left), and after each drop the prefix cache serves the system prompt;
 *  - a reply cut by the context's end (EMBER_FINISH_CONTEXT), then the next turn;
 *  - the refuse policy, a last turn too long for any drop, bad fits;
 *  - ember_chat_take_back: a message taken back (after a prompt, or a refused one) leaves
 *    the conversation as if never added;
 *  - `ember chat` on stdin through the same 30 turns: every turn answered, the drop lines
 *    and the cache hits after them. */
#include <stdlib.h>
#include <string.h>

#include "engine/chat/chat_fit.h"
#include "testutil.h"

#define TURNS 30
#define REPLY 150  /* max_tokens of the longest replies (the room each prompt keeps) */
#define BLOCK 16   /* the engine's KV block size */

static const char SYSTEM[] = "You are a kind storyteller. You tell short happy stories about a little dog named Ben "
                             "and his friend the cat, who play in the park with a big red ball every day.";

/* ---- turns and drops, without a model ------------------------------------------------------ */

/* Prompt lengths by turns dropped, as a template would give them. */
static ember_status fake_measure(void *user, size_t d, size_t *n)
{
    const size_t *len = user;
    *n = len[d];
    return EMBER_OK;
}

static void test_fit_logic(void)
{
    const ember_chat_message msgs[] = {{"system", "s"}, {"system", "s2"}, {"assistant", "hello"}, {"user", "u1"},
                                       {"assistant", "a1"}, {"user", "u2"}, {"assistant", "a2"}, {"assistant", "a2b"},
                                       {"user", "u3"}};
    size_t starts[8];
    CHECK(ember_chat_n_system(msgs, 9) == 2);
    size_t n = ember_chat_turns(msgs, 9, starts, 8);
    /* A greeting before the first user message is a turn of its own. */
    CHECKF(n == 4 && starts[0] == 2 && starts[1] == 3 && starts[2] == 5 && starts[3] == 8, "%zu turns", n);
    CHECK(ember_chat_turns(msgs, 2, starts, 8) == 0);
    const size_t len[] = {900, 700, 450, 300, 120};
    size_t d = 0, got = 0;
    CHECK(ember_chat_fewest_drops(5, 500, fake_measure, (void *)len, &d, &got) == EMBER_OK && d == 2 && got == 450);
    CHECK(ember_chat_fewest_drops(5, 700, fake_measure, (void *)len, &d, &got) == EMBER_OK && d == 1 && got == 700);
    CHECK(ember_chat_fewest_drops(5, 100, fake_measure, (void *)len, &d, &got) == EMBER_OK && d == 0 && got == 120);
    CHECK(ember_chat_fewest_drops(1, 100, fake_measure, (void *)len, &d, &got) == EMBER_OK && d == 0);
}

/* ---- with stories260K ------------------------------------------------------------------------ */

typedef struct reply {
    uint32_t ids[600];
    size_t n;
    bool done;
    ember_finish why;
    ember_request_metrics m;
} reply;

static int on_token(void *user, ember_request_id id, uint32_t tok, const char *text, size_t len)
{
    reply *r = user;
    if (r->n < sizeof r->ids / sizeof r->ids[0]) r->ids[r->n++] = tok;
    return 0;
}

static void on_done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    reply *r = user;
    r->why = why;
    r->m = *m;
    r->done = true;
}

/* Submits the chat's prompt and steps until the reply ends; adds the reply to the chat. */
static bool ask(ember_engine *e, ember_chat *c, const uint32_t *ids, size_t n, uint32_t max_tokens, reply *r)
{
    *r = (reply){0};
    ember_request_desc d = {.tokens = ids, .n_tokens = n, .max_tokens = max_tokens, .ignore_eos = 1,
                            .on_token = on_token, .on_done = on_done, .user = r};
    ember_status s = ember_submit(e, &d, NULL);
    CHECKF(s == EMBER_OK, "submit: %s", ember_engine_error(e));
    while (s == EMBER_OK && !r->done) s = ember_engine_step(e);
    CHECKF(r->done, "step: %s", ember_engine_error(e));
    if (!r->done) return false;
    CHECKF(ember_chat_add_reply(c, r->ids, r->n) == EMBER_OK, "%s", ember_chat_error(c));
    return true;
}

static ember_chat *new_chat(ember_model *m, ember_chat_fit fit)
{
    ember_chat *c = NULL;
    CHECKF(ember_chat_create(m, NULL, &c) == EMBER_OK, "%s", ember_chat_error(c));
    CHECK(ember_chat_set_fit(c, &fit) == EMBER_OK);
    CHECK(ember_chat_add(c, "system", SYSTEM) == EMBER_OK);
    return c;
}

static void user_line(char *buf, size_t cap, int i)
{
    snprintf(buf, cap, "Tell me story number %d about Ben and the cat, the big red ball and the tall green tree in "
             "the park.", i + 1);
}

/* Tokens the system message alone renders to (BOS included): every prompt starts so. */
static size_t system_tokens(ember_model *m)
{
    const ember_chat_message sys = {"system", SYSTEM};
    char text[1024];
    size_t len = 0, n = 0;
    CHECK(ember_chat_apply(m, NULL, &sys, 1, 0, text, sizeof text, &len) == EMBER_OK && len < sizeof text);
    uint32_t ids[512];
    CHECK(ember_tokenize(m, text, len, 1, ids, 512, &n) == EMBER_OK);
    return n;
}

static size_t common_prefix(const uint32_t *a, const uint32_t *b, size_t n)
{
    size_t i = 0;
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/* The whole conversation as if nothing were dropped, in tokens. */
static size_t whole_length(ember_model *m, char lines[][128], char replies[][2048])
{
    static ember_chat_message msgs[1 + 2 * TURNS];
    msgs[0] = (ember_chat_message){"system", SYSTEM};
    for (int i = 0; i < TURNS; i++) {
        msgs[1 + 2 * i] = (ember_chat_message){"user", lines[i]};
        msgs[2 + 2 * i] = (ember_chat_message){"assistant", replies[i]};
    }
    size_t len = 0, n = 0;
    if (ember_chat_apply(m, NULL, msgs, 1 + 2 * TURNS, 0, NULL, 0, &len) != EMBER_OK) return 0;
    char *text = malloc(len + 1);
    if (text && ember_chat_apply(m, NULL, msgs, 1 + 2 * TURNS, 0, text, len + 1, &len) == EMBER_OK)
        ember_tokenize(m, text, len, 1, NULL, 0, &n);
    free(text);
    return n;
}

static void reply_text(ember_model *m, const reply *r, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < r->n && o + 64 < cap; i++) o += ember_token_to_text(m, r->ids[i], out + o, 64);
    out[o] = 0;
}

static void test_thirty_turns(ember_model *m, ember_engine *e, uint32_t ctx)
{
    ember_chat *c = new_chat(m, (ember_chat_fit){.max_tokens = REPLY});
    size_t sys = system_tokens(m), first_len = 0;
    static uint32_t first[512];
    static char lines[TURNS][128], replies[TURNS][2048];
    static reply r;
    int answered = 0, bad_room = 0, bad_start = 0, bad_drop_list = 0, drops = 0, hits_after_drop = 0, most = 0;
    uint64_t dropped_sum = 0;
    for (int i = 0; i < TURNS; i++) {
        user_line(lines[i], sizeof lines[i], i);
        const uint32_t *ids;
        size_t n;
        ember_chat_info ci;
        CHECK(ember_chat_add(c, "user", lines[i]) == EMBER_OK);
        if (ember_chat_prompt(c, &ids, &n) != EMBER_OK) {
            CHECKF(0, "turn %d: %s", i + 1, ember_chat_error(c));
            break;
        }
        ember_chat_get_info(c, &ci);
        if (i == 0) memcpy(first, ids, (first_len = n) * sizeof *ids);
        bad_room += n + ci.reply_room > ctx;
        bad_start += common_prefix(ids, first, n < first_len ? n : first_len) + 1 < sys;
        if (ci.dropped_turns) {
            drops++;
            dropped_sum += ci.dropped_turns;
            if ((int)ci.dropped_turns > most) most = (int)ci.dropped_turns;
            bad_drop_list += ci.n_dropped != 2 * ci.dropped_turns || strcmp(ci.dropped[0].role, "user") != 0;
        }
        /* Short replies, and now and then a long one, so that some prompts drop more than
         * one turn. */
        if (!ask(e, c, ids, n, i % 4 == 3 ? REPLY : 64, &r)) break;
        answered += r.n > 0 && r.why == EMBER_FINISH_LENGTH;
        /* Served from the cache after a drop: the system prompt's whole blocks at least. */
        hits_after_drop += ci.dropped_turns && r.m.n_cached >= (sys - 1) / BLOCK * BLOCK && r.m.n_cached > 0;
        reply_text(m, &r, replies[i], sizeof replies[i]);
    }
    ember_chat_info ci;
    ember_chat_get_info(c, &ci);
    size_t whole = whole_length(m, lines, replies);
    printf("30 turns: %d answered; the whole conversation is %zu tokens (%.1f contexts); %d prompts dropped "
           "%llu turns in all (%llu by the chat's count; at most %d at once), %zu messages left; system prompt %zu "
           "tokens, served from the cache after %d of %d drops\n", answered, whole, (double)whole / ctx, drops,
           (unsigned long long)dropped_sum, (unsigned long long)ci.dropped_turns_total, most, ci.n_messages, sys,
           hits_after_drop, drops);
    CHECK(answered == TURNS && whole >= 10u * ctx);
    CHECK(bad_room == 0 && bad_start == 0 && bad_drop_list == 0);
    CHECK(drops > 0 && dropped_sum == ci.dropped_turns_total);
    CHECK(ci.n_messages == 1 + 2 * (TURNS - dropped_sum)); /* the system message and the kept turns */
    CHECK(hits_after_drop == drops);
    ember_chat_free(c);
}

/* A reply that runs into the context's end, then the next turn drops to make room. */
static void test_cut_by_context(ember_model *m, ember_engine *e, uint32_t ctx)
{
    ember_chat *c = new_chat(m, (ember_chat_fit){.reply_room = 32});
    static reply r;
    const uint32_t *ids;
    size_t n = 0;
    CHECK(ember_chat_add(c, "user", "Tell me a very long story.") == EMBER_OK && ember_chat_prompt(c, &ids, &n) == EMBER_OK);
    ask(e, c, ids, n, 2 * ctx, &r);
    printf("cut: a prompt of %zu tokens, a reply of %zu ending %d\n", n, r.n, (int)r.why);
    CHECK(r.why == EMBER_FINISH_CONTEXT && r.m.n_prompt + r.m.n_gen == ctx);
    CHECK(ember_chat_add(c, "user", "And then?") == EMBER_OK && ember_chat_prompt(c, &ids, &n) == EMBER_OK);
    ember_chat_info ci;
    ember_chat_get_info(c, &ci);
    CHECK(ci.dropped_turns == 1 && n + 32 <= ctx);
    ask(e, c, ids, n, 16, &r);
    CHECK(r.n == 16 && r.why == EMBER_FINISH_LENGTH);
    ember_chat_free(c);
}

static void test_refuse(ember_model *m, ember_engine *e)
{
    ember_chat *c = new_chat(m, (ember_chat_fit){.overflow = EMBER_CHAT_REFUSE, .max_tokens = REPLY});
    static reply r;
    char line[128];
    ember_status s = EMBER_OK;
    int turns = 0;
    const uint32_t *ids;
    size_t n;
    for (int i = 0; s == EMBER_OK && i < TURNS; i++) {
        user_line(line, sizeof line, i);
        CHECK(ember_chat_add(c, "user", line) == EMBER_OK);
        if ((s = ember_chat_prompt(c, &ids, &n)) == EMBER_OK && ask(e, c, ids, n, REPLY, &r)) turns++;
    }
    ember_chat_info before, after;
    ember_chat_get_info(c, &before);
    printf("refuse: %d turns, then %s: %s\n", turns, ember_status_name(s), ember_chat_error(c));
    CHECK(s == EMBER_ERR_CONTEXT_FULL && turns > 0 && before.dropped_turns_total == 0);
    CHECK(strstr(ember_chat_error(c), "kept for the reply do not fit the context of 512") != NULL);
    /* Unchanged: the same refusal again, and no reply without a prompt. */
    CHECK(ember_chat_prompt(c, &ids, &n) == EMBER_ERR_CONTEXT_FULL);
    ember_chat_get_info(c, &after);
    CHECK(after.n_messages == before.n_messages && after.n_tokens == before.n_tokens);
    CHECK(ember_chat_add_reply(c, r.ids, 1) == EMBER_ERR_INVALID_ARG);
    ember_chat_free(c);
}

static void test_bad_fits(ember_model *m, uint32_t ctx)
{
    ember_chat *c = new_chat(m, (ember_chat_fit){0});
    CHECK(ember_chat_set_fit(c, &(ember_chat_fit){.reply_room = ctx}) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_chat_set_fit(c, &(ember_chat_fit){.overflow = 7}) == EMBER_ERR_INVALID_ARG);
    /* A last turn longer than the context: nothing to drop makes it fit. */
    static char big[4000];
    for (size_t i = 0; i + 4 < sizeof big; i += 4) memcpy(big + i, "dog ", 4);
    const uint32_t *ids;
    size_t n;
    CHECK(ember_chat_add(c, "user", big) == EMBER_OK);
    CHECK(ember_chat_prompt(c, &ids, &n) == EMBER_ERR_CONTEXT_FULL);
    CHECKF(strstr(ember_chat_error(c), "the system message and the last turn alone take"), "%s", ember_chat_error(c));
    ember_chat_free(c);
}

/* Two chats through the same turns, one of which takes back a message in between: their
 * next prompts are the same ids. */
static void test_take_back(ember_model *m)
{
    ember_chat *a = new_chat(m, (ember_chat_fit){0}), *b = new_chat(m, (ember_chat_fit){0});
    uint32_t reply[64];
    size_t nr = 0, na = 0, nb = 0;
    const char *text = "Ben ran to the park and played with the red ball.";
    CHECK(ember_tokenize(m, text, strlen(text), 0, reply, 64, &nr) == EMBER_OK && nr < 64);
    const uint32_t *ia, *ib;
    CHECK(ember_chat_take_back(a) == EMBER_OK); /* the system message: no reply after it */
    CHECK(ember_chat_add(a, "system", SYSTEM) == EMBER_OK);
    for (int k = 0; k < 2; k++) {
        CHECK(ember_chat_add(a, "user", "Hello there.") == EMBER_OK && ember_chat_prompt(a, &ia, &na) == EMBER_OK);
        CHECK(ember_chat_add(b, "user", "Hello there.") == EMBER_OK && ember_chat_prompt(b, &ib, &nb) == EMBER_OK);
        CHECK(ember_chat_add_reply(a, reply, nr) == EMBER_OK && ember_chat_add_reply(b, reply, nr) == EMBER_OK);
    }
    CHECK(ember_chat_take_back(a) == EMBER_ERR_INVALID_ARG); /* the last message is a reply */
    /* Taken back after its prompt (a request that failed), and after a refused prompt. */
    CHECK(ember_chat_add(a, "user", "This one fails.") == EMBER_OK && ember_chat_prompt(a, &ia, &na) == EMBER_OK);
    CHECK(ember_chat_take_back(a) == EMBER_OK);
    static char big[4000];
    for (size_t i = 0; i + 4 < sizeof big; i += 4) memcpy(big + i, "cat ", 4);
    CHECK(ember_chat_add(a, "user", big) == EMBER_OK && ember_chat_prompt(a, &ia, &na) == EMBER_ERR_CONTEXT_FULL);
    CHECK(ember_chat_take_back(a) == EMBER_OK);
    CHECK(ember_chat_add(a, "user", "And then?") == EMBER_OK && ember_chat_prompt(a, &ia, &na) == EMBER_OK);
    CHECK(ember_chat_add(b, "user", "And then?") == EMBER_OK && ember_chat_prompt(b, &ib, &nb) == EMBER_OK);
    printf("take back: %zu and %zu prompt tokens\n", na, nb);
    CHECK(na == nb && memcmp(ia, ib, na * sizeof *ia) == 0);
    ember_chat_info ia_info, ib_info;
    ember_chat_get_info(a, &ia_info);
    ember_chat_get_info(b, &ib_info);
    CHECK(ia_info.n_messages == ib_info.n_messages);
    ember_chat_free(a);
    ember_chat_free(b);
}

/* ---- `ember chat` ------------------------------------------------------------------------------ */

/* Replies end at the end of their story (EOS) or at -n, the room each prompt keeps. */
#define CLI_REPLY 128

static void test_cli(ember_model *m, const char *model, uint32_t ctx)
{
    size_t user_tokens = 0; /* the user lines alone, a lower bound of what the template adds */
    char in[512], err[512], cmd[2048];
    snprintf(in, sizeof in, "%s/chat_long_in.txt", tu_tmp_dir());
    snprintf(err, sizeof err, "%s/chat_long_err.txt", tu_tmp_dir());
    FILE *f = fopen(in, "w");
    if (!f) return;
    for (int i = 0; i < TURNS; i++) {
        char line[128];
        user_line(line, sizeof line, i);
        fprintf(f, "%s\n", line);
        size_t n = 0;
        ember_tokenize(m, line, strlen(line), 0, NULL, 0, &n);
        user_tokens += n;
    }
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s chat -m %s -n %d --system '%s' <%s 2>%s", tu_ember_bin(), model, CLI_REPLY, SYSTEM,
             in, err);
    static char out[1 << 20];
    int rc = tu_run(cmd, out, sizeof out);
    f = fopen(err, "r");
    char line[512];
    int turns = 0, answered = 0, drop_lines = 0, dropped = 0, hits = 0, other = 0;
    bool after_drop = false;
    unsigned generated_sum = 0;
    while (f && fgets(line, sizeof line, f)) {
        int k, nd;
        unsigned p, cached, gen, c;
        if (sscanf(line, "[turn %d: %u prompt tokens, %u from cache, %u generated", &k, &p, &cached, &gen) == 4) {
            turns++;
            answered += gen > 0 && p + CLI_REPLY <= ctx;
            generated_sum += gen;
            hits += after_drop && cached >= 2 * BLOCK;
            after_drop = false;
        } else if (sscanf(line, "[dropped the %d oldest turns to fit the context of %u tokens]", &nd, &c) == 2 ||
                   (sscanf(line, "[dropped the oldest turn to fit the context of %u tokens]", &c) == 1 && (nd = 1))) {
            drop_lines++;
            dropped += nd;
            after_drop = c == ctx;
        } else {
            other++;
            fputs(line, stderr);
        }
    }
    if (f) fclose(f);
    size_t whole = generated_sum + user_tokens;
    printf("ember chat: exit %d, %d turns (%d answered, %u tokens generated; with the user lines, at least %zu tokens, "
           "%.1f contexts), %d drop lines dropping %d turns, the cache served the system prompt after %d of them, "
           "%d other lines\n", rc, turns, answered, generated_sum, whole, (double)whole / ctx, drop_lines, dropped, hits,
           other);
    CHECK(rc == 0 && turns == TURNS && answered == TURNS && other == 0 && whole >= 10u * ctx);
    CHECK(drop_lines > 0 && hits == drop_lines && dropped < TURNS);
}

int main(void)
{
    test_fit_logic();
    const char *shared = tu_shared_dir();
    char path[512];
    if (shared) snprintf(path, sizeof path, "%s/models/stories260K/stories260K-f32.v3.gguf", shared);
    FILE *f = shared ? fopen(path, "rb") : NULL;
    if (!f) {
        printf("SKIP (part): ../shared absent, the conversations with stories260K not run\n");
        return tu_finish("test_chat_long");
    }
    fclose(f);
    ember_model_opts mo = {.enable_validation = tu_validation(), .memory = tu_memory_mode()};
    ember_model *m = NULL;
    ember_engine *e = NULL;
    if (ember_model_load(path, &mo, &m) != EMBER_OK || ember_engine_create(m, &(ember_engine_opts){0}, &e) != EMBER_OK) {
        CHECKF(0, "%s %s", ember_model_error(m), e ? ember_engine_error(e) : "");
    } else {
        ember_model_info info;
        ember_model_get_info(m, &info);
        test_thirty_turns(m, e, info.ctx_len);
        test_cut_by_context(m, e, info.ctx_len);
        test_refuse(m, e);
        test_bad_fits(m, info.ctx_len);
        test_take_back(m);
        ember_engine_stats st;
        ember_engine_get_stats(e, &st);
        printf("engine: %llu prompt tokens served from the prefix cache in all\n",
               (unsigned long long)st.prefix_hit_tokens);
        test_cli(m, path, info.ctx_len);
    }
    ember_engine_destroy(e);
    CHECK(!m || ember_model_validation_messages(m, NULL, 0) == 0);
    ember_model_free(m);
    return tu_finish("test_chat_long");
}
