/* test_kv_state.c — the KV state format (engine/state/kv_state.c), the KV rows' host
 * codec (engine/kv_layout.c) and the model fingerprint (engine/model/fingerprint.c):
 *  - a state of each KV type writes and reads back to the same fields and bytes;
 *  - every single byte changed, every shorter length and a longer one are refused, and
 *    so are another version, more tokens than the engine takes, a token outside the
 *    vocabulary (with its checksum made right), and each field of another model (each
 *    message naming what differs);
 *  - rows: F16 and Q8_0 encode within their steps of the floats, and a row read back
 *    encodes to the same bytes (a state converted twice does not drift);
 *  - fingerprints: equal for one file read twice, different for another seed (same
 *    shapes and metadata, other weights) and for other metadata. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "engine/kv_layout.h"
#include "engine/model/fingerprint.h"
#include "engine/state/kv_state.h"
#include "testutil.h"

#define HD 64
static const ember_kv_model_id MODEL = {.fingerprint = 0xABCDEF0123456789ull, .n_layers = 3, .n_kv_heads = 2,
                                        .head_dim = HD, .n_vocab = 1000};

typedef struct made {
    ember_kv_state s;
    uint32_t tokens[40];
    uint8_t *rows;
    uint8_t *buf;    /* written */
    size_t size;
} made;

static void make(made *m, ember_kv_type t, uint32_t n_tokens, uint32_t n_kv, uint64_t seed)
{
    tu_rng rng = {seed};
    m->s = (ember_kv_state){.model = MODEL, .kv_type = t, .n_tokens = n_tokens, .n_kv = n_kv, .tokens = m->tokens};
    for (uint32_t i = 0; i < n_tokens; i++) m->tokens[i] = (uint32_t)(tu_next(&rng) % MODEL.n_vocab);
    uint64_t kv = ember_kv_state_kv_bytes(&m->s);
    m->rows = malloc(kv + 1);
    float v[HD];
    uint64_t rb = ember_kv_row_bytes(HD, t);
    for (uint64_t r = 0; r < kv / rb; r++) { /* real rows: codes of floats */
        for (int i = 0; i < HD; i++) v[i] = (float)((double)(tu_next(&rng) % 2001) / 100.0 - 10.0);
        ember_kv_row_encode(t, v, HD, m->rows + r * rb);
    }
    m->s.kv = m->rows;
    m->size = ember_kv_state_size(&m->s);
    m->buf = malloc(m->size + 16);
    ember_kv_state_write(&m->s, m->buf);
}

static void unmake(made *m)
{
    free(m->rows);
    free(m->buf);
}

static ember_status read_as(const uint8_t *buf, size_t len, const ember_kv_model_id *id, ember_kv_state *out,
                            char *msg, size_t cap)
{
    ember_err err = {0};
    ember_status s = ember_kv_state_read(buf, len, id, 100, out, &err);
    snprintf(msg, cap, "%s", err.msg);
    return s;
}

static void test_round_trip(void)
{
    const ember_kv_type types[3] = {EMBER_KV_F32, EMBER_KV_Q8_0, EMBER_KV_F16};
    for (int t = 0; t < 3; t++) {
        made m;
        make(&m, types[t], 37, 30, 1 + t);
        ember_kv_state got;
        char msg[600];
        CHECKF(read_as(m.buf, m.size, &MODEL, &got, msg, sizeof msg) == EMBER_OK, "type %d: %s", t, msg);
        CHECK(got.n_tokens == 37 && got.n_kv == 30 && got.kv_type == types[t]);
        CHECK(got.model.fingerprint == MODEL.fingerprint && memcmp(got.tokens, m.tokens, 37 * 4) == 0);
        CHECK(memcmp(got.kv, m.rows, ember_kv_state_kv_bytes(&m.s)) == 0);
        uint64_t rb = ember_kv_row_bytes(HD, types[t]);
        CHECK(ember_kv_state_row(&got, 2, 1, 29, 1) == got.kv + ((2 * 2 + 1) * 30 + 29) * 2 * rb + rb);
        unmake(&m);
    }
    made empty; /* no tokens at all is a state too */
    make(&empty, EMBER_KV_F32, 0, 0, 9);
    ember_kv_state got;
    char msg[600];
    CHECKF(read_as(empty.buf, empty.size, &MODEL, &got, msg, sizeof msg) == EMBER_OK && got.n_tokens == 0, "%s", msg);
    unmake(&empty);
}

