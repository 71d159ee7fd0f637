/* kv_state.c — see kv_state.h. The layout, all little-endian:
 *   0  "EMBERKVS"                8 bytes
 *   8  version, kv_type          u32 each
 *  16  model fingerprint         u64
 *  24  n_layers, n_kv_heads, head_dim, n_vocab, n_tokens, n_kv    u32 each
 *  48  kv bytes                  u64
 *  56  tokens                    n_tokens u32, then 4 zero bytes when n_tokens is odd
 *      rows                      kv bytes, then zero bytes to a multiple of 8
 *      checksum                  u64: ember_hash64 of every byte before it */
#include <string.h>

#include "common/hash.h"
#include "engine/kv_layout.h"
#include "kv_state.h"

#define HEADER 56
static const char MAGIC[8] = {'E', 'M', 'B', 'E', 'R', 'K', 'V', 'S'};

static uint64_t pad8(uint64_t n) { return (n + 7) & ~7ull; }

static uint64_t row_bytes(const ember_kv_state *s) { return ember_kv_row_bytes(s->model.head_dim, s->kv_type); }

uint64_t ember_kv_state_kv_bytes(const ember_kv_state *s)
{
    if (s->model.n_layers > (1u << 16) || s->model.n_kv_heads > (1u << 16) || s->model.head_dim > (1u << 16)) return 0;
    uint64_t per_pos = 2ull * s->model.n_layers * s->model.n_kv_heads * row_bytes(s); /* < 2^52 */
    return s->n_kv && per_pos > UINT64_MAX / 2 / s->n_kv ? 0 : per_pos * s->n_kv;
}

size_t ember_kv_state_size(const ember_kv_state *s)
{
    uint64_t kv = ember_kv_state_kv_bytes(s);
    if (!kv && s->n_kv) return 0;
    uint64_t n = HEADER + pad8(4ull * s->n_tokens) + pad8(kv) + 8;
    return n > SIZE_MAX ? 0 : (size_t)n;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); } /* hosts are little-endian */
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

void ember_kv_state_write(const ember_kv_state *s, uint8_t *out)
{
    size_t size = ember_kv_state_size(s);
    uint64_t kv = ember_kv_state_kv_bytes(s), tok = pad8(4ull * s->n_tokens);
    memset(out, 0, size);
    memcpy(out, MAGIC, 8);
    const uint32_t head[] = {EMBER_KV_STATE_VERSION, (uint32_t)s->kv_type};
    const uint32_t shape[] = {s->model.n_layers, s->model.n_kv_heads, s->model.head_dim, s->model.n_vocab,
                              s->n_tokens, s->n_kv};
    for (int i = 0; i < 2; i++) put32(out + 8 + 4 * i, head[i]);
    put64(out + 16, s->model.fingerprint);
    for (int i = 0; i < 6; i++) put32(out + 24 + 4 * i, shape[i]);
    put64(out + 48, kv);
    if (s->n_tokens) memcpy(out + HEADER, s->tokens, 4ull * s->n_tokens);
    if (kv) memcpy(out + HEADER + tok, s->kv, kv);
    put64(out + size - 8, ember_hash64(EMBER_HASH_SEED, out, size - 8));
}

/* The fields of the header, unchecked. */
static void read_header(const uint8_t *buf, ember_kv_state *s, uint32_t *version, uint64_t *kv)
{
    *version = get32(buf + 8);
    s->kv_type = (ember_kv_type)get32(buf + 12);
    s->model.fingerprint = get64(buf + 16);
    uint32_t *shape[] = {&s->model.n_layers, &s->model.n_kv_heads, &s->model.head_dim, &s->model.n_vocab,
                         &s->n_tokens, &s->n_kv};
    for (int i = 0; i < 6; i++) *shape[i] = get32(buf + 24 + 4 * i);
    *kv = get64(buf + 48);
}

