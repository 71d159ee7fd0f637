/* prefill_peer.h — prompts prefilled by another server (prefill_peer.c; docs/server.md,
 * "Prefill on another server"): with --prefill-peer URL, a request whose prompt has at
 * least --prefill-min-tokens tokens first asks the peer (an `ember serve
 * --serve-prefill`) for the prompt's KV state, then restores it locally and decodes.
 * The peer is asked with the same API key, and its answer is bounded in size; a peer
 * that fails, is slow to connect, stalls or answers something else costs only the local
 * prefill the request then takes. */
#ifndef EMBER_SERVER_PREFILL_PEER_H
#define EMBER_SERVER_PREFILL_PEER_H

#include <stddef.h>
#include <stdint.h>

typedef struct prefill_peer {
    const char *url;          /* the peer's base URL; NULL: none */
    const char *api_key;      /* sent as Authorization: Bearer (the server's own --api-key) */
    uint32_t min_tokens;      /* shorter prompts are prefilled here */
    uint64_t max_bytes;       /* the largest state taken (--max-state-mib) */
} prefill_peer;

/* Once, before any thread asks (libcurl's global setup). */
void prefill_peer_init(void);
/* The KV state of tokens[0..n) from the peer: malloc'ed bytes (*len), or NULL with the
 * reason in msg. Blocks the calling thread for the peer's prefill. */
void *prefill_peer_fetch(const prefill_peer *p, const uint32_t *tokens, size_t n, size_t *len, char *msg,
                         size_t cap);

#endif
