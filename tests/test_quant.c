/* test_quant.c — host numerics: half-float conversion (exact, round to nearest even),
 * Q8_0 quantization bit-exact with ggml (the shipped stories260K Q8_0 file is
 * reproduced from its F32 original), dequantization and the host mat-vec, and the
 * `ember quantize` command. */
#include "testutil.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/gguf.h"
#include "engine/model/floats.h"
#include "engine/model/quant.h"
#include "engine/model/quant_legacy.h"

/* ---- half floats ------------------------------------------------------------------ */

static double half_value(uint16_t h) { return (double)ember_f16_to_f32(h); }

/* An independent statement of correct rounding: the result is a nearest half to f, and
 * on a tie its mantissa is even; beyond the largest half (by at least half an ulp) the
 * result is infinite. */
static bool rounds_right(float f, uint16_t r)
{
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    double a = fabs((double)f);
    if (isnan(f))
        return (r & 0x7c00) == 0x7c00 && (r & 0x3ff) != 0;
    if (a >= 65520.0)
        return r == (sign | 0x7c00);
    if ((r & 0x8000) != sign || (r & 0x7c00) == 0x7c00)
        return a == 0 && r == sign;
    uint16_t h = r & 0x7fff;
    double d = fabs(a - half_value(h));
    if (h > 0 && fabs(a - half_value(h - 1)) < d)
        return false;
    if (h < 0x7bff && fabs(a - half_value(h + 1)) < d)
        return false;
    bool tie = (h > 0 && fabs(a - half_value(h - 1)) == d) ||
               (h < 0x7bff && fabs(a - half_value(h + 1)) == d);
    return !tie || (h & 1) == 0;
}

static float bits_to_float(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static void test_f16(void)
{
    /* every half survives f16 -> f32 -> f16; NaNs stay NaN */
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = ember_f16_to_f32((uint16_t)h);
        uint16_t back = ember_f32_to_f16(f);
        bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (nan ? !isnan(f) || (back & 0x7fff) <= 0x7c00 || (back & 0x8000) != (h & 0x8000)
                : back != h)
            bad++;
    }
    CHECKF(bad == 0, "%d halves do not round-trip", bad);

    /* values with known encodings */
    CHECK(ember_f32_to_f16(1.0f) == 0x3c00 && ember_f32_to_f16(-2.0f) == 0xc000);
    CHECK(ember_f32_to_f16(0.0f) == 0x0000 && ember_f32_to_f16(-0.0f) == 0x8000);
    CHECK(ember_f32_to_f16(65504.0f) == 0x7bff && ember_f32_to_f16(65519.0f) == 0x7bff);
    CHECK(ember_f32_to_f16(65520.0f) == 0x7c00 && ember_f32_to_f16(-1e10f) == 0xfc00);
    CHECK(ember_f32_to_f16(INFINITY) == 0x7c00 && ember_f32_to_f16(-INFINITY) == 0xfc00);
    CHECK((ember_f32_to_f16(NAN) & 0x7c00) == 0x7c00 && (ember_f32_to_f16(NAN) & 0x3ff) != 0);
    CHECK(ember_f32_to_f16(0x1p-14f) == 0x0400);                 /* smallest normal */
    CHECK(ember_f32_to_f16(0x1p-24f) == 0x0001);                 /* smallest subnormal */
    CHECK(ember_f32_to_f16(0x1p-25f) == 0x0000);                 /* tie -> even (0) */
    CHECK(ember_f32_to_f16(0x1.000002p-25f) == 0x0001);          /* just above the tie */
    CHECK(ember_f32_to_f16(0x3p-25f) == 0x0002);                 /* tie between 1 and 2 */
    CHECK(ember_f32_to_f16(0x1p-26f) == 0 && ember_f32_to_f16(0x1p-149f) == 0);
    CHECK(ember_f32_to_f16(0x1.ffep-15f) == 0x0400);             /* rounds up into normals */
    CHECK(ember_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);          /* tie -> even */
    CHECK(ember_f32_to_f16(1.0f + 0x3p-11f) == 0x3c02);          /* tie -> even (up) */
    CHECK(ember_f16_to_f32(0x0001) == 0x1p-24f && ember_f16_to_f32(0x8000) == 0.0f);
    CHECK(signbit(ember_f16_to_f32(0x8000)) && ember_f16_to_f32(0x7bff) == 65504.0f);
    CHECK(isinf(ember_f16_to_f32(0xfc00)) && ember_f16_to_f32(0xfc00) < 0);
    CHECK(ember_f16_to_f32(0x3555) == 0x1.554p-2f);

    /* 2^24 float bit patterns spread over all of them, incl. subnormals, inf, NaN */
    bad = 0;
    for (uint64_t b = 0; b < 0x100000000ull; b += 251) {
        float f = bits_to_float((uint32_t)b);
        uint16_t r = ember_f32_to_f16(f);
        if (!rounds_right(f, r) && bad++ < 5)
            fprintf(stderr, "f32 %a -> f16 %04x is not rounded right\n", (double)f, r);
#ifdef __FLT16_MAX__
        /* the compiler's own conversion is IEEE round-to-nearest-even too */
        _Float16 ref = (_Float16)f;
        uint16_t rb;
        memcpy(&rb, &ref, 2);
        if (!isnan(f) && rb != r && bad++ < 5)
            fprintf(stderr, "f32 %a -> f16 %04x, compiler says %04x\n", (double)f, r, rb);
#endif
    }
    CHECKF(bad == 0, "%d conversions wrong", bad);
}

