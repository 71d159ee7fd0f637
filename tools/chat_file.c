/* chat_file.c — see chat_file.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_file.h"
#include "cli.h"
#include "platform/os_file.h"

typedef struct kept {
    void *state;
    size_t len;
    bool done, failed;
} kept;

static void keep_state(void *user, ember_request_id id, const void *state, size_t len)
{
    kept *k = user;
    if ((k->state = malloc(len))) memcpy(k->state, state, len), k->len = len;
}

static void done(void *user, ember_request_id id, ember_finish why, const ember_request_metrics *m)
{
    kept *k = user;
    k->done = true;
    k->failed = why == EMBER_FINISH_ERROR || !k->state;
}

/* The KV state of ids[0..n) from e: a prompt-only request, whose prefix the cache holds. */
static bool state_of(ember_engine *e, const uint32_t *ids, size_t n, kept *k)
{
    ember_request_desc d = {.tokens = ids, .n_tokens = n, .prompt_only = 1, .on_state = keep_state, .on_done = done,
                            .user = k};
    ember_status s = ember_submit(e, &d, NULL);
    while (s == EMBER_OK && !k->done) s = ember_engine_step(e);
    if (s < 0 || !k->done || k->failed) {
        fprintf(stderr, "ember chat: the KV cache could not be saved: %s\n", ember_engine_error(e));
        return false;
    }
    return true;
}

static bool write_all(const char *path, const void *buf, size_t len)
{
    FILE *f = ember_fopen(path, "wb");
    bool ok = f && fwrite(buf, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = false;
    if (!ok) fprintf(stderr, "ember chat: cannot write %s\n", path);
    return ok;
}

bool chat_file_save(ember_engine *e, ember_chat *chat, const char *path)
{
    const uint32_t *ids;
    size_t n;
    kept k = {0};
    if (ember_chat_tokens(chat, &ids, &n) != EMBER_OK) {
        fprintf(stderr, "ember chat: %s\n", ember_chat_error(chat));
        return false;
    }
    if (n && !state_of(e, ids, n, &k)) return false;
    size_t len = 0;
    bool ok = ember_chat_save(chat, k.state, k.len, NULL, 0, &len) == EMBER_OK;
    void *buf = ok ? malloc(len) : NULL;
    ok = buf && ember_chat_save(chat, k.state, k.len, buf, len, &len) == EMBER_OK;
    if (!ok) fprintf(stderr, "ember chat: %s\n", buf ? ember_chat_error(chat) : "out of memory");
    if (ok && (ok = write_all(path, buf, len)))
        fprintf(stderr, "[saved to %s: %zu tokens%s, %zu bytes]\n", path, n, n ? " and their KV cache" : "", len);
    free(buf);
    free(k.state);
    return ok;
}

ember_chat *chat_file_load(ember_model *model, const char *template_name, const char *path)
{
    size_t len = 0;
    void *buf = cli_read_bytes("chat", path, &len);
    if (!buf) return NULL;
    ember_chat *chat = NULL;
    ember_status s = ember_chat_load(model, template_name, buf, len, &chat);
    free(buf);
    if (s == EMBER_OK) return chat;
    fprintf(stderr, "ember chat: %s: %s\n", path, ember_chat_error(chat));
    ember_chat_free(chat);
    return NULL;
}