/* The header's fields against themselves and the buffer's length. */
static ember_status check_shape(const ember_kv_state *s, uint64_t kv, size_t len, uint32_t max_tokens,
                                ember_err *err)
{
    if (!ember_kv_type_known(s->kv_type))
        return ember_fail(err, EMBER_ERR_FORMAT, "KV state: unknown KV type %u", (unsigned)s->kv_type);
    if (s->n_tokens > max_tokens)
        return ember_fail(err, EMBER_ERR_FORMAT, "KV state: %u tokens, more than the %u this engine takes",
                          s->n_tokens, max_tokens);
    if (s->n_kv > s->n_tokens)
        return ember_fail(err, EMBER_ERR_FORMAT, "KV state: K/V for %u positions of %u tokens", s->n_kv,
                          s->n_tokens);
    if (!s->model.head_dim || s->model.head_dim % 4 || !s->model.n_layers || !s->model.n_kv_heads)
        return ember_fail(err, EMBER_ERR_FORMAT, "KV state: a shape of zero or a head size not a multiple of 4");
    uint64_t want = ember_kv_state_kv_bytes(s);
    if ((!want && s->n_kv) || kv != want)
        return ember_fail(err, EMBER_ERR_FORMAT, "KV state: %llu bytes of K/V where its shape needs %llu",
                          (unsigned long long)kv, (unsigned long long)want);
    size_t size = ember_kv_state_size(s);
    if (!size || size != len)
        return ember_fail(err, EMBER_ERR_FORMAT, "KV state: %zu bytes where its header says %zu (truncated?)", len,
                          size);
    return EMBER_OK;
}

/* The model the state was computed by against expect. */
static ember_status check_model(const ember_kv_model_id *got, const ember_kv_model_id *want, ember_err *err)
{
    const char *names[] = {"layers", "KV heads", "head size", "vocabulary size"};
    const uint32_t g[] = {got->n_layers, got->n_kv_heads, got->head_dim, got->n_vocab};
    const uint32_t w[] = {want->n_layers, want->n_kv_heads, want->head_dim, want->n_vocab};
    for (int i = 0; i < 4; i++)
        if (g[i] != w[i])
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "KV state of another model: %u %s, this model has %u", g[i],
                              names[i], w[i]);
    if (got->fingerprint != want->fingerprint)
        return ember_fail(err, EMBER_ERR_INVALID_ARG,
                          "KV state of another model: fingerprint %016llx, this model's is %016llx (same shapes, "
                          "other weights or metadata)",
                          (unsigned long long)got->fingerprint, (unsigned long long)want->fingerprint);
    return EMBER_OK;
}

ember_status ember_kv_state_read(const uint8_t *buf, size_t len, const ember_kv_model_id *expect, uint32_t max_tokens,
                                 ember_kv_state *out, ember_err *err)
{
    memset(out, 0, sizeof *out);
    if (len < HEADER + 8 || memcmp(buf, MAGIC, 8))
        return ember_fail(err, EMBER_ERR_FORMAT, "not a KV state (%zu bytes, no \"EMBERKVS\" header)", len);
    if ((uintptr_t)buf % 4) return ember_fail(err, EMBER_ERR_INVALID_ARG, "KV state: the buffer is not 4-byte aligned");
    ember_kv_state s = {0};
    uint32_t version;
    uint64_t kv;
    read_header(buf, &s, &version, &kv);
    if (version != EMBER_KV_STATE_VERSION)
        return ember_fail(err, EMBER_ERR_FORMAT, "KV state version %u; this Ember reads version %d", version,
                          EMBER_KV_STATE_VERSION);
    ember_status st = check_shape(&s, kv, len, max_tokens, err);
    if (st != EMBER_OK) return st;
    if (get64(buf + len - 8) != ember_hash64(EMBER_HASH_SEED, buf, len - 8))
        return ember_fail(err, EMBER_ERR_FORMAT, "KV state: the checksum does not match (the bytes were changed)");
    if ((st = check_model(&s.model, expect, err)) != EMBER_OK) return st;
    s.tokens = (const uint32_t *)(buf + HEADER);
    s.kv = buf + HEADER + pad8(4ull * s.n_tokens);
    for (uint32_t i = 0; i < s.n_tokens; i++)
        if (s.tokens[i] >= s.model.n_vocab)
            return ember_fail(err, EMBER_ERR_FORMAT, "KV state: token %u is %u, not below the vocabulary size %u", i,
                              s.tokens[i], s.model.n_vocab);
    *out = s;
    return EMBER_OK;
}

const uint8_t *ember_kv_state_row(const ember_kv_state *s, uint32_t layer, int v, uint32_t pos, uint32_t head)
{
    uint64_t row = (((uint64_t)layer * 2 + (v != 0)) * s->n_kv + pos) * s->model.n_kv_heads + head;
    return s->kv + row * row_bytes(s);
}