/* ---- Q8_0 -------------------------------------------------------------------------- */

static uint16_t block_scale(const uint8_t *blk) { return (uint16_t)(blk[0] | blk[1] << 8); }

static void test_q8_0_blocks(void)
{
    float x[64];
    uint8_t q[2 * EMBER_Q8_0_BYTES];
    for (int i = 0; i < 32; i++)
        x[i] = (float)(i - 16) / 4.0f;  /* amax 4: d = 4/127 */
    for (int i = 32; i < 64; i++)
        x[i] = 0.0f;                    /* an all-zero block: d = 0, q = 0 */
    ember_quantize_row(EMBER_DTYPE_Q8_0, x, q, 64);
    CHECK(block_scale(q) == ember_f32_to_f16(4.0f / 127.0f));
    CHECK((int8_t)q[2] == -127 && (int8_t)q[2 + 16] == 0 && (int8_t)q[2 + 31] == 119);
    CHECK((int8_t)q[2 + 17] == (int8_t)roundf(0.25f * (127.0f / 4.0f)));
    CHECK(block_scale(q + 34) == 0);
    for (int j = 0; j < 32; j++)
        CHECK(q[34 + 2 + j] == 0);

    /* round trip within half a step; dequantize_span agrees with dequantize_row */
    tu_rng rng = { 42 };
    enum { N = 32 * 40 };
    static float src[N], back[N], part[N];
    static uint8_t qq[N / 32 * 34];
    tu_fill(&rng, src, N, -3.0f, 3.0f);
    src[5] = 1e-8f, src[100] = -50.0f; /* a tiny value, and one block with a large max */
    ember_quantize_row(EMBER_DTYPE_Q8_0, src, qq, N);
    ember_dequantize_row(EMBER_DTYPE_Q8_0, qq, back, N);
    /* q is rounded with the f32 scale but read back with the f16 one (as in ggml), so
     * the error bound is half a step plus 127 times the scale's rounding (2^-11 d) */
    for (int i = 0; i < N; i++) {
        float d = ember_f16_to_f32(block_scale(qq + (i / 32) * 34));
        CHECKF(fabsf(back[i] - src[i]) <= 0.57f * d, "elem %d: %g vs %g", i, back[i], src[i]);
    }
    const int spans[][2] = { { 0, 1 }, { 5, 50 }, { 31, 2 }, { 172, 172 }, { 1000, 280 } };
    for (size_t s = 0; s < sizeof spans / sizeof *spans; s++) {
        ember_dequantize_span(EMBER_DTYPE_Q8_0, qq, (uint64_t)spans[s][0], (size_t)spans[s][1], part);
        CHECK(memcmp(part, back + spans[s][0], (size_t)spans[s][1] * sizeof(float)) == 0);
    }
}

