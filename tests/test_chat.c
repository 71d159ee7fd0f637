/* test_chat.c — conversations with a model (engine/chat/chat.c) and `ember chat`:
 *  - a test model rewritten with ChatML control tokens and SmolLM2's chat_template: the
 *    template is found and detected, the prompt's markers become control tokens, and a
 *    reply is kept as generated — its <|im_end|> is not doubled, another end token
 *    (</s>) gives way to <|im_end|>, a reply cut by length gets <|im_end|> appended;
 *  - the same model with SmolLM2's BOS, <|im_start|>: the prompt starts with one
 *    <|im_start|> whether the vocabulary adds its BOS (add_bos_token) or not;
 *  - a model without a template or control tokens, with --chat-template chatml: the
 *    markers stay plain text;
 *  - `ember chat` with two lines piped in prints two replies, and the second turn takes
 *    the first turn's blocks from the prefix cache; an unknown template name is refused;
 *  - the same with stories260K from ../shared (real weights; skipped when absent). */
#include <stdlib.h>
#include <string.h>

#include "engine/chat/chat_template.h"
#include "engine/model/gguf_write.h"
#include "testutil.h"

#define VOCAB 512
#define IM_START (VOCAB - 2)
#define IM_END (VOCAB - 1)
#define BOS 1
#define EOS 2
#define BLOCK 16 /* the engine's default KV block size */

