/* kv_state.h — the bytes of a KV state: a sequence's tokens and the K/V of its first
 * positions, as saved to a file or handed to another engine (kv_state.c). They are
 * written and read here only, and every length, count, type and id read is checked, so
 * the reader takes untrusted bytes (a file, a network peer). docs/state.md gives the
 * layout. Library-internal. */
#ifndef EMBER_KV_STATE_H
#define EMBER_KV_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "ember.h"

#define EMBER_KV_STATE_VERSION 1

/* The model a state belongs to: it is used only by one whose id is equal. */
typedef struct ember_kv_model_id {
    uint64_t fingerprint;          /* ember_gguf_fingerprint of its file */
    uint32_t n_layers, n_kv_heads, head_dim, n_vocab;
} ember_kv_model_id;

typedef struct ember_kv_state {
    ember_kv_model_id model;
    ember_kv_type kv_type;         /* how its rows are stored */
    uint32_t n_tokens;             /* the sequence */
    uint32_t n_kv;                 /* its first n_kv positions have K/V (at most n_tokens) */
    const uint32_t *tokens;        /* n_tokens ids */
    const uint8_t *kv;             /* rows [layer][K, V][position][KV head] of kv_type
                                      (kv_layout.h), n_kv positions */
} ember_kv_state;

/* The bytes of s's rows; 0 when that overflows. */
uint64_t ember_kv_state_kv_bytes(const ember_kv_state *s);
/* The bytes s is written as; 0 when that overflows. */
size_t ember_kv_state_size(const ember_kv_state *s);
/* Writes s into out, ember_kv_state_size(s) bytes. */
void ember_kv_state_write(const ember_kv_state *s, uint8_t *out);
/* Reads the state in buf[0..len) (4-byte aligned) for the model expect, refusing one of
 * more than max_tokens tokens: *out points into buf. EMBER_ERR_FORMAT naming what is
 * wrong (not a state, another version, the size, the checksum, a field out of range)
 * or EMBER_ERR_INVALID_ARG naming what differs from expect (another model). */
ember_status ember_kv_state_read(const uint8_t *buf, size_t len, const ember_kv_model_id *expect, uint32_t max_tokens,
                                 ember_kv_state *out, ember_err *err);
/* Row (layer, v: 0 K or 1 V, position pos, KV head) of s. */
const uint8_t *ember_kv_state_row(const ember_kv_state *s, uint32_t layer, int v, uint32_t pos, uint32_t head);

#endif