/* ---- dequantize and mat-vec for each type ------------------------------------------ */

static void test_matvec(void)
{
    enum { ROWS = 37, COLS = 96 };
    tu_rng rng = { 7 };
    static float w[ROWS * COLS], x[COLS], y[ROWS], want[ROWS], deq[ROWS * COLS];
    static uint16_t w16[ROWS * COLS];
    static uint8_t w8[ROWS * COLS / 32 * 34];
    tu_fill(&rng, w, ROWS * COLS, -1.0f, 1.0f);
    tu_fill(&rng, x, COLS, -2.0f, 2.0f);
    for (int i = 0; i < ROWS * COLS; i++)
        w16[i] = ember_f32_to_f16(w[i]);
    ember_quantize_row(EMBER_DTYPE_Q8_0, w, w8, ROWS * COLS);

    const struct { ember_dtype t; const void *data; } cases[] = {
        { EMBER_DTYPE_F32, w }, { EMBER_DTYPE_F16, w16 }, { EMBER_DTYPE_Q8_0, w8 },
    };
    for (size_t c = 0; c < 3; c++) {
        ember_dequantize_row(cases[c].t, cases[c].data, deq, ROWS * COLS);
        for (int r = 0; r < ROWS; r++) {
            double acc = 0;
            for (int k = 0; k < COLS; k++)
                acc += (double)deq[r * COLS + k] * x[k];
            want[r] = (float)acc;
        }
        ember_matvec_host(cases[c].t, cases[c].data, x, y, ROWS, COLS);
        CHECKF(tu_rel_err(y, want, ROWS) < 1e-6, "%s mat-vec", ember_dtype_name(cases[c].t));
        if (cases[c].t == EMBER_DTYPE_F16)
            for (int i = 0; i < ROWS * COLS; i++)
                CHECK(deq[i] == ember_f16_to_f32(w16[i]));
        if (cases[c].t == EMBER_DTYPE_F32)
            CHECK(memcmp(deq, w, sizeof w) == 0);
    }
}

/* ---- the shipped stories260K files -------------------------------------------------- */

static ember_gguf *open_or_fail(const char *path)
{
    ember_gguf *g = NULL;
    ember_err err = {{0}};
    if (ember_gguf_open(path, &g, &err) != EMBER_OK) {
        CHECKF(0, "%s", err.msg);
        return NULL;
    }
    return g;
}

/* Re-quantizing every F32 matrix reproduces the Q8_0 file byte for byte, including the
 * old flat blocks of ffn_down (rows of 172), quantized here as one flat row. */
static void test_stories_requantize(const char *shared)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/models/stories260K/stories260K-f32.v3.gguf", shared);
    ember_gguf *f = open_or_fail(path);
    snprintf(path, sizeof path, "%s/models/stories260K/tinyllamas-stories-260k-q8_0.gguf", shared);
    ember_gguf *q = open_or_fail(path);
    if (!f || !q) {
        ember_gguf_close(f), ember_gguf_close(q);
        return;
    }
    uint64_t compared = 0, mismatched = 0, matrices = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const ember_gguf_tensor *a = &f->tensors[i];
        const ember_gguf_tensor *b = ember_gguf_find_tensor(q, a->name);
        CHECKF(b != NULL, "%s missing from the q8_0 file", a->name);
        if (!b || a->n_dims != 2)
            continue;
        CHECK(a->type == EMBER_DTYPE_F32 && b->type == EMBER_DTYPE_Q8_0);
        uint64_t n = a->ne[0] * a->ne[1];
        uint8_t *mine = malloc(ember_dtype_size(EMBER_DTYPE_Q8_0, n));
        if (a->ne[0] % 32 == 0) /* the per-row rule ember quantize uses */
            for (uint64_t r = 0; r < a->ne[1]; r++)
                ember_quantize_row(EMBER_DTYPE_Q8_0, (const float *)a->data + r * a->ne[0],
                                        mine + r * (a->ne[0] / 32 * 34), (size_t)a->ne[0]);
        else
            ember_quantize_row(EMBER_DTYPE_Q8_0, a->data, mine, (size_t)n);
        uint64_t nb = ember_dtype_size(EMBER_DTYPE_Q8_0, n);
        CHECK(b->nbytes == nb);
        for (uint64_t k = 0; k < nb && k < b->nbytes; k++)
            mismatched += mine[k] != ((const uint8_t *)b->data)[k];
        compared += nb;
        matrices++;
        free(mine);
    }
    CHECKF(mismatched == 0, "%llu of %llu Q8_0 bytes differ", (unsigned long long)mismatched,
           (unsigned long long)compared);
    CHECK(matrices == 1 + 5 * 7 + 1 && compared == 310352);
    ember_gguf_close(f);
    ember_gguf_close(q);
}