static void test_damage(void)
{
    made m;
    make(&m, EMBER_KV_Q8_0, 5, 4, 3);
    ember_kv_state got;
    char msg[600];
    int accepted = 0;
    for (size_t i = 0; i < m.size; i++) {
        m.buf[i] ^= 0x10;
        accepted += read_as(m.buf, m.size, &MODEL, &got, msg, sizeof msg) == EMBER_OK;
        m.buf[i] ^= 0x10;
    }
    CHECKF(accepted == 0, "%d of %zu one-byte changes accepted", accepted, m.size);
    int short_ok = 0;
    for (size_t n = 0; n < m.size; n++) short_ok += read_as(m.buf, n, &MODEL, &got, msg, sizeof msg) == EMBER_OK;
    CHECK(short_ok == 0);
    memset(m.buf + m.size, 0, 8);
    CHECK(read_as(m.buf, m.size + 8, &MODEL, &got, msg, sizeof msg) == EMBER_ERR_FORMAT && strstr(msg, "truncated"));
    CHECK(read_as(m.buf, m.size - 1, &MODEL, &got, msg, sizeof msg) == EMBER_ERR_FORMAT);
    m.buf[5] ^= 1; /* the magic */
    CHECK(read_as(m.buf, m.size, &MODEL, &got, msg, sizeof msg) == EMBER_ERR_FORMAT && strstr(msg, "not a KV state"));
    m.buf[5] ^= 1;
    m.buf[8] = 2; /* version 2 */
    CHECK(read_as(m.buf, m.size, &MODEL, &got, msg, sizeof msg) == EMBER_ERR_FORMAT && strstr(msg, "version 2"));
    m.buf[8] = 1;
    m.buf[m.size - 1] ^= 0x80; /* the checksum itself */
    CHECK(read_as(m.buf, m.size, &MODEL, &got, msg, sizeof msg) == EMBER_ERR_FORMAT && strstr(msg, "checksum"));
    m.buf[m.size - 1] ^= 0x80;
    ember_err err;
    CHECK(ember_kv_state_read(m.buf, m.size, &MODEL, 4, &got, &err) == EMBER_ERR_FORMAT &&
          strstr(err.msg, "5 tokens, more than the 4"));
    unmake(&m);

    made bad; /* a token outside the vocabulary, with a right checksum */
    make(&bad, EMBER_KV_F32, 3, 3, 4);
    bad.tokens[1] = MODEL.n_vocab;
    ember_kv_state_write(&bad.s, bad.buf);
    CHECK(read_as(bad.buf, bad.size, &MODEL, &got, msg, sizeof msg) == EMBER_ERR_FORMAT &&
          strstr(msg, "token 1 is 1000"));
    unmake(&bad);
}

static void test_other_model(void)
{
    made m;
    make(&m, EMBER_KV_F16, 6, 6, 5);
    ember_kv_state got;
    char msg[600];
    ember_kv_model_id other[5] = {MODEL, MODEL, MODEL, MODEL, MODEL};
    other[0].fingerprint ^= 1;
    other[1].n_layers = 4;
    other[2].n_kv_heads = 4;
    other[3].head_dim = 128;
    other[4].n_vocab = 999;
    const char *says[5] = {"fingerprint", "layers", "KV heads", "head size", "vocabulary size"};
    for (int i = 0; i < 5; i++)
        CHECKF(read_as(m.buf, m.size, &other[i], &got, msg, sizeof msg) == EMBER_ERR_INVALID_ARG &&
                   strstr(msg, "another model") && strstr(msg, says[i]),
               "%s: %s", says[i], msg);
    unmake(&m);
}

