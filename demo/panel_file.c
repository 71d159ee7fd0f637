/* panel_file.c — a panel's conversation saved to a file and loaded back (--sessions,
 * panel.h): the bytes of ember_chat_save, with the KV state of the conversation so that
 * a restored panel's next reply does not compute the conversation again.
 *
 * Saving asks the engine for the state with a prompt-only request (on_state); its
 * callbacks run on whichever thread steps the engine, so the state comes back through
 * the event queue like a reply's tokens, and the file is written on the UI thread. */
#include "panel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes path through a temporary file and a rename, so that a crash mid-write leaves
 * the previous save whole. */
static int write_file(const char *path, const void *buf, size_t len)
{
    size_t n = strlen(path) + 5;
    char *tmp = malloc(n);
    if (!tmp) return -1;
    snprintf(tmp, n, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(buf, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = 0;
    if (ok) ok = rename(tmp, path) == 0;
    else remove(tmp);
    free(tmp);
    return ok ? 0 : -1;
}

/* Writes the chat with state (NULL, 0: messages and ids only) to p->save_path and says
 * so in the panel and on stderr. */
static void write_save(panel *p, const void *state, size_t state_len)
{
    size_t len = 0;
    void *buf = NULL;
    ember_status s = ember_chat_save(p->chat, state, state_len, NULL, 0, &len);
    if (s == EMBER_OK && !(buf = malloc(len))) s = EMBER_ERR_OUT_OF_MEMORY;
    if (s == EMBER_OK) s = ember_chat_save(p->chat, state, state_len, buf, len, &len);
    if (s != EMBER_OK) panel_note(p, "cannot save: %s", ember_chat_error(p->chat));
    else if (write_file(p->save_path, buf, len) != 0) panel_note(p, "cannot write %s", p->save_path);
    else
        panel_info(p, "saved to %s: %zu bytes%s", p->save_path, len, state ? ", with the KV cache" : "");
    free(buf);
}

static void end_save(panel *p)
{
    free(p->save_state);
    free(p->save_path);
    p->save_state = NULL, p->save_len = 0, p->save_path = NULL;
    p->saving = 0;
}

int panel_save_start(panel *p, ember_engine *e, const char *path)
{
    if (p->busy || p->saving) {
        panel_note(p, p->busy ? "a reply is on its way: save when it has ended" : "a save is on its way");
        return -1;
    }
    if (!p->chat) return 0; /* nothing to save (a note said why when it was set up) */
    free(p->save_path);
    if (!(p->save_path = strdup(path))) return -1;
    const uint32_t *ids;
    size_t n = 0;
    ember_chat_tokens(p->chat, &ids, &n); /* cannot fail: no prompt waits for its reply */
    ember_request_desc d = {.tokens = ids, .n_tokens = n, .prompt_only = 1, .on_state = event_on_state,
                            .on_done = event_on_done, .user = &p->slot};
    if (n && e) {
        /* a chat just loaded and not yet continued still holds the state it came with */
        if (p->restore) ember_chat_kv_state(p->chat, &d.state, &d.state_len);
        if (ember_submit(e, &d, NULL) == EMBER_OK) {
            p->saving = 1;
            return 1;
        }
        panel_note(p, "the KV cache cannot be saved (%s): saving the messages only", ember_engine_error(e));
    }
    write_save(p, NULL, 0);
    end_save(p);
    return 0;
}

void panel_save_event(panel *p, const chat_event *ev, const char *bytes, ember_engine *e)
{
    if (ev->kind == EV_STATE) {
        free(p->save_state);
        p->save_len = 0;
        if ((p->save_state = malloc(ev->text_len))) memcpy(p->save_state, bytes, ev->text_len), p->save_len = ev->text_len;
        return;
    }
    if (ev->kind != EV_DONE) return;
    if (!p->save_state) {
        char why[512];
        panel_note(p, "the KV cache was not saved (%s): saving the messages only",
                   ev->why == EMBER_FINISH_ERROR ? ember_engine_copy_error(e, why, sizeof why) : "out of memory");
    }
    write_save(p, p->save_state, p->save_len);
    end_save(p);
}

int panel_restore(panel *p, const char *path, int use_state)
{
    SDL_RWops *rw = SDL_RWFromFile(path, "rb");
    if (!rw) return 0; /* no save yet: a new conversation */
    size_t len = 0;
    void *buf = SDL_LoadFile_RW(rw, &len, 1);
    ember_chat *c = NULL;
    ember_status s = buf ? ember_chat_load(p->model, NULL, buf, len, &c) : EMBER_ERR_IO;
    SDL_free(buf);
    if (s != EMBER_OK) {
        panel_note(p, "cannot restore %s: %s", path, c ? ember_chat_error(c) : SDL_GetError());
        ember_chat_free(c);
        return -1;
    }
    ember_chat_free(p->chat);
    p->chat = c;
    panel_show_chat(p);
    const void *state;
    size_t state_len;
    ember_chat_kv_state(c, &state, &state_len);
    p->restore = use_state && state != NULL;
    ember_chat_info info;
    ember_chat_get_info(c, &info);
    const char *kv = p->restore ? ", with the KV cache" : state ? " (the KV cache is computed again with --draft)" : "";
    panel_info(p, "restored %s: %zu messages%s", path, info.n_messages, kv);
    return 1;
}