static const char SMOLLM2[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n"
    "' + message['content'] + '<|im_end|>' + '\n"
    "'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n"
    "' }}{% endif %}";

static const char SYSTEM[] = "You are a kind assistant who tells short happy stories about a little dog named Ben "
                             "and his friend the cat, who like to play in the park with a big red ball every day.";

/* ---- a model with chat control tokens ----------------------------------------------- */

/* bos_mode 0: BOS stays <s>; 1: BOS is <|im_start|> and the vocabulary adds none (as
 * SmolLM2's); 2: BOS is <|im_start|> and the vocabulary adds it. */
static ember_status copy_vocab(ember_gguf_writer *w, const ember_gguf *g, int bos_mode)
{
    const ember_gguf_kv *tokens = ember_gguf_find(g, "tokenizer.ggml.tokens");
    const ember_gguf_kv *types = ember_gguf_find(g, "tokenizer.ggml.token_type");
    if (!tokens || !types || tokens->arr_n != VOCAB || types->arr_n != VOCAB || types->arr_type != EMBER_GGUF_INT32)
        return EMBER_ERR_FORMAT;
    static char pieces[VOCAB][64];
    const char *ptrs[VOCAB];
    int32_t type[VOCAB];
    for (uint32_t i = 0; i < VOCAB; i++) {
        ember_gguf_str s = tokens->arr_str[i];
        snprintf(pieces[i], sizeof pieces[i], "%.*s", (int)s.len, s.ptr);
        ptrs[i] = pieces[i];
        memcpy(&type[i], types->arr_data + 4 * i, 4);
    }
    /* The last two filler pieces become ChatML's control tokens. */
    ptrs[IM_START] = "<|im_start|>";
    ptrs[IM_END] = "<|im_end|>";
    type[IM_START] = type[IM_END] = 3;
    ember_status s = ember_gguf_add_arr_str(w, "tokenizer.ggml.tokens", ptrs, VOCAB);
    if (s == EMBER_OK) s = ember_gguf_add_arr_i32(w, "tokenizer.ggml.token_type", type, VOCAB);
    if (s == EMBER_OK) s = ember_gguf_add_str(w, "tokenizer.chat_template", SMOLLM2);
    if (s == EMBER_OK) s = ember_gguf_add_u32(w, "tokenizer.ggml.bos_token_id", bos_mode ? IM_START : BOS);
    if (s == EMBER_OK && bos_mode) s = ember_gguf_add_bool(w, "tokenizer.ggml.add_bos_token", bos_mode == 2);
    return s;
}

/* Copies src with the vocabulary changed as above. */
static bool make_chat_model(const char *src, const char *dst, int bos_mode)
{
    ember_err err = {{0}};
    ember_gguf *g = NULL;
    ember_gguf_writer *w = NULL;
    static const char *const skip[] = {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id",
                                       "tokenizer.ggml.add_bos_token", NULL};
    ember_status s = ember_gguf_open(src, &g, &err);
    if (s == EMBER_OK) s = ember_gguf_writer_create(&w, &err);
    if (s == EMBER_OK) s = ember_gguf_copy_kv(w, g, skip);
    if (s == EMBER_OK) s = copy_vocab(w, g, bos_mode);
    for (uint64_t i = 0; s == EMBER_OK && i < g->n_tensors; i++) {
        const ember_gguf_tensor *t = &g->tensors[i];
        s = ember_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    if (s == EMBER_OK) s = ember_gguf_write(w, dst, &err);
    CHECKF(s == EMBER_OK, "making %s: %s (%s)", dst, ember_status_name(s), err.msg);
    ember_gguf_writer_free(w);
    ember_gguf_close(g);
    return s == EMBER_OK;
}

/* ---- the conversation through the library -------------------------------------------- */

static size_t count(const uint32_t *ids, size_t n, uint32_t id)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ids[i] == id;
    return k;
}

/* Adds a user line, makes the prompt and checks that it extends the previous one
 * (prev[0..n_prev)) unchanged. Returns the prompt's length; copies it into prev. */
static size_t turn(ember_chat *c, const char *line, uint32_t *prev, size_t n_prev, size_t cap)
{
    const uint32_t *ids = NULL;
    size_t n = 0;
    CHECK(ember_chat_add(c, "user", line) == EMBER_OK);
    ember_status s = ember_chat_prompt(c, &ids, &n);
    CHECKF(s == EMBER_OK, "prompt: %s", ember_chat_error(c));
    if (s != EMBER_OK || n > cap) return 0;
    CHECKF(n > n_prev && memcmp(ids, prev, n_prev * sizeof *ids) == 0, "turn '%s' does not extend the last", line);
    memcpy(prev, ids, n * sizeof *ids);
    return n;
}

/* Appends reply to the chat and to conv (the conversation as the test expects it). */
static size_t reply(ember_chat *c, const uint32_t *r, size_t nr, uint32_t *conv, size_t n)
{
    CHECK(ember_chat_add_reply(c, r, nr) == EMBER_OK);
    memcpy(conv + n, r, nr * sizeof *r);
    return n + nr;
}

static void library(const char *path)
{
    ember_model_opts mo = {.backend = EMBER_BACKEND_CPU};
    ember_model *m = NULL;
    if (ember_model_load(path, &mo, &m) != EMBER_OK) {
        CHECKF(0, "load %s: %s", path, ember_model_error(m));
        ember_model_free(m);
        return;
    }
    ember_chat *c = NULL;
    CHECKF(ember_chat_create(m, NULL, &c) == EMBER_OK, "%s", ember_chat_error(c));
    CHECK(strcmp(ember_chat_template_name(c), "chatml") == 0);

    static uint32_t conv[4096];
    size_t n1 = turn(c, "hello there", conv, 0, 4096);
    /* BOS, then SmolLM2's default system turn, the user turn, the generation prompt. */
    CHECKF(n1 > 3 && conv[0] == BOS && conv[1] == IM_START, "prompt starts %u %u", conv[0], conv[1]);
    CHECK(count(conv, n1, IM_START) == 3 && count(conv, n1, IM_END) == 2);

    /* A reply that ends with the template's own end token: kept, not doubled. */
    const uint32_t r1[] = {300, 301, 302, IM_END};
    size_t n = reply(c, r1, 4, conv, n1);
    size_t n2 = turn(c, "and then", conv, n, 4096);
    CHECKF(n2 > n && conv[n] != IM_END, "after the reply's <|im_end|>: %u", conv[n]);
    CHECK(count(conv, n2, IM_END) == 4 && count(conv, n2, IM_START) == 5);

    /* Ends with another end-of-generation token (</s>): that one gives way to <|im_end|>. */
    const uint32_t r2[] = {303, EOS};
    n = reply(c, r2, 2, conv, n2);
    const uint32_t *ids;
    size_t n3;
    CHECK(ember_chat_add(c, "user", "so") == EMBER_OK && ember_chat_prompt(c, &ids, &n3) == EMBER_OK);
    CHECKF(memcmp(ids, conv, (n - 1) * sizeof *ids) == 0 && ids[n - 1] == IM_END, "</s> not replaced: %u",
           ids[n - 1]);
    CHECK(count(ids, n3, EOS) == 0);

    /* A reply cut by length: the end of turn is appended after it. */
    size_t n4 = n3;
    memcpy(conv, ids, n3 * sizeof *ids);
    const uint32_t r3[] = {304, 305};
    n = reply(c, r3, 2, conv, n4);
    size_t n5 = turn(c, "ok", conv, n, 4096);
    CHECKF(n5 > n && conv[n] == IM_END, "no <|im_end|> after a cut reply: %u", conv[n]);

    /* A reply needs a prompt; unknown roles are refused. */
    CHECK(ember_chat_add_reply(c, r3, 2) == EMBER_OK);
    CHECK(ember_chat_add_reply(c, r3, 2) == EMBER_ERR_INVALID_ARG);
    CHECK(ember_chat_add(c, "tool", "x") == EMBER_ERR_INVALID_ARG);
    ember_chat_free(c);

    /* ember_chat_apply: the text, without BOS, for a prompt with parse_special. */
    const ember_chat_message msgs[] = {{"system", "Be brief."}, {"user", "Hi"}};
    char buf[256];
    size_t len = 0;
    CHECK(ember_chat_apply(m, NULL, msgs, 2, 1, buf, sizeof buf, &len) == EMBER_OK);
    const char *want = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
    CHECKF(len == strlen(want) && strcmp(buf, want) == 0, "apply: %s", buf);
    CHECK(ember_chat_apply(m, "llama3", msgs, 2, 1, NULL, 0, &len) == EMBER_OK && len > 0);
    CHECK(ember_chat_apply(m, "vicuna", msgs, 2, 1, buf, sizeof buf, &len) == EMBER_ERR_UNSUPPORTED);
    CHECKF(strstr(ember_model_error(m), "vicuna") != NULL, "%s", ember_model_error(m));

    /* Unknown template name at creation: the message names it. */
    CHECK(ember_chat_create(m, "vicuna", &c) == EMBER_ERR_UNSUPPORTED);
    CHECKF(strstr(ember_chat_error(c), "'vicuna'") && strstr(ember_chat_error(c), "chatml"), "%s",
           ember_chat_error(c));
    ember_chat_free(c);
    ember_model_free(m);
}

/* A model without control tokens: ChatML's markers are plain text. */
/* A vocabulary whose BOS is <|im_start|> (SmolLM2's): the template's leading
 * <|im_start|>system is that BOS, and the prompt has it once, added by the vocabulary or
 * kept in the text. */
static void bos_is_im_start(const char *plain, const char *dst)
{
    for (int mode = 1; mode <= 2; mode++) {
        ember_model_opts mo = {.backend = EMBER_BACKEND_CPU};
        ember_model *m = NULL;
        ember_chat *c = NULL;
        const uint32_t *ids = NULL;
        size_t n = 0;
        if (!make_chat_model(plain, dst, mode)) return;
        CHECKF(ember_model_load(dst, &mo, &m) == EMBER_OK, "load: %s", ember_model_error(m));
        CHECK(m && ember_chat_create(m, NULL, &c) == EMBER_OK);
        CHECK(c && ember_chat_add(c, "user", "hello there") == EMBER_OK && ember_chat_prompt(c, &ids, &n) == EMBER_OK);
        CHECKF(n > 2 && ids[0] == IM_START && ids[1] != IM_START && count(ids, n, IM_START) == 3,
               "add_bos %s: the prompt starts %u %u with %zu <|im_start|>", mode == 2 ? "true" : "false", n ? ids[0] : 0,
               n > 1 ? ids[1] : 0, count(ids, n, IM_START));
        ember_chat_free(c);
        ember_model_free(m);
    }
}

static void plain_text_markers(const char *path)
{
    ember_model_opts mo = {.backend = EMBER_BACKEND_CPU};
    ember_model *m = NULL;
    ember_chat *c = NULL;
    if (ember_model_load(path, &mo, &m) != EMBER_OK || ember_chat_create(m, "chatml", &c) != EMBER_OK) {
        CHECKF(0, "load %s: %s %s", path, ember_model_error(m), ember_chat_error(c));
        ember_chat_free(c);
        ember_model_free(m);
        return;
    }
    const uint32_t *ids;
    size_t n = 0;
    CHECK(ember_chat_add(c, "user", "hi") == EMBER_OK && ember_chat_prompt(c, &ids, &n) == EMBER_OK);
    static char text[4096];
    size_t o = 0;
    for (size_t i = 1; i < n && o < sizeof text - 64; i++) o += ember_token_to_text(m, ids[i], text + o, 64);
    text[o] = 0;
    CHECKF(n > 20 && ids[0] == BOS && strstr(text, "<|im_start|>user\nhi<|im_end|>"), "%zu ids: '%s'", n, text);
    ember_chat_free(c);
    ember_model_free(m);
}

/* ---- `ember chat` ----------------------------------------------------------------------- */

typedef struct turn_line {
    unsigned prompt, cached, generated;
} turn_line;

/* Reads the "[turn N: P prompt tokens, C from cache, G generated, ...]" lines. */
static int read_turns(const char *path, turn_line *t, int cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[512];
    int n = 0;
    while (n < cap && fgets(line, sizeof line, f)) {
        int k;
        turn_line x;
        if (sscanf(line, "[turn %d: %u prompt tokens, %u from cache, %u generated", &k, &x.prompt, &x.cached,
                   &x.generated) == 4)
            t[n++] = x;
        else fputs(line, stderr);  /* anything else on stderr is worth seeing */
    }
    fclose(f);
    return n;
}

/* Pipes two user lines into `ember chat` and checks two replies, the second turn's
 * prompt served mostly from the cache. */
static void cli_two_turns(const char *what, const char *model, const char *extra)
{
    char err[512], in[512], cmd[2048];
    static char out[65536];
    static int call;
    call++; /* files of its own: under Wine the last run's stderr file was seen still held ("Sharing violation") */
    snprintf(err, sizeof err, "%s/chat_stderr%d.txt", tu_tmp_dir(), call);
    snprintf(in, sizeof in, "%s/chat_stdin%d.txt", tu_tmp_dir(), call);
    FILE *f = fopen(in, "wb"); /* a file, not printf | : the same on every system's shell */
    CHECK(f && fputs("Once upon a time there was a little dog\nwhat did the dog do then\n", f) >= 0);
    if (f) fclose(f);
    snprintf(cmd, sizeof cmd, "%s chat -m %s -n 8 --system '%s' %s <%s 2>%s", tu_ember_bin(), model, SYSTEM, extra,
             in, err);
    int rc = tu_run(cmd, out, sizeof out);
    turn_line t[4];
    int n = read_turns(err, t, 4);
    printf("%s: exit %d, %d turns", what, rc, n);
    for (int i = 0; i < n; i++) printf("; turn %d: %u prompt, %u cached, %u generated", i + 1, t[i].prompt,
                                       t[i].cached, t[i].generated);
    printf("\n");
    CHECK(rc == 0 && n == 2);
    if (n != 2) return;
    CHECK(t[0].generated > 0 && t[1].generated > 0 && t[0].cached == 0);
    CHECK(t[1].prompt > t[0].prompt + t[0].generated);
    unsigned floor1 = t[0].prompt / BLOCK * BLOCK;
    CHECKF(t[1].cached > 0 && t[1].cached + BLOCK >= floor1, "%s: turn 2 took %u tokens from the cache (turn 1: %u)",
           what, t[1].cached, t[0].prompt);
    CHECKF(strchr(out, '\n') && strchr(strchr(out, '\n') + 1, '\n'), "%s: two replies expected:\n%s", what, out);
}

static void cli_unknown_template(const char *model)
{
    char cmd[1024];
    static char out[4096];
    snprintf(cmd, sizeof cmd, "echo hi | %s chat -m %s --chat-template vicuna --backend cpu 2>&1", tu_ember_bin(),
             model);
    int rc = tu_run(cmd, out, sizeof out);
    CHECKF(rc == 1 && strstr(out, "'vicuna'") && strstr(out, "chatml"), "exit %d: %s", rc, out);
}

int main(void)
{
    char plain[512], chat[512], cmd[1024];
    snprintf(plain, sizeof plain, "%s/chat_plain.gguf", tu_tmp_dir());
    snprintf(chat, sizeof chat, "%s/chat_chatml.gguf", tu_tmp_dir());
    snprintf(cmd, sizeof cmd, "%s make-test-model %s --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 "
             "--vocab %d --ctx 512 --seed 5", tu_ember_bin(), plain, VOCAB);
    CHECK(tu_run(cmd, NULL, 0) == 0);
    if (make_chat_model(plain, chat, 0)) {
        library(chat);
        cli_two_turns("control-token model", chat, "");
        cli_unknown_template(chat);
    }
    bos_is_im_start(plain, chat);
    plain_text_markers(plain);
    cli_two_turns("plain model, --chat-template chatml", plain, "--chat-template chatml");

    const char *shared = tu_shared_dir();
    char stories[512];
    if (shared) snprintf(stories, sizeof stories, "%s/models/stories260K/stories260K-f32.v3.gguf", shared);
    FILE *f = shared ? fopen(stories, "rb") : NULL;
    if (f) {
        fclose(f);
        cli_two_turns("stories260K", stories, "");
    } else {
        printf("SKIP (part): ../shared absent, stories260K not checked\n");
    }
    remove(plain);
    remove(chat);
    return tu_finish("test_chat");
}
