/* state_store.h — the server's KV state files (state_store.c, docs/server.md "Saving and
 * restoring KV state"): a prompt's state saved as a file in one folder, and a file's
 * state restored into the engine's prefix cache, both through ordinary engine requests
 * waited for on the connection's thread. Names are confined to the folder (no path
 * separators, no leading dot) and files are bounded in size. */
#ifndef EMBER_SERVER_STATE_STORE_H
#define EMBER_SERVER_STATE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"

typedef struct state_store {
    const char *dir;          /* --state-dir; NULL: the endpoints are off */
    uint64_t max_bytes;       /* the largest state file read or written */
} state_store;

/* Whether name may name a file of the folder: 1..128 of A-Z a-z 0-9 . _ -, not starting
 * with a dot. */
bool state_name_ok(const char *name);
/* The KV state of desc's prompt (computed, or taken from the prefix cache): malloc'ed
 * bytes (*len of them, at most max_bytes) and the prompt's tokens in *n_tokens; NULL with
 * *err filled. */
void *state_compute(ember_engine *e, ember_request_desc *desc, uint64_t max_bytes, size_t *len, uint32_t *n_tokens,
                    api_error *err);
/* Saves the KV state of desc's prompt as dir/name, replacing it: *n_tokens, *bytes say
 * what was written. false with *err filled. */
bool state_save(const state_store *st, ember_engine *e, ember_request_desc *desc, const char *name,
                uint32_t *n_tokens, size_t *bytes, api_error *err);
/* Restores dir/name into the engine: its blocks are written and published for the prefix
 * cache, so that a request whose prompt begins with its tokens takes them instead of
 * computing them (until the pool needs the blocks back). *n_tokens, *n_restored say how
 * many. false with *err filled (404 no such file, 400 a bad or foreign state). */
bool state_restore(const state_store *st, ember_engine *e, const char *name, uint32_t *n_tokens,
                   uint32_t *n_restored, api_error *err);

#endif