static void test_rows(void)
{
    tu_rng rng = {11};
    float v[HD], back[HD];
    uint8_t row[HD * 4], again[HD * 4];
    for (int trial = 0; trial < 200; trial++) {
        float amax = 0;
        for (int i = 0; i < HD; i++) v[i] = (float)((double)(tu_next(&rng) % 20001) / 1000.0 - 10.0), amax = fmaxf(amax, fabsf(v[i]));
        if (trial == 0) memset(v, 0, sizeof v); /* a zero row: scale 0 */
        ember_kv_row_encode(EMBER_KV_F16, v, HD, row);
        ember_kv_row_decode(EMBER_KV_F16, row, HD, back);
        for (int i = 0; i < HD; i++) CHECK(fabsf(back[i] - v[i]) <= fabsf(v[i]) / 1024 + 1e-7f);
        ember_kv_row_encode(EMBER_KV_Q8_0, v, HD, row);
        ember_kv_row_decode(EMBER_KV_Q8_0, row, HD, back);
        uint32_t g = ember_kv_q8_group(HD);
        for (int k = 0; k < HD / (int)g; k++) {
            float gmax = 0;
            for (uint32_t e = 0; e < g; e++) gmax = fmaxf(gmax, fabsf(v[k * g + e]));
            for (uint32_t e = 0; e < g; e++)
                CHECK(fabsf(back[k * g + e] - v[k * g + e]) <= gmax / 127 * 0.5f * 1.01f + 1e-6f);
        }
        ember_kv_row_encode(EMBER_KV_Q8_0, back, HD, again); /* read back, encoded again: the same bytes */
        CHECK(memcmp(row, again, ember_kv_row_bytes(HD, EMBER_KV_Q8_0)) == 0);
    }
}

static uint64_t fingerprint_of(const char *path)
{
    ember_gguf *g = NULL;
    ember_err err;
    if (ember_gguf_open(path, &g, &err) != EMBER_OK) return 0;
    uint64_t h = ember_gguf_fingerprint(g);
    ember_gguf_close(g);
    return h;
}

static void test_fingerprint(void)
{
    char a[600], b[600], c[600];
    const char *shape = "--dim 32 --layers 1 --heads 2 --kv-heads 1 --ffn 32 --vocab 300 --ctx 32";
    char args[256];
    snprintf(a, sizeof a, "%s/fp_a.gguf", tu_tmp_dir());
    snprintf(b, sizeof b, "%s/fp_b.gguf", tu_tmp_dir());
    snprintf(c, sizeof c, "%s/fp_c.gguf", tu_tmp_dir());
    snprintf(args, sizeof args, "%s --seed 1", shape);
    CHECK(tu_make_model(a, args));
    snprintf(args, sizeof args, "%s --seed 2", shape);
    CHECK(tu_make_model(b, args));
    snprintf(args, sizeof args, "%s --seed 1 --rope-base 500000", shape);
    CHECK(tu_make_model(c, args));
    uint64_t fa = fingerprint_of(a), fb = fingerprint_of(b), fc = fingerprint_of(c);
    CHECK(fa && fa == fingerprint_of(a));
    CHECKF(fa != fb && fa != fc && fb != fc, "%016llx %016llx %016llx", (unsigned long long)fa,
           (unsigned long long)fb, (unsigned long long)fc);
    /* the hash itself: every bit of a word reaches the result */
    uint64_t w = 0, h0 = ember_hash64(EMBER_HASH_SEED, &w, 8);
    for (int bit = 0; bit < 64; bit++) {
        uint64_t x = 1ull << bit;
        CHECK(ember_hash64(EMBER_HASH_SEED, &x, 8) != h0);
    }
}

int main(void)
{
    test_round_trip();
    test_damage();
    test_other_model();
    test_rows();
    test_fingerprint();
    return tu_finish("test_kv_state");
}