/* ---- the `ember quantize` command --------------------------------------------------- */

/* Runs `ember ARGS`; true when it exits 0. Output is shown only for unexpected exits. */
static bool run_ember(const char *args, bool expect_ok)
{
    char cmd[3072], out[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", tu_ember_bin(), args);
    int rc = tu_run(cmd, out, sizeof out);
    if ((rc == 0) != expect_ok)
        printf("note: '%s' exited %d: %.300s\n", cmd, rc, out);
    return rc == 0;
}

static bool have_ember(void)
{
    char cmd[1200], out[256];
    snprintf(cmd, sizeof cmd, "'%s' --help >/dev/null 2>&1", tu_ember_bin());
    return tu_run(cmd, out, sizeof out) == 0;
}

/* ember quantize on stories260K: converted matrices equal the shipped Q8_0 bytes,
 * ffn_down (rows of 172, not whole blocks) becomes F16 as llama.cpp makes it, the norms
 * stay F32 and unchanged, metadata is copied. */
static void test_quantize_stories(const char *shared)
{
    char in[1024], out[1024], args[2400];
    snprintf(in, sizeof in, "%s/models/stories260K/stories260K-f32.v3.gguf", shared);
    snprintf(out, sizeof out, "%s/quant_stories.gguf", tu_tmp_dir());
    snprintf(args, sizeof args, "quantize '%s' '%s' q8_0", in, out);
    if (!run_ember(args, true)) {
        CHECK(0);
        return;
    }
    char ship[1024];
    snprintf(ship, sizeof ship, "%s/models/stories260K/tinyllamas-stories-260k-q8_0.gguf", shared);
    ember_gguf *f = open_or_fail(in), *o = open_or_fail(out), *s = open_or_fail(ship);
    if (f && o && s) {
        uint32_t ft = 0;
        ember_err err = {{0}};
        CHECK(ember_gguf_get_u32(o, "general.file_type", &ft, &err) == EMBER_OK && ft == 7);
        for (uint64_t i = 0; i < f->n_kv; i++)
            CHECKF(ember_gguf_find(o, f->kv[i].key) != NULL, "key %s lost", f->kv[i].key);
        const ember_gguf_kv *tok = ember_gguf_find(o, "tokenizer.ggml.tokens");
        CHECK(tok && tok->arr_n == 512 && tok->arr_str[300].len == ember_gguf_find(f,
              "tokenizer.ggml.tokens")->arr_str[300].len);
        CHECK(o->n_tensors == f->n_tensors);
        int converted = 0;
        for (uint64_t i = 0; i < f->n_tensors; i++) {
            const ember_gguf_tensor *a = &f->tensors[i];
            const ember_gguf_tensor *b = ember_gguf_find_tensor(o, a->name);
            const ember_gguf_tensor *c = ember_gguf_find_tensor(s, a->name);
            if (!b || !c) {
                CHECKF(0, "%s missing", a->name);
                continue;
            }
            CHECK(memcmp(a->ne, b->ne, sizeof a->ne) == 0 && a->n_dims == b->n_dims);
            if (a->n_dims == 2 && a->ne[0] % 32 == 0) {
                converted++;
                CHECKF(b->type == EMBER_DTYPE_Q8_0 && b->nbytes == c->nbytes &&
                       memcmp(b->data, c->data, b->nbytes) == 0, "%s differs from shipped Q8_0", a->name);
            } else if (a->n_dims == 2) { /* rows of 172: F16, as llama.cpp writes them */
                static uint8_t half[2 * 172 * 64];
                size_t n = (size_t)(a->ne[0] * a->ne[1]);
                CHECK(n * 2 <= sizeof half);
                if (n * 2 <= sizeof half) ember_quantize_row(EMBER_DTYPE_F16, a->data, half, n);
                CHECKF(b->type == EMBER_DTYPE_F16 && b->nbytes == 2 * n && memcmp(b->data, half, 2 * n) == 0,
                       "%s is not the F16 of its F32 values", a->name);
            } else {
                CHECKF(b->type == a->type && b->nbytes == a->nbytes &&
                       memcmp(b->data, a->data, a->nbytes) == 0, "%s not copied", a->name);
            }
        }
        CHECK(converted == 1 + 5 * 6 + 1);
    }
    ember_gguf_close(f), ember_gguf_close(o), ember_gguf_close(s);
    remove(out);
}

/* Quantizing a generated F32 model gives the tensors of the same model generated as
 * Q8_0 (make-test-model quantizes the same values with the same rule). */
static void test_quantize_generated(void)
{
    const char *tmp = tu_tmp_dir();
    char f32[512], q8[512], conv[512], args[2048];
    snprintf(f32, sizeof f32, "%s/quant_gen_f32.gguf", tmp);
    snprintf(q8, sizeof q8, "%s/quant_gen_q8.gguf", tmp);
    snprintf(conv, sizeof conv, "%s/quant_gen_conv.gguf", tmp);
    const char *shape = "--dim 64 --heads 2 --kv-heads 1 --ffn 96 --vocab 400 --seed 3";
    snprintf(args, sizeof args, "make-test-model '%s' %s --type f32", f32, shape);
    CHECK(run_ember(args, true));
    snprintf(args, sizeof args, "make-test-model '%s' %s --type q8_0", q8, shape);
    CHECK(run_ember(args, true));
    snprintf(args, sizeof args, "quantize '%s' '%s' q8_0", f32, conv);
    CHECK(run_ember(args, true));
    ember_gguf *a = open_or_fail(q8), *b = open_or_fail(conv);
    if (a && b) {
        CHECK(a->n_tensors == b->n_tensors);
        for (uint64_t i = 0; i < a->n_tensors; i++) {
            const ember_gguf_tensor *x = &a->tensors[i];
            const ember_gguf_tensor *y = ember_gguf_find_tensor(b, x->name);
            CHECKF(y && x->type == y->type && x->nbytes == y->nbytes &&
                   memcmp(x->data, y->data, x->nbytes) == 0, "%s differs", x->name);
        }
    }
    ember_gguf_close(a), ember_gguf_close(b);

    /* bad usage is refused */
    snprintf(args, sizeof args, "quantize '%s' '%s' q1_0", f32, conv);
    CHECK(!run_ember(args, false));
    remove(f32), remove(q8), remove(conv);
}

int main(void)
{
    test_f16();
    test_q8_0_blocks();
    test_matvec();
    bool cli = have_ember();
    if (cli)
        test_quantize_generated();
    else
        printf("note: %s not runnable; ember quantize not checked\n", tu_ember_bin());
    const char *shared = tu_shared_dir();
    if (!shared) return tu_finish_without_shared("test_quant", "stories260K Q8_0 checks not run");
    test_stories_requantize(shared);
    if (cli)
        test_quantize_stories(shared);
    return tu_finish("test_quant");
}
