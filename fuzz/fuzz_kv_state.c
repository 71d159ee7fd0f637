/* fuzz_kv_state.c — the KV state reader (engine/state/kv_state.c), which takes bytes from
 * files and network peers, for a fixed small model (2 layers, 2 KV heads of 8 values, a
 * vocabulary of 64).
 *
 * Input: byte 0 picks the mode.
 *  - bit 0 clear: the rest is read as a state. A state it accepts must write back to the
 *    same bytes.
 *  - bit 0 set: a valid state is made from bytes 1-3 (KV type, tokens, positions with
 *    K/V) and the rest (ids and row bytes, cyclically), written, then damaged as byte 4
 *    says (0: not at all; 1: one byte at bytes 5-6 xored with byte 7 | 1; 2: cut to the
 *    length at bytes 5-6; 3: 8 bytes added). Undamaged it must read back equal; damaged
 *    it must be refused. */
#include <string.h>

#include "engine/kv_layout.h"
#include "engine/state/kv_state.h"
#include "util.h"

static const ember_kv_model_id MODEL = {.fingerprint = 0x1234, .n_layers = 2, .n_kv_heads = 2, .head_dim = 8,
                                        .n_vocab = 64};

/* Reads buf[0..n) from an aligned copy (as a file read into memory would be). */
static ember_status read_copy(const uint8_t *buf, size_t n, ember_kv_state *st, uint64_t **copy)
{
    *copy = malloc(n + 8);
    FUZZ_CHECK(*copy, "out of memory");
    if (n) memcpy(*copy, buf, n);
    ember_err err;
    ember_status s = ember_kv_state_read((const uint8_t *)*copy, n, &MODEL, 64, st, &err);
    FUZZ_CHECK(s == EMBER_OK || err.msg[0], "refused without a message");
    return s;
}

static void read_raw(const uint8_t *data, size_t size)
{
    ember_kv_state st;
    uint64_t *copy;
    if (read_copy(data, size, &st, &copy) == EMBER_OK) {
        FUZZ_CHECK(ember_kv_state_size(&st) == size, "size %zu of %zu", ember_kv_state_size(&st), size);
        uint8_t *back = malloc(size);
        FUZZ_CHECK(back, "out of memory");
        ember_kv_state_write(&st, back);
        FUZZ_CHECK(memcmp(back, data, size) == 0, "an accepted state writes back otherwise");
        free(back);
    }
    free(copy);
}

static void made(const uint8_t *data, size_t size)
{
    if (size < 8) return;
    uint32_t tokens[16];
    uint8_t rows[16 * 2 * 2 * 2 * 32];
    ember_kv_state s = {.model = MODEL, .kv_type = (ember_kv_type)(data[1] % 3), .n_tokens = data[2] % 17,
                        .tokens = tokens, .kv = rows};
    s.n_kv = s.n_tokens ? data[3] % (s.n_tokens + 1) : 0;
    for (uint32_t i = 0; i < s.n_tokens; i++) tokens[i] = data[(8 + i) % size] % MODEL.n_vocab;
    for (size_t i = 0; i < sizeof rows; i++) rows[i] = data[(8 + i) % size];
    size_t n = ember_kv_state_size(&s);
    uint8_t *buf = malloc(n + 8);
    FUZZ_CHECK(buf && n, "size %zu", n);
    ember_kv_state_write(&s, buf);
    size_t at = (size_t)(data[5] | data[6] << 8), len = n;
    int damage = data[4] % 4;
    if (damage == 1) buf[at % n] ^= data[7] | 1;
    if (damage == 2) len = at % n;
    if (damage == 3) memset(buf + n, 0, 8), len = n + 8;
    ember_kv_state got;
    uint64_t *copy;
    ember_status st = read_copy(buf, len, &got, &copy);
    FUZZ_CHECK((st == EMBER_OK) == (damage == 0), "damage %d: status %d", damage, (int)st);
    if (st == EMBER_OK) {
        FUZZ_CHECK(got.n_tokens == s.n_tokens && got.n_kv == s.n_kv && got.kv_type == s.kv_type, "fields");
        FUZZ_CHECK(!s.n_tokens || memcmp(got.tokens, tokens, 4 * s.n_tokens) == 0, "tokens");
        FUZZ_CHECK(!s.n_kv || memcmp(got.kv, rows, ember_kv_state_kv_bytes(&s)) == 0, "rows");
    }
    free(copy);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    if (data[0] & 1) made(data, size);
    else read_raw(data + 1, size - 1);
    return 0;
}
