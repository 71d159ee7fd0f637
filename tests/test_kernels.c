/* test_kernels.c — every compute shader against a plain CPU loop on random inputs, for
 * shapes that are not multiples of any tile or workgroup size, in every variant the
 * device has: subgroup and Vulkan 1.2 core baseline, each with texel-buffer and
 * storage-buffer reads. The CPU side computes in double from the same dequantized values
 * the GPU reads, so tolerances stay tight for every dtype.
 *
 * Batch invariance (docs/architecture.md): every linear output, attention output and normalized row
 * of a token is compared bit for bit (memcmp) between the token computed alone and the
 * same token inside batches of other sizes at other rows, and across the variants and
 * another linear tile shape (2 lane groups of 8 rows); so are the products with the fused
 * RMSNorm (ember_k_linear_norm), against rmsnorm-then-linear.
 *
 *   test_kernels          the checks
 *   test_kernels idot     the Q8_0 linear by integer dot products on int8 x (where the
 *                         device has them), against the CPU given the same int8 x,
 *                         batch invariant, subgroup and shared-memory combines alike
 *   test_kernels lanes    the linear with 16, 32 and 64 lanes a tile (GPUs' widths; the
 *                         device's own count is checked above): against the CPU, batch
 *                         invariant, and the subgroup combine bit for bit the shared-
 *                         memory one (each width sums in its own order)
 *   test_kernels stage    the linear with x staged in shared memory (every tile shape,
 *                         4 lane groups sharing it) gives the bits of the kernels that
 *                         read x themselves, at the device's lanes and at 32
 *   test_kernels matrix   the matrix family (fp16 w and x, fp32 sums) against the CPU
 *                         given the same fp16 values, and batch invariant
 *   test_kernels fp16     F16 and Q8_0 units in fp16 arithmetic against the CPU doing
 *                         the same, batch invariant, fused RMSNorm and staged x
 *   test_kernels bench    times the linear (median of 9 runs per case) instead
 *                         (EMBER_BENCH_SHAPES, EMBER_BENCH_TYPES, EMBER_BENCH_TM, and the
 *                         tile shapes EMBER_BENCH_GROUPS / EMBER_BENCH_ROWS: bench_all) */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "engine/model/floats.h"
#include "engine/model/quant.h"
#include "kernel_fixture.h"

#define TOL 1e-4
/* fp16 arithmetic against the CPU doing the same: only the fp32 sums' rounding differs
 * (the exact reference fails even at 1e-4, so this tells the two apart) */
#define TOL_FP16 1e-5

typedef kt_ctx ctx;

/* ---- buffers and submission --------------------------------------------------------- */

/* The same, for a linear input: with the texel view the kernels read it through. */
static ember_vk_span xbuf(ctx *t, const void *data, size_t bytes)
{
    ember_vk_span s = kt_buf(t, data, bytes);
    if (ember_kernels_input_view(t->k, t->arena, &s, &t->err) != EMBER_OK) kt_die(t, "input view");
    return s;
}

/* ---- random data -------------------------------------------------------------------- */

/* A random normal half of magnitude in [2^(lo-15), 2^(hi-14)). */
static uint16_t rand_half(tu_rng *r, uint32_t lo, uint32_t hi)
{
    uint32_t e = lo + (uint32_t)(tu_next(r) % (hi - lo + 1));
    return (uint16_t)((tu_next(r) & 1) << 15 | e << 10 | (tu_next(r) & 1023));
}

/* A random weight in GGUF layout (gguf) and its dequantized values (deq), rows x cols.
 * No element is zero. */
typedef struct weight {
    ember_dtype type;
    uint32_t rows, cols;
    uint8_t *gguf;
    float *deq;
} weight;

static size_t row_bytes(ember_dtype type, uint32_t cols) { return (size_t)ember_dtype_size(type, cols); }

static weight make_weight(tu_rng *r, ember_dtype type, uint32_t rows, uint32_t cols)
{
    weight w = {type, rows, cols, malloc(row_bytes(type, cols) * rows), malloc(sizeof(float) * rows * cols)};
    size_t n = (size_t)rows * cols;
    if (type == EMBER_DTYPE_F32) {
        for (size_t i = 0; i < n; i++) {
            float v = tu_uniform(r, 0.05f, 1.0f);
            w.deq[i] = tu_next(r) & 1 ? v : -v;
        }
        memcpy(w.gguf, w.deq, n * 4);
    } else if (type == EMBER_DTYPE_F16) {
        uint16_t *h = (uint16_t *)w.gguf;
        for (size_t i = 0; i < n; i++) {
            h[i] = rand_half(r, 11, 15);
            w.deq[i] = kt_half_to_float(h[i]);
        }
    } else if (type != EMBER_DTYPE_Q8_0) {
        /* the block types: random values encoded as llama.cpp encodes them, and decoded */
        float *x = kt_rand_floats(r, n, -1, 1);
        for (uint32_t row = 0; row < rows; row++) {
            ember_quantize_row(type, x + (size_t)row * cols, w.gguf + row_bytes(type, cols) * row, cols);
            ember_dequantize_row(type, w.gguf + row_bytes(type, cols) * row, w.deq + (size_t)row * cols, cols);
        }
        free(x);
    } else {
        for (size_t b = 0; b < n / 32; b++) {
            uint8_t *blk = w.gguf + b * 34;
            uint16_t d = rand_half(r, 5, 9);
            memcpy(blk, &d, 2);
            for (int j = 0; j < 32; j++) {
                int q = (int)(tu_next(r) % 255) - 127;
                if (q == 0) q = 1;
                blk[2 + j] = (uint8_t)(int8_t)q;
                w.deq[b * 32 + j] = (float)q * kt_half_to_float(d);
            }
        }
    }
    return w;
}

static void free_weight(weight *w)
{
    free(w->gguf);
    free(w->deq);
}

/* Uploads w stacked from n_src pieces (row counts split as given) into a GPU weight. */
static bool upload(ctx *t, const weight *w, uint32_t n_src, uint64_t max_part, ember_gpu_weight *g)
{
    const void *src[4];
    uint32_t rows[4], r0 = 0;
    for (uint32_t i = 0; i < n_src; i++) {
        rows[i] = i + 1 < n_src ? w->rows / n_src : w->rows - r0;
        src[i] = w->gguf + row_bytes(w->type, w->cols) * r0;
        r0 += rows[i];
    }
    ember_status s = ember_gpu_weight_upload(t->vk, t->arena, (ember_dtype[4]){w->type, w->type, w->type, w->type},
                                             w->cols, src, rows, n_src, max_part, g,
                                             &t->err);
    /* the block types' pipelines are made for the weights that need them */
    ember_kernels_set want = {{0}};
    if (s == EMBER_OK) ember_kernels_want_linear(t->k, g, false, &want);
    if (s == EMBER_OK && ember_k_linear_can_norm(t->k, g)) ember_kernels_want_linear(t->k, g, true, &want);
    if (s == EMBER_OK) s = ember_kernels_make(t->k, &want, &t->err);
    CHECKF(s == EMBER_OK, "upload %ux%u: %s", w->rows, w->cols, t->err.msg);
    return s == EMBER_OK;
}

/* ---- linear ------------------------------------------------------------------------- */

static double silu(double g) { return g / (1 + exp(-g)); }

static float to_half(float v) { return ember_f16_to_f32(ember_f32_to_f16(v)); }

/* The matrix family's units (EMBER_MM_*), as test names. */
static const char *MM_UNIT_NAMES[EMBER_MM_UNITS] = {"fma", "nv", "khr"};

static float from_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

/* How the reference computes a row's dot product: exactly (in doubles), on w rounded to
 * fp16 (the matrix family stages it so), or as linear.comp's FP16_DOT unit does. */
typedef enum { REF_EXACT, REF_HALF_W, REF_FP16_DOT } ref_arith;

/* linear.comp's FP16_DOT units of a row (F16: 8 columns, Q8_0: a block of 32): x scaled by
 * the power of two of half_x and rounded to fp16; each group of 4 columns summed in fp16
 * (float arithmetic rounded to fp16 after each operation gives fp16's own results: a
 * float holds more than twice fp16's bits), the groups in floats, times the scale (and
 * Q8_0's d). */
static double fp16_dot_ref(const weight *w, uint32_t row, const float *x)
{
    uint32_t unit = w->type == EMBER_DTYPE_Q8_0 ? 32 : 8;
    double acc = 0;
    for (uint32_t u = 0; u < w->cols; u += unit) {
        float amax = 0;
        for (uint32_t i = 0; i < unit; i++) amax = fmaxf(amax, fabsf(x[u + i]));
        uint32_t eb;
        memcpy(&eb, &amax, sizeof eb);
        eb = (eb >> 23) > 252 ? 252 : eb >> 23;
        float inv = from_bits((253 - eb) << 23), scale = from_bits((eb + 1) << 23), d = 1;
        const int8_t *q = NULL;
        if (w->type == EMBER_DTYPE_Q8_0) {
            const uint8_t *blk = w->gguf + row_bytes(w->type, w->cols) * row + (u / 32) * 34;
            d = kt_half_to_float((uint16_t)(blk[0] | blk[1] << 8));
            q = (const int8_t *)(blk + 2);
        }
        float s = 0;
        for (uint32_t g = 0; g < unit; g += 4) {
            float r = 0;
            for (uint32_t i = 0; i < 4; i++) {
                float wv = q ? (float)q[g + i] : w->deq[(size_t)row * w->cols + u + g + i];
                float p = to_half(wv * to_half(x[u + g + i] * inv));
                r = i == 0 ? p : to_half(r + p);
            }
            s += r;
        }
        acc += (double)((d * scale) * s);
    }
    return acc;
}

static void linear_ref(const weight *w, const float *x, const float *y0, uint32_t n_tok, ember_out_mode mode,
                       ref_arith arith, double *want)
{
    uint32_t h = w->rows / 2, ldy = mode == EMBER_OUT_SWIGLU ? h : w->rows;
    for (uint32_t t = 0; t < n_tok; t++) {
        for (uint32_t o = 0; o < ldy; o++) {
            double d[2] = {0, 0};
            for (int k = 0; k < (mode == EMBER_OUT_SWIGLU ? 2 : 1); k++) {
                const float *row = w->deq + (size_t)(o + k * h) * w->cols;
                if (arith == REF_FP16_DOT) {
                    d[k] = fp16_dot_ref(w, o + k * h, x + (size_t)t * w->cols);
                    continue;
                }
                for (uint32_t c = 0; c < w->cols; c++)
                    d[k] += (double)(arith == REF_HALF_W ? to_half(row[c]) : row[c]) * x[(size_t)t * w->cols + c];
            }
            double v = mode == EMBER_OUT_SWIGLU ? silu(d[0]) * d[1] : d[0];
            if (mode == EMBER_OUT_ADD) v += y0[(size_t)t * ldy + o];
            want[(size_t)t * ldy + o] = v;
        }
    }
}

static const char *dtype_name(ember_dtype t) { return ember_dtype_name(t); }

/* The block types the shaders read as ggml lays them out (shaders/types). */
static const ember_dtype BLOCK_TYPES[] = {EMBER_DTYPE_Q4_0, EMBER_DTYPE_Q4_1, EMBER_DTYPE_Q5_0, EMBER_DTYPE_Q5_1,
                                          EMBER_DTYPE_Q2_K, EMBER_DTYPE_Q3_K, EMBER_DTYPE_Q4_K, EMBER_DTYPE_Q5_K,
                                          EMBER_DTYPE_Q6_K, EMBER_DTYPE_IQ4_NL, EMBER_DTYPE_IQ4_XS, EMBER_DTYPE_BF16,
                                          EMBER_DTYPE_MXFP4};
#define N_BLOCK_TYPES (sizeof BLOCK_TYPES / sizeof BLOCK_TYPES[0])

/* How much of the block types a variant runs. Their pipelines are made on demand and are
 * costly to compile on lavapipe (seconds each), so the first variant (subgroup and texel
 * reads where the device has them) takes them fully, the baseline+storage variant (Vulkan
 * 1.2 core) one decode case of a type of each layout family, the other two none: the unit
 * of every type is the same code in every variant, only the loads and the combine differ,
 * which the F32/F16/Q8_0 cases cover. A repeat at another subgroup size changes only the
 * combine: its first variant takes the smoke set. */
typedef enum { BLOCKS_NONE, BLOCKS_SMOKE, BLOCKS_FULL } blocks_level;

static bool lanes_run(const ctx *t) { return strncmp(t->variant, "lanes", 5) == 0; }

static blocks_level blocks_here(const ctx *t)
{
    if (lanes_run(t)) return t->variant_index == 0 ? BLOCKS_SMOKE : BLOCKS_NONE;
    if (t->variant_index == 0) return tu_subgroup_repeat() ? BLOCKS_SMOKE : BLOCKS_FULL;
    return strcmp(t->variant, "baseline+storage") == 0 ? BLOCKS_SMOKE : BLOCKS_NONE;
}

/* ---- x as the integer-dot kernels see it --------------------------------------------- */

static bool idot_run(const ctx *t, ember_dtype type) { return t->k && ember_kernels_int_dot(t->k, type); }

/* Whether a linear of cols columns runs in the matrix family, on fp16 w and x. */
static bool matrix_run(const ctx *t, uint32_t cols) { return t->k && ember_kernels_matrix(t->k, cols); }

/* How the kernels compute a linear of this type and cols (linear_ref). */
static ref_arith arith_of(const ctx *t, ember_dtype type, uint32_t cols)
{
    if (t->k && ember_kernels_fp16_dot(t->k, type) && !matrix_run(t, cols)) return REF_FP16_DOT;
    return matrix_run(t, cols) ? REF_HALF_W : REF_EXACT;
}

/* linear.glsl's quant_x8 on n floats of x in place (blocks of 32, which never straddle a
 * row): each value becomes q * 2^e, q = clamp(roundEven(x / 2^e), -127, 127), 2^e the
 * power of two putting the block's largest magnitude in [64, 128). Exact in floats, so
 * the kernels' x and this one are the same numbers. */
static void quant_x8_ref(float *x, size_t n)
{
    for (size_t b = 0; b + 32 <= n; b += 32) {
        float amax = 0;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[b + i]));
        uint32_t eb;
        memcpy(&eb, &amax, sizeof eb);
        eb >>= 23;
        if (eb == 255) continue;
        float inv = eb < 7 ? 0 : from_bits((260 - eb) << 23), scale = eb < 7 ? 0 : from_bits((eb - 6) << 23);
        for (int i = 0; i < 32; i++) {
            float q = nearbyintf(x[b + i] * inv);
            x[b + i] = fminf(fmaxf(q, -127), 127) * scale;
        }
    }
}

/* The x the kernels compute with for weights of this type and cols: a copy, quantized
 * where they take integer dot products, rounded to fp16 in the matrix family. */
static float *x_as_kernels(const ctx *t, ember_dtype type, uint32_t cols, const float *x, size_t n)
{
    float *c = malloc(sizeof(float) * (n ? n : 1));
    memcpy(c, x, sizeof(float) * n);
    if (idot_run(t, type)) quant_x8_ref(c, n);
    for (size_t i = 0; matrix_run(t, cols) && i < n; i++) c[i] = to_half(c[i]);
    return c;
}

/* One ember_k_linear against the CPU for every mode. */
static void test_linear_case(ctx *t, tu_rng *r, ember_dtype type, uint32_t rows, uint32_t cols, uint32_t n_tok,
                             uint64_t max_part, uint32_t n_src)
{
    double t0 = kt_now_s();
    weight w = make_weight(r, type, rows, cols);
    float *x = kt_rand_floats(r, (size_t)n_tok * cols, -1, 1);
    float *xk = x_as_kernels(t, type, cols, x, (size_t)n_tok * cols);
    ref_arith arith = arith_of(t, type, cols);
    for (int mode = 0; mode < 3; mode++) {
        if (mode == EMBER_OUT_SWIGLU && rows % 2) continue;
        uint32_t ldy = mode == EMBER_OUT_SWIGLU ? rows / 2 : rows;
        size_t ny = (size_t)n_tok * ldy;
        float *y0 = kt_rand_floats(r, ny, -1, 1);
        double *want = malloc(sizeof(double) * ny);
        linear_ref(&w, xk, y0, n_tok, (ember_out_mode)mode, arith, want);

        kt_case_begin(t);
        ember_gpu_weight g;
        if (upload(t, &w, n_src, max_part, &g)) {
            ember_vk_span xs = xbuf(t, x, sizeof(float) * n_tok * cols), ys = kt_buf(t, y0, sizeof(float) * ny);
            ember_k_linear(t->cmd, t->k, &g, xs, ys, n_tok, (ember_out_mode)mode);
            char what[160];
            snprintf(what, sizeof what, "[%s] linear %s %ux%u n_tok %u mode %d parts %u", t->variant,
                     dtype_name(type), rows, cols, n_tok, mode, g.n_parts);
            if (kt_submit(t, what)) kt_check_close(what, ys.host, want, ny, arith == REF_FP16_DOT ? TOL_FP16 : TOL);
        }
        free(y0);
        free(want);
    }
    free(x);
    free(xk);
    free_weight(&w);
    if (getenv("EMBER_TEST_VERBOSE"))
        printf("linear %s %ux%u n_tok %u: %.3f s\n", dtype_name(type), rows, cols, n_tok, kt_now_s() - t0);
}

/* The block types: rows of 1 and 3 blocks of 256 (every lane of a group takes a unit of
 * each), a decode and a prefill tile, and parts of a few rows. */
static void test_block_types(ctx *t, tu_rng *r)
{
    blocks_level bl = blocks_here(t);
    for (size_t b = 0; bl != BLOCKS_NONE && b < N_BLOCK_TYPES; b++) {
        static const uint32_t bshapes[][2] = {{7, 256}, {33, 768}};
        static const uint32_t btoks[] = {1, 17};
        /* the smoke set: one type of each layout family */
        bool family = BLOCK_TYPES[b] == EMBER_DTYPE_Q4_0 || BLOCK_TYPES[b] == EMBER_DTYPE_Q4_K ||
                      BLOCK_TYPES[b] == EMBER_DTYPE_Q6_K || BLOCK_TYPES[b] == EMBER_DTYPE_IQ4_XS;
        for (size_t s = 0; s < 2; s++)
            for (size_t n = 0; n < 2; n++)
                if (bl == BLOCKS_FULL || (family && s == 0 && n == 0))
                    test_linear_case(t, r, BLOCK_TYPES[b], bshapes[s][0], bshapes[s][1], btoks[n], 0, 1);
        if (bl == BLOCKS_FULL)
            test_linear_case(t, r, BLOCK_TYPES[b], 74, 256, 1, row_bytes(BLOCK_TYPES[b], 256) * 9 + 8, 2);
    }
}

/* The full set on the first variant; a smoke set on the others, whose bits the
 * invariance test compares with the first variant's anyway, and on every variant of a
 * repeat at another subgroup size. */
static void test_linear(ctx *t, bool quick)
{
    static const ember_dtype types[] = {EMBER_DTYPE_F32, EMBER_DTYPE_F16, EMBER_DTYPE_Q8_0};
    static const uint32_t shapes[][2] = {{1, 32}, {7, 64}, {33, 96}, {66, 2048}};
    static const uint32_t toks[] = {1, 2, 3, 4, 5, 17, 64, 130};
    tu_rng r = {1};
    for (int d = 0; d < 3; d++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (size_t n = 0; n < sizeof toks / sizeof toks[0]; n++) {
                if (quick && (shapes[s][1] == 2048 || (toks[n] != 1 && toks[n] != 5 && toks[n] != 17))) continue;
                test_linear_case(t, &r, types[d], shapes[s][0], shapes[s][1], toks[n], 0, 1);
            }
        /* 75000 rows bound in 3+ parts of odd row counts, stacked from 3 sources. */
        uint64_t part = types[d] == EMBER_DTYPE_F32 ? (7u << 20) : (3u << 20);
        uint32_t big_toks[] = {1, 17};
        for (int n = 0; n < (quick ? 0 : 2); n++) test_linear_case(t, &r, types[d], 75000, 64, big_toks[n], part, 3);
        /* Parts of a few rows: SWIGLU gate/up runs that straddle parts. */
        for (uint32_t n = 1; n <= 6; n += 5)
            test_linear_case(t, &r, types[d], 74, 64, n, row_bytes(types[d], 64) * 9 + 8, 2);
    }
    test_block_types(t, &r);
    /* F32/F16 rows that are not a multiple of the wide load: the generic shader. */
    for (int d = 0; d < 2; d++)
        for (uint32_t n = 1; n <= 9; n += 4) {
            test_linear_case(t, &r, types[d], 10, 30, n, 0, 1);
            if (quick) continue;
            test_linear_case(t, &r, types[d], 9, 36, n, 0, 1);
            test_linear_case(t, &r, types[d], 12, 6, n, 0, 1);
        }
}

/* ---- linear: batch invariance -------------------------------------------------------- */

#define INV_TOK 130

typedef struct inv_case {
    ember_dtype type;
    uint32_t rows, cols;
    uint64_t max_part;   /* 0: one part */
} inv_case;

/* Runs tokens x_row0 .. x_row0+n-1 of xs as one batch, writing rows y_row0.. of ys. */
static void run_rows(ctx *t, const ember_gpu_weight *g, ember_vk_span xs, ember_vk_span ys, uint32_t row0, uint32_t n,
                     ember_out_mode mode)
{
    ember_k_linear_rows(t->cmd, t->k, g, xs, row0, ys, row0, n, mode);
    ember_vk_cmd_barrier(t->cmd);
}

/* Row j of got must equal row want_row[j] of want, bit for bit. */
static void check_rows(ctx *t, const char *what, const float *got, const float *want, const uint32_t *want_row,
                       uint32_t n, uint32_t ldy)
{
    for (uint32_t j = 0; j < n; j++)
        if (memcmp(got + (size_t)j * ldy, want + (size_t)want_row[j] * ldy, sizeof(float) * ldy) != 0) {
            uint32_t c = 0;
            while (c + 1 < ldy && got[(size_t)j * ldy + c] == want[(size_t)want_row[j] * ldy + c]) c++;
            CHECKF(0, "[%s] %s: row %u (token %u) differs at %u: %.9g vs %.9g", t->variant, what, j, want_row[j], c,
                   got[(size_t)j * ldy + c], want[(size_t)want_row[j] * ldy + c]);
            return;
        }
}

/* Case ci's outputs of all INV_TOK tokens (ref, ny floats in rows of ldy) must be the
 * bits the first variant gave, which are kept when this is the first variant. */
static void check_across_variants(ctx *t, int ci, const char *what, const float *ref, size_t ny, uint32_t ldy)
{
    if (t->variant_index == 0) {
        free(t->alone[ci]);
        t->alone[ci] = malloc(sizeof(float) * ny);
        memcpy(t->alone[ci], ref, sizeof(float) * ny);
    } else if (t->alone[ci]) {
        uint32_t ident[INV_TOK];
        for (uint32_t i = 0; i < INV_TOK; i++) ident[i] = i;
        check_rows(t, what, ref, t->alone[ci], ident, INV_TOK, ldy);
    }
}

/* Every token of a 130-token x run alone (n_tok 1, by row offset and from a copy of its
 * row), then inside batches of 2..130 tokens at several offsets, and inside a batch in a
 * shuffled order: all outputs must be bit-identical, and identical to variant 0's. */
static void test_invariance_case(ctx *t, int ci, const inv_case *c, ember_out_mode mode)
{
    static const uint32_t sizes[] = {2, 3, 4, 5, 16, 17, 64, 130};
    tu_rng r = {100 + (uint64_t)ci};
    weight w = make_weight(&r, c->type, c->rows, c->cols);
    uint32_t ldy = mode == EMBER_OUT_SWIGLU ? c->rows / 2 : c->rows;
    size_t nx = (size_t)INV_TOK * c->cols, ny = (size_t)INV_TOK * ldy;
    float *x = kt_rand_floats(&r, nx, -1, 1), *y0 = kt_rand_floats(&r, ny, -1, 1);
    float *xp = malloc(sizeof(float) * nx), *y0p = malloc(sizeof(float) * ny);
    uint32_t perm[INV_TOK], ident[INV_TOK];
    for (uint32_t i = 0; i < INV_TOK; i++) perm[i] = ident[i] = i;
    for (uint32_t i = INV_TOK - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(tu_next(&r) % (i + 1)), tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    for (uint32_t j = 0; j < INV_TOK; j++) {
        memcpy(xp + (size_t)j * c->cols, x + (size_t)perm[j] * c->cols, sizeof(float) * c->cols);
        memcpy(y0p + (size_t)j * ldy, y0 + (size_t)perm[j] * ldy, sizeof(float) * ldy);
    }
    char what[160];
    snprintf(what, sizeof what, "invariance %s %ux%u mode %d", dtype_name(c->type), c->rows, c->cols, mode);

    kt_case_begin(t);
    ember_gpu_weight g;
    if (!upload(t, &w, 2, c->max_part, &g)) goto done;
    ember_vk_span xs = xbuf(t, x, sizeof(float) * nx), xps = xbuf(t, xp, sizeof(float) * nx);
    ember_vk_span alone = kt_buf(t, y0, sizeof(float) * ny), perm_y = kt_buf(t, y0p, sizeof(float) * ny);
    for (uint32_t i = 0; i < INV_TOK; i++) run_rows(t, &g, xs, alone, i, 1, mode);
    /* Tokens copied into an x of their own. */
    static const uint32_t copied[3] = {0, 77, INV_TOK - 1};
    ember_vk_span one_y[3];
    for (int i = 0; i < 3; i++) {
        ember_vk_span one_x = xbuf(t, x + (size_t)copied[i] * c->cols, sizeof(float) * c->cols);
        one_y[i] = kt_buf(t, y0 + (size_t)copied[i] * ldy, sizeof(float) * ldy);
        ember_k_linear(t->cmd, t->k, &g, one_x, one_y[i], 1, mode);
    }
    ember_vk_span batch_y[sizeof sizes / sizeof sizes[0]][3];
    for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++) {
        uint32_t n = sizes[b], offs[3] = {0, (INV_TOK - n) / 2, INV_TOK - n};
        for (int o = 0; o < 3; o++) {
            batch_y[b][o] = kt_buf(t, y0, sizeof(float) * ny);
            run_rows(t, &g, xs, batch_y[b][o], offs[o], n, mode);
        }
    }
    ember_k_linear(t->cmd, t->k, &g, xps, perm_y, INV_TOK, mode);
    if (!kt_submit(t, what)) goto done;

    const float *ref = alone.host;
    for (int i = 0; i < 3; i++) check_rows(t, what, one_y[i].host, ref, &copied[i], 1, ldy);
    for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++) {
        uint32_t n = sizes[b], offs[3] = {0, (INV_TOK - n) / 2, INV_TOK - n};
        for (int o = 0; o < 3; o++)
            check_rows(t, what, (const float *)batch_y[b][o].host + (size_t)offs[o] * ldy, ref, ident + offs[o], n, ldy);
    }
    check_rows(t, what, perm_y.host, ref, perm, INV_TOK, ldy);
    /* The batched results are also right (not merely consistent). */
    double *want = malloc(sizeof(double) * ny);
    float *xk = x_as_kernels(t, c->type, c->cols, x, nx);
    linear_ref(&w, xk, y0, INV_TOK, mode, arith_of(t, c->type, c->cols), want);
    free(xk);
    kt_check_close(what, ref, want, ny, TOL);
    free(want);
    check_across_variants(t, ci, what, ref, ny, ldy);
done:
    free(x);
    free(y0);
    free(xp);
    free(y0p);
    free_weight(&w);
}

static void test_invariance(ctx *t)
{
    /* Unit counts per lane that differ between lanes (cols not a multiple of 8 units),
     * odd row counts, weights in several parts (SWIGLU runs straddling parts), and rows
     * that take the scalar GENERIC path. */
    static const inv_case cases[] = {
        {EMBER_DTYPE_F32, 70, 1000, 0},  {EMBER_DTYPE_F16, 70, 1000, 0},
        {EMBER_DTYPE_Q8_0, 70, 1056, 0}, {EMBER_DTYPE_F32, 38, 256, 4u * 256 * 7},
        {EMBER_DTYPE_F16, 38, 256, 2u * 256 * 7}, {EMBER_DTYPE_Q8_0, 38, 256, 256 * 7},
        {EMBER_DTYPE_F32, 22, 30, 0},    {EMBER_DTYPE_F16, 22, 36, 0},
        /* block types (first variant only, see blocks_here): units per lane that differ
         * (cols of 9 units), parts; runs and codes in place (Q4_K: 10 runs of 4 units,
         * two for lanes 0 and 1) */
        {EMBER_DTYPE_Q4_0, 22, 288, 0},  {EMBER_DTYPE_Q6_K, 38, 512, 210u * 2 * 7},
        {EMBER_DTYPE_Q4_K, 22, 1280, 0},
    };
    int ci = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool block = ember_dtype_block(cases[i].type) > 1 && cases[i].type != EMBER_DTYPE_Q8_0;
        /* lanes runs: Q4_K's runs, strided by the lanes */
        bool runs = lanes_run(t) && cases[i].type == EMBER_DTYPE_Q4_K;
        for (int mode = 0; mode < 3; mode++, ci++)
            if (!block || runs || blocks_here(t) == BLOCKS_FULL)
                test_invariance_case(t, ci, &cases[i], (ember_out_mode)mode);
    }
}

/* ---- linear with the fused RMSNorm ----------------------------------------------------- */

#define NORM_EPS 1e-5f

/* x's rows RMS-normalised with weights g, in doubles: what the fused product multiplies. */
static float *norm_ref(const float *x, const float *g, uint32_t n_tok, uint32_t cols)
{
    float *xn = malloc(sizeof(float) * n_tok * cols);
    for (uint32_t t = 0; t < n_tok; t++) {
        const float *row = x + (size_t)t * cols;
        double ss = 0;
        for (uint32_t c = 0; c < cols; c++) ss += (double)row[c] * row[c];
        double inv = 1 / sqrt(ss / cols + NORM_EPS);
        for (uint32_t c = 0; c < cols; c++) xn[(size_t)t * cols + c] = (float)(row[c] * inv * g[c]);
    }
    return xn;
}

/* ember_k_linear_norm on 130 tokens of rows of x scaled by 0.01 .. 100 (the norm must
 * undo it): close to rmsnorm-then-linear in doubles; every token's bits the same alone
 * (n_tok 1, from a copy of its row), in batches of 2 .. 130 at several offsets (copies of
 * the ranges) and across variants (subgroup butterfly or shared-memory combine, texel or
 * storage reads). */
static void test_norm_case(ctx *t, int ci, ember_dtype type, uint32_t rows, uint32_t cols, ember_out_mode mode)
{
    static const uint32_t sizes[] = {2, 3, 5, 17, 64};
    tu_rng r = {300 + (uint64_t)ci};
    weight w = make_weight(&r, type, rows, cols);
    uint32_t ldy = mode == EMBER_OUT_SWIGLU ? rows / 2 : rows;
    size_t nx = (size_t)INV_TOK * cols, ny = (size_t)INV_TOK * ldy;
    float *x = kt_rand_floats(&r, nx, -1, 1), *g = kt_rand_floats(&r, cols, 0.5f, 1.5f);
    for (uint32_t i = 0; i < INV_TOK; i++)
        for (uint32_t c = 0; c < cols; c++) x[(size_t)i * cols + c] *= powf(10.0f, (float)(i % 5) - 2.0f);
    float *y0 = kt_rand_floats(&r, ny, -1, 1);
    char what[160];
    snprintf(what, sizeof what, "fused norm %s %ux%u mode %d", dtype_name(type), rows, cols, mode);

    kt_case_begin(t);
    ember_gpu_weight gw;
    if (!upload(t, &w, 1, 0, &gw)) goto done;
    CHECKF(ember_k_linear_can_norm(t->k, &gw), "[%s] %s: not fusable", t->variant, what);
    ember_linear_norm n = {kt_buf(t, g, sizeof(float) * cols), NORM_EPS};
    ember_vk_span all = kt_buf(t, y0, sizeof(float) * ny);
    ember_k_linear_norm(t->cmd, t->k, &gw, xbuf(t, x, sizeof(float) * nx), &n, all, INV_TOK, mode);
    static const uint32_t alone[] = {0, 1, 77, INV_TOK - 1};
    ember_vk_span one[4];
    for (int i = 0; i < 4; i++) {
        one[i] = kt_buf(t, y0 + (size_t)alone[i] * ldy, sizeof(float) * ldy);
        ember_k_linear_norm(t->cmd, t->k, &gw, xbuf(t, x + (size_t)alone[i] * cols, sizeof(float) * cols), &n, one[i],
                            1, mode);
    }
    ember_vk_span batch[sizeof sizes / sizeof sizes[0]][2];
    for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++)
        for (int o = 0; o < 2; o++) {
            uint32_t off = o ? INV_TOK - sizes[b] : (INV_TOK - sizes[b]) / 2;
            batch[b][o] = kt_buf(t, y0 + (size_t)off * ldy, sizeof(float) * sizes[b] * ldy);
            ember_k_linear_norm(t->cmd, t->k, &gw, xbuf(t, x + (size_t)off * cols, sizeof(float) * sizes[b] * cols),
                                &n, batch[b][o], sizes[b], mode);
        }
    if (!kt_submit(t, what)) goto done;

    uint32_t ident[INV_TOK];
    for (uint32_t i = 0; i < INV_TOK; i++) ident[i] = i;
    const float *ref = all.host;
    for (int i = 0; i < 4; i++) check_rows(t, what, one[i].host, ref, &alone[i], 1, ldy);
    for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++)
        for (int o = 0; o < 2; o++) {
            uint32_t off = o ? INV_TOK - sizes[b] : (INV_TOK - sizes[b]) / 2;
            check_rows(t, what, batch[b][o].host, ref, ident + off, sizes[b], ldy);
        }
    float *xn = norm_ref(x, g, INV_TOK, cols);
    if (idot_run(t, type)) quant_x8_ref(xn, nx);
    double *want = malloc(sizeof(double) * ny);
    linear_ref(&w, xn, y0, INV_TOK, mode, arith_of(t, type, cols) == REF_FP16_DOT ? REF_FP16_DOT : REF_EXACT, want);
    kt_check_close(what, ref, want, ny, TOL);
    free(want);
    free(xn);
    check_across_variants(t, ci, what, ref, ny, ldy);
done:
    free(x);
    free(g);
    free(y0);
    free_weight(&w);
}

static void test_linear_norm(ctx *t)
{
    static const struct { ember_dtype type; uint32_t rows, cols; } cases[] = {
        {EMBER_DTYPE_F32, 70, 1000}, {EMBER_DTYPE_F16, 38, 1048}, {EMBER_DTYPE_Q8_0, 70, 1056},
        {EMBER_DTYPE_Q4_K, 22, 768}};
    int ci = 40; /* t->alone slots after test_invariance's */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int mode = 0; mode < 3; mode += 2, ci++)
            if (cases[i].type != EMBER_DTYPE_Q4_K || blocks_here(t) == BLOCKS_FULL)
                test_norm_case(t, ci, cases[i].type, cases[i].rows, cases[i].cols, (ember_out_mode)mode);
}

/* ---- embed, rmsnorm, argmax --------------------------------------------------------- */

static void test_embed(ctx *t)
{
    static const ember_dtype first[] = {EMBER_DTYPE_F32, EMBER_DTYPE_F16, EMBER_DTYPE_Q8_0};
    ember_dtype types[3 + N_BLOCK_TYPES];
    memcpy(types, first, sizeof first);
    memcpy(types + 3, BLOCK_TYPES, sizeof BLOCK_TYPES);
    tu_rng r = {2};
    for (size_t d = 0; d < 3 + N_BLOCK_TYPES; d++) {
        uint32_t rows = 1000, cols = d == 2 ? 96 : d > 2 ? 512 : 72, n_tok = 37;
        if (d > 2 && blocks_here(t) != BLOCKS_FULL) break; /* one embed shader for all: the first variant */
        weight w = make_weight(&r, types[d], rows, cols);
        uint32_t tok[37];
        for (uint32_t i = 0; i < n_tok; i++) tok[i] = (uint32_t)(tu_next(&r) % rows);
        tok[0] = 0;
        tok[1] = rows - 1;
        double *want = malloc(sizeof(double) * n_tok * cols);
        for (uint32_t i = 0; i < n_tok; i++)
            for (uint32_t c = 0; c < cols; c++) want[i * cols + c] = w.deq[(size_t)tok[i] * cols + c];
        kt_case_begin(t);
        ember_gpu_weight g;
        if (upload(t, &w, 1, row_bytes(types[d], cols) * 101, &g)) {
            ember_vk_span ts = kt_buf(t, tok, sizeof tok), xs = kt_buf(t, NULL, sizeof(float) * n_tok * cols);
            ember_k_embed(t->cmd, t->k, &g, ts, xs, n_tok);
            char what[96];
            snprintf(what, sizeof what, "[%s] embed %s (%u parts)", t->variant, dtype_name(types[d]), g.n_parts);
            if (kt_submit(t, what)) kt_check_close(what, xs.host, want, (size_t)n_tok * cols, 1e-6);
        }
        free(want);
        free_weight(&w);
    }
}

static void test_rmsnorm(ctx *t)
{
    static const uint32_t dims[] = {32, 30, 64, 2048};
    static const uint32_t ns[] = {1, 3, 17};
    tu_rng r = {3};
    for (size_t di = 0; di < 4; di++)
        for (size_t ni = 0; ni < 3; ni++)
            for (int indirect = 0; indirect < 2; indirect++) {
                uint32_t dim = dims[di], n = ns[ni], n_src = n + 5;
                float *x = kt_rand_floats(&r, (size_t)n_src * dim, -2, 2), *w = kt_rand_floats(&r, dim, -1.5f, 1.5f);
                uint32_t rows[17];
                for (uint32_t i = 0; i < n; i++) rows[i] = indirect ? (uint32_t)(tu_next(&r) % n_src) : i;
                double *want = malloc(sizeof(double) * n * dim);
                for (uint32_t i = 0; i < n; i++) {
                    const float *xr = x + (size_t)rows[i] * dim;
                    double ss = 0;
                    for (uint32_t c = 0; c < dim; c++) ss += (double)xr[c] * xr[c];
                    double inv = 1 / sqrt(ss / dim + 1e-5);
                    for (uint32_t c = 0; c < dim; c++) want[i * dim + c] = xr[c] * inv * w[c];
                }
                kt_case_begin(t);
                ember_vk_span xs = kt_buf(t, x, sizeof(float) * n_src * dim), ws = kt_buf(t, w, sizeof(float) * dim);
                ember_vk_span ys = kt_buf(t, NULL, sizeof(float) * n * dim), rs = kt_buf(t, rows, sizeof rows);
                ember_k_rmsnorm(t->cmd, t->k, xs, ws, ys, indirect ? &rs : NULL, n, dim, 1e-5f);
                char what[96];
                snprintf(what, sizeof what, "[%s] rmsnorm n %u dim %u rows %d", t->variant, n, dim, indirect);
                if (kt_submit(t, what)) kt_check_close(what, ys.host, want, (size_t)n * dim, TOL);
                free(x);
                free(w);
                free(want);
            }
}

static void test_argmax(ctx *t)
{
    static const uint32_t cols[] = {1, 7, 32000, 75000};
    tu_rng r = {4};
    for (size_t ci = 0; ci < 4; ci++) {
        uint32_t n_rows = 3, n_cols = cols[ci];
        float *l = kt_rand_floats(&r, (size_t)n_rows * n_cols, -10, 10);
        uint32_t want[3];
        for (uint32_t i = 0; i < n_rows; i++) {
            float *row = l + (size_t)i * n_cols;
            if (n_cols > 2 && i == 1) {  /* a tie: the lower index must win */
                uint32_t a = (uint32_t)(tu_next(&r) % (n_cols - 1)) + 1, b = (uint32_t)(tu_next(&r) % a);
                row[a] = row[b] = 11.0f;
            }
            if (i == 2) for (uint32_t c = 0; c < n_cols; c++) row[c] = -fabsf(row[c]) - 1;
            want[i] = 0;
            for (uint32_t c = 1; c < n_cols; c++)
                if (row[c] > row[want[i]]) want[i] = c;
        }
        kt_case_begin(t);
        ember_vk_span ls = kt_buf(t, l, sizeof(float) * n_rows * n_cols), os = kt_buf(t, NULL, sizeof want);
        ember_k_argmax(t->cmd, t->k, ls, os, n_rows, n_cols);
        if (kt_submit(t, "argmax"))
            for (uint32_t i = 0; i < n_rows; i++)
                CHECKF(((uint32_t *)os.host)[i] == want[i], "[%s] argmax cols %u row %u: got %u want %u",
                       t->variant, n_cols, i, ((uint32_t *)os.host)[i], want[i]);
        free(l);
    }
}

/* ---- RoPE + paged KV store, attention ---------------------------------------------- */

static size_t cache_index(const kt_batch *b, uint32_t seq, uint32_t pos, uint32_t kvh, uint32_t d)
{
    return kt_cache_row(b, seq, pos, kvh) * b->s.head_dim + d;
}

static void test_rope_store(ctx *t, ember_attn_shape s, uint32_t n_seqs, const uint32_t *last,
                            const uint32_t *chunk)
{
    tu_rng r = {5 + s.head_dim};
    kt_batch b = kt_make_batch(&r, s, n_seqs, last, chunk);
    uint32_t qkv_w = (s.n_heads + 2 * s.n_kv_heads) * s.head_dim;
    size_t cache_n = (size_t)b.n_blocks * s.n_kv_heads * s.block_size * s.head_dim;
    float *qkv = kt_rand_floats(&r, (size_t)b.n_tok * qkv_w, -1, 1);
    double *want_qkv = malloc(sizeof(double) * b.n_tok * qkv_w);
    double *want_k = malloc(sizeof(double) * cache_n), *want_v = malloc(sizeof(double) * cache_n);
    float *cache0 = kt_rand_floats(&r, cache_n, -1, 1);
    for (size_t i = 0; i < cache_n; i++) want_k[i] = want_v[i] = cache0[i];
    for (uint32_t i = 0; i < b.n_tok; i++) {
        const float *in = qkv + (size_t)i * qkv_w;
        double *out = want_qkv + (size_t)i * qkv_w;
        for (uint32_t e = 0; e < qkv_w; e++) out[e] = in[e];
        for (uint32_t h = 0; h < s.n_heads + s.n_kv_heads; h++)
            for (uint32_t p = 0; 2 * p < s.rope_dim; p++) {
                double th = b.pos[i] * pow(s.rope_base, -2.0 * p / s.rope_dim);
                double a = in[h * s.head_dim + 2 * p], c = in[h * s.head_dim + 2 * p + 1];
                out[h * s.head_dim + 2 * p] = a * cos(th) - c * sin(th);
                out[h * s.head_dim + 2 * p + 1] = a * sin(th) + c * cos(th);
            }
        for (uint32_t kh = 0; kh < s.n_kv_heads; kh++)
            for (uint32_t d = 0; d < s.head_dim; d++) {
                size_t ci = cache_index(&b, b.seq[i], b.pos[i], kh, d);
                want_k[ci] = out[(s.n_heads + kh) * s.head_dim + d];
                want_v[ci] = out[(s.n_heads + s.n_kv_heads + kh) * s.head_dim + d];
            }
    }
    kt_case_begin(t);
    ember_vk_span qs = kt_buf(t, qkv, sizeof(float) * b.n_tok * qkv_w);
    ember_vk_span ps = kt_buf(t, b.pos, 4 * b.n_tok), ss = kt_buf(t, b.seq, 4 * b.n_tok);
    ember_vk_span bt = kt_buf(t, b.table, 4 * n_seqs * s.max_blocks_per_seq);
    ember_vk_span ks = kt_buf(t, cache0, sizeof(float) * cache_n), vs = kt_buf(t, cache0, sizeof(float) * cache_n);
    ember_k_rope_store(t->cmd, t->k, &s, NULL, qs, ps, ss, bt, ks, vs, b.n_tok);
    char what[128];
    snprintf(what, sizeof what, "[%s] rope_store hd %u rope %u tokens %u", t->variant, s.head_dim, s.rope_dim,
             b.n_tok);
    if (kt_submit(t, what)) {
        kt_check_close(what, qs.host, want_qkv, (size_t)b.n_tok * qkv_w, TOL);
        kt_check_close(what, ks.host, want_k, cache_n, TOL);
        kt_check_close(what, vs.host, want_v, cache_n, TOL);
    }
    free(qkv);
    free(want_qkv);
    free(want_k);
    free(want_v);
    free(cache0);
    kt_free_batch(&b);
}

/* The caches as doubles, for kt_attention_ref. */
static double *to_double(const float *v, size_t n)
{
    double *d = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++) d[i] = v[i];
    return d;
}

static void test_attention(ctx *t, ember_attn_shape s, uint32_t n_seqs, const uint32_t *last, const uint32_t *chunk,
                           float qscale)
{
    tu_rng r = {6 + s.head_dim + n_seqs};
    kt_batch b = kt_make_batch(&r, s, n_seqs, last, chunk);
    uint32_t qkv_w = (s.n_heads + 2 * s.n_kv_heads) * s.head_dim;
    size_t cache_n = (size_t)b.n_blocks * s.n_kv_heads * s.block_size * s.head_dim, out_n = (size_t)b.n_tok * s.n_heads * s.head_dim;
    float *qkv = kt_rand_floats(&r, (size_t)b.n_tok * qkv_w, -qscale, qscale);
    float *kc = kt_rand_floats(&r, cache_n, -1, 1), *vc = kt_rand_floats(&r, cache_n, -1, 1);
    double *want = malloc(sizeof(double) * out_n);
    double *kd = to_double(kc, cache_n), *vd = to_double(vc, cache_n);
    kt_attention_ref(&b, qkv, kd, vd, want);
    free(kd);
    free(vd);
    kt_case_begin(t);
    ember_vk_span qs = kt_buf(t, qkv, sizeof(float) * b.n_tok * qkv_w);
    ember_vk_span ps = kt_buf(t, b.pos, 4 * b.n_tok), ss = kt_buf(t, b.seq, 4 * b.n_tok);
    ember_vk_span bt = kt_buf(t, b.table, 4 * n_seqs * s.max_blocks_per_seq);
    ember_vk_span ks = kt_buf(t, kc, sizeof(float) * cache_n), vs = kt_buf(t, vc, sizeof(float) * cache_n);
    ember_vk_span os = kt_buf(t, NULL, sizeof(float) * out_n);
    ember_k_attention(t->cmd, t->k, &s, qs, ps, ss, bt, ks, vs, os, b.n_tok);
    char what[128];
    snprintf(what, sizeof what, "[%s] attention hd %u heads %u/%u bs %u tokens %u", t->variant, s.head_dim,
             s.n_heads, s.n_kv_heads, s.block_size, b.n_tok);
    if (kt_submit(t, what)) kt_check_close(what, os.host, want, out_n, TOL);
    free(qkv);
    free(kc);
    free(vc);
    free(want);
    kt_free_batch(&b);
}

/* A token's attention output depends on its sequence and position only: tokens of a
 * ragged batch run alone (and one sequence's tokens run without the others) give the
 * same bits. */
static void test_attention_invariance(ctx *t, ember_attn_shape s)
{
    static const uint32_t last[] = {611, 299, 4}, chunk[] = {1, 200, 3};
    tu_rng r = {77 + s.head_dim};
    kt_batch b = kt_make_batch(&r, s, 3, last, chunk);
    uint32_t qkv_w = (s.n_heads + 2 * s.n_kv_heads) * s.head_dim, out_w = s.n_heads * s.head_dim;
    size_t cache_n = (size_t)b.n_blocks * s.n_kv_heads * s.block_size * s.head_dim;
    float *qkv = kt_rand_floats(&r, (size_t)b.n_tok * qkv_w, -1, 1);
    float *kc = kt_rand_floats(&r, cache_n, -1, 1), *vc = kt_rand_floats(&r, cache_n, -1, 1);
    kt_case_begin(t);
    ember_vk_span ks = kt_buf(t, kc, sizeof(float) * cache_n), vs = kt_buf(t, vc, sizeof(float) * cache_n);
    ember_vk_span bt = kt_buf(t, b.table, 4 * 3 * s.max_blocks_per_seq);
    ember_vk_span qs = kt_buf(t, qkv, sizeof(float) * b.n_tok * qkv_w), ps = kt_buf(t, b.pos, 4 * b.n_tok);
    ember_vk_span ss = kt_buf(t, b.seq, 4 * b.n_tok), os = kt_buf(t, NULL, sizeof(float) * b.n_tok * out_w);
    ember_k_attention(t->cmd, t->k, &s, qs, ps, ss, bt, ks, vs, os, b.n_tok);
    /* Alone: the first, a middle and the last token; then sequence 2's tokens together. */
    uint32_t pick[4] = {0, b.n_tok / 2, b.n_tok - 1, 0}, n_pick = 3, sub[8], n_sub = 0;
    ember_vk_span one_o[3];
    for (uint32_t i = 0; i < n_pick; i++) {
        uint32_t k = pick[i];
        ember_vk_span q1 = kt_buf(t, qkv + (size_t)k * qkv_w, sizeof(float) * qkv_w);
        ember_vk_span p1 = kt_buf(t, &b.pos[k], 4), s1 = kt_buf(t, &b.seq[k], 4);
        one_o[i] = kt_buf(t, NULL, sizeof(float) * out_w);
        ember_k_attention(t->cmd, t->k, &s, q1, p1, s1, bt, ks, vs, one_o[i], 1);
    }
    float *sq = malloc(sizeof(float) * 8 * qkv_w);
    uint32_t spos[8], sseq[8];
    for (uint32_t i = 0; i < b.n_tok && n_sub < 8; i++)
        if (b.seq[i] == 2) {
            memcpy(sq + (size_t)n_sub * qkv_w, qkv + (size_t)i * qkv_w, sizeof(float) * qkv_w);
            spos[n_sub] = b.pos[i];
            sseq[n_sub] = 2;
            sub[n_sub++] = i;
        }
    ember_vk_span sqs = kt_buf(t, sq, sizeof(float) * n_sub * qkv_w), sps = kt_buf(t, spos, 4 * n_sub);
    ember_vk_span sss = kt_buf(t, sseq, 4 * n_sub), sos = kt_buf(t, NULL, sizeof(float) * n_sub * out_w);
    ember_k_attention(t->cmd, t->k, &s, sqs, sps, sss, bt, ks, vs, sos, n_sub);
    char what[96];
    snprintf(what, sizeof what, "attention invariance hd %u", s.head_dim);
    if (kt_submit(t, what)) {
        for (uint32_t i = 0; i < n_pick; i++) check_rows(t, what, one_o[i].host, os.host, &pick[i], 1, out_w);
        check_rows(t, what, sos.host, os.host, sub, n_sub, out_w);
    }
    free(sq);
    free(qkv);
    free(kc);
    free(vc);
    kt_free_batch(&b);
}

/* rmsnorm of a row alone (gathered by index, or copied) equals the row in a batch. */
static void test_rmsnorm_invariance(ctx *t)
{
    uint32_t dim = 2048, n = 9, pick = 5;
    tu_rng r = {31};
    float *x = kt_rand_floats(&r, (size_t)n * dim, -2, 2), *w = kt_rand_floats(&r, dim, -1.5f, 1.5f);
    kt_case_begin(t);
    ember_vk_span xs = kt_buf(t, x, sizeof(float) * n * dim), ws = kt_buf(t, w, sizeof(float) * dim);
    ember_vk_span x1 = kt_buf(t, x + (size_t)pick * dim, sizeof(float) * dim);
    ember_vk_span ys = kt_buf(t, NULL, sizeof(float) * n * dim), y1 = kt_buf(t, NULL, sizeof(float) * dim);
    ember_vk_span y2 = kt_buf(t, NULL, sizeof(float) * dim), rs = kt_buf(t, &pick, 4);
    ember_k_rmsnorm(t->cmd, t->k, xs, ws, ys, NULL, n, dim, 1e-5f);
    ember_k_rmsnorm(t->cmd, t->k, x1, ws, y1, NULL, 1, dim, 1e-5f);
    ember_k_rmsnorm(t->cmd, t->k, xs, ws, y2, &rs, 1, dim, 1e-5f);
    if (kt_submit(t, "rmsnorm invariance")) {
        check_rows(t, "rmsnorm invariance", y1.host, ys.host, &pick, 1, dim);
        check_rows(t, "rmsnorm invariance (gathered)", y2.host, ys.host, &pick, 1, dim);
    }
    free(x);
    free(w);
}

static void test_attn_all(ctx *t, bool quick)
{
    /* GQA 8/2, blocks of 16: a long decode, a 200-token prefill chunk over a cached
     * prefix, and a short sequence, in one ragged batch. */
    ember_attn_shape s = {8, 2, 64, 64, 10000.0f, 16, 40};
    uint32_t last3[] = {611, 299, 4}, chunk3[] = {1, 200, 3};
    uint32_t last2[] = {130, 47}, chunk2[] = {2, 9};
    CHECKF(ember_kernels_check_attn(t->k, &s, &t->err) == EMBER_OK, "check_attn: %s", t->err.msg);
    test_attention(t, s, 3, last3, chunk3, 1.0f);
    s.head_dim = s.rope_dim = 128;
    s.n_heads = 4;
    s.n_kv_heads = 1;
    test_attention(t, s, 2, last2, chunk2, 1.0f);
    s.head_dim = s.rope_dim = 8;
    s.block_size = 5; /* not a power of two */
    test_attention(t, s, 2, last2, chunk2, 3.0f);
    s = (ember_attn_shape){6, 6, 16, 16, 10000.0f, 7, 400}; /* plain MHA, long context */
    uint32_t last1[] = {quick ? 700u : 2500u}, chunk1[] = {3};
    test_attention(t, s, 1, last1, chunk1, 2.0f);

    s = (ember_attn_shape){8, 2, 64, 64, 10000.0f, 16, 40};
    test_rope_store(t, s, 3, last3, chunk3);
    s.rope_dim = 32; /* partial rotary */
    s.rope_base = 500000.0f;
    test_rope_store(t, s, 2, last2, chunk2);
    s = (ember_attn_shape){4, 1, 128, 128, 10000.0f, 5, 30};
    test_rope_store(t, s, 2, last2, chunk2);
    ember_attn_shape bad = {8, 3, 64, 64, 10000.0f, 16, 4};
    CHECK(ember_kernels_check_attn(t->k, &bad, &t->err) != EMBER_OK);
    bad = (ember_attn_shape){8, 2, 1024, 64, 10000.0f, 16, 4};
    CHECK(ember_kernels_check_attn(t->k, &bad, &t->err) != EMBER_OK);
    test_attention_invariance(t, (ember_attn_shape){8, 2, 64, 64, 10000.0f, 16, 40});
    test_attention_invariance(t, (ember_attn_shape){4, 1, 128, 128, 10000.0f, 5, 130});
    test_rmsnorm_invariance(t);
}

/* ---- timing ------------------------------------------------------------------------- */

/* Median of 9 mean wall times of one linear of n_tok tokens, reps dispatches per submit,
 * after one warm-up (the machine is shared: the median of several runs in one process). */
static double time_linear(ctx *t, const ember_gpu_weight *g, ember_vk_span x, ember_vk_span y, uint32_t n_tok,
                          int reps)
{
    double s[9];
    for (int round = -1; round < 9; round++) {
        if (ember_vk_cmd_begin(t->cmd, &t->err) != EMBER_OK) kt_die(t, "cmd_begin");
        for (int i = 0; i < reps; i++) {
            ember_k_linear(t->cmd, t->k, g, x, y, n_tok, EMBER_OUT_STORE);
            ember_vk_cmd_barrier(t->cmd);
        }
        double t0 = kt_now_s();
        if (ember_vk_cmd_submit(t->cmd, &t->err) != EMBER_OK) kt_die(t, "submit");
        if (round >= 0) s[round] = (kt_now_s() - t0) / reps;
    }
    qsort(s, 9, sizeof s[0], kt_cmp_double);
    return s[4];
}

/* Whether `name` is one of the comma-separated names in list (any case). */
static bool name_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p; p += strcspn(p, ","), p += *p == ',')
        if (strncasecmp(p, name, n) == 0 && (p[n] == ',' || p[n] == 0)) return true;
    return false;
}

/* The mat-vec on 2048x2048 and 8192x2048, decode batches and prefill on 2048x2048, and
 * the mat-mat at 1024^3, per dtype. GB/s counts the weight bytes in GGUF layout. */
static void bench(ctx *t)
{
    static const uint32_t shapes[][3] = {{2048, 2048, 1},  {8192, 2048, 1},  {2048, 2048, 4},   {2048, 2048, 16},
                                         {2048, 2048, 32}, {2048, 2048, 64}, {2048, 2048, 128}, {2048, 2048, 256},
                                         {1024, 1024, 1024}};
    /* EMBER_BENCH_SHAPES="ROWSxCOLSxTOK,..." and EMBER_BENCH_TYPES="f32,q8_0" narrow the
     * cases (a bench aid, not a library setting); the block types run only when named. */
    uint32_t custom[32][3];
    size_t n_shapes = sizeof shapes / sizeof shapes[0];
    const uint32_t(*list)[3] = shapes;
    const char *env = getenv("EMBER_BENCH_SHAPES"), *types_env = getenv("EMBER_BENCH_TYPES");
    if (env) {
        n_shapes = 0;
        for (const char *p = env; *p && n_shapes < 32;) {
            unsigned a, b, c;
            int used = 0;
            if (sscanf(p, "%ux%ux%u%n", &a, &b, &c, &used) != 3) break;
            custom[n_shapes][0] = a, custom[n_shapes][1] = b, custom[n_shapes][2] = c, n_shapes++;
            p += used;
            if (*p == ',') p++;
        }
        list = (const uint32_t(*)[3])custom;
    }
    tu_rng r = {9};
    ember_dtype types[3 + N_BLOCK_TYPES] = {EMBER_DTYPE_F32, EMBER_DTYPE_F16, EMBER_DTYPE_Q8_0};
    memcpy(types + 3, BLOCK_TYPES, sizeof BLOCK_TYPES);
    for (size_t d = 0; d < 3 + N_BLOCK_TYPES; d++)
        for (size_t i = 0; i < n_shapes; i++) {
            if (types_env ? !name_listed(types_env, dtype_name(types[d])) : d >= 3) continue;
            uint32_t rows = list[i][0], cols = list[i][1], n_tok = list[i][2];
            weight w = make_weight(&r, types[d], rows, cols);
            float *x = kt_rand_floats(&r, (size_t)cols * n_tok, -1, 1);
            kt_case_begin(t);
            ember_vk_cmd_submit(t->cmd, &t->err);
            ember_gpu_weight g;
            if (!upload(t, &w, 1, 0, &g)) exit(1);
            ember_vk_span xs = xbuf(t, x, sizeof(float) * cols * n_tok);
            ember_vk_span ys = kt_buf(t, NULL, sizeof(float) * rows * n_tok);
            double bytes = (double)row_bytes(types[d], cols) * rows, flop = 2.0 * rows * cols * n_tok;
            double s = time_linear(t, &g, xs, ys, n_tok, flop > 4e9 ? 1 : flop > 5e8 ? 2 : 4);
            printf("[%s] %-5s %5ux%-5u n_tok %4u: %9.3f ms %7.2f GB/s %7.2f GFLOP/s\n", t->variant,
                   dtype_name(types[d]), rows, cols, n_tok, s * 1e3, bytes / s * 1e-9, flop / s * 1e-9);
            fflush(stdout);
            free(x);
            free_weight(&w);
        }
}

/* ---- main --------------------------------------------------------------------------- */

/* lin_subgroup: whether this variant's linear combines its lanes in a subgroup (a repeat
 * at another subgroup size checks the linear only then: tu_subgroup_repeat). */
static void run_all(ctx *t, bool quick, bool lin_subgroup)
{
    bool linear = lin_subgroup || !tu_subgroup_repeat();
    double t0 = kt_now_s();
    if (linear) test_linear(t, quick);
    double t1 = kt_now_s();
    if (linear) {
        test_invariance(t);
        test_linear_norm(t);
    }
    double t2 = kt_now_s();
    test_embed(t);
    test_rmsnorm(t);
    test_argmax(t);
    double t3 = kt_now_s();
    test_attn_all(t, quick);
    printf("[%s] linear %.1f s, invariance %.1f s, rows %.1f s, attention %.1f s\n", t->variant, t1 - t0, t2 - t1,
           t3 - t2, kt_now_s() - t3);
}

/* Lists of numbers from the environment, "1,2,4" (a bench aid): up to cap of them, else
 * the one value dflt. */
static size_t env_list(const char *name, uint32_t dflt, uint32_t *out, size_t cap)
{
    const char *p = getenv(name);
    size_t n = 0;
    for (char *end; p && *p && n < cap; p = *end ? end + 1 : end) {
        unsigned long v = strtoul(p, &end, 10);
        if (end == p) break;
        out[n++] = (uint32_t)v;
    }
    if (n == 0) out[n++] = dflt;
    return n;
}

/* bench: the default kernels at every linear tile shape EMBER_BENCH_LANES (lanes a tile)
 * x EMBER_BENCH_GROUPS (lane groups per workgroup) x EMBER_BENCH_ROWS (rows per tile)
 * names, default the device's own; with EMBER_BENCH_ALL=1 the other variants too.
 * EMBER_BENCH_TM=N: N tokens per tile; EMBER_BENCH_IDOT=1: Q8_0 by integer dot products;
 * EMBER_BENCH_FP16=1: F16 and Q8_0 units in fp16 arithmetic;
 * EMBER_BENCH_STAGE=0,1,2: x staged in shared memory by default, always, never;
 * EMBER_BENCH_MATRIX=1|fma|nv|khr: the matrix family (cooperative matrices where the
 * device has them; by FMA; through NV's or KHR's). */
static void bench_matrix(ember_kernels_opts *ko)
{
    const char *m = getenv("EMBER_BENCH_MATRIX");
    if (!m || strcmp(m, "0") == 0 || !*m) return;
    ko->matrix = EMBER_MATRIX_ON;
    ko->coop = strcmp(m, "fma") == 0 ? EMBER_COOP_OFF : strcmp(m, "nv") == 0 ? EMBER_COOP_NV
               : strcmp(m, "khr") == 0 ? EMBER_COOP_KHR : EMBER_COOP_AUTO;
}

static void bench_all(ctx *t, const kt_variant *variants)
{
    uint32_t groups[8], rows[2], lanes[4];
    size_t ng = env_list("EMBER_BENCH_GROUPS", 0, groups, 8), nr = env_list("EMBER_BENCH_ROWS", 0, rows, 2);
    uint32_t stage[3];
    size_t nl = env_list("EMBER_BENCH_LANES", 0, lanes, 4), ns = env_list("EMBER_BENCH_STAGE", 0, stage, 3);
    for (int v = 0; v < 4; v++) {
        if (v != 0 && !getenv("EMBER_BENCH_ALL")) continue;
        for (size_t g = 0; g < ng * nl * ns; g++)
            for (size_t r = 0; r < nr; r++) {
                ember_kernels_opts ko = {.no_subgroup = variants[v].no_subgroup, .no_texel = variants[v].no_texel,
                                         .linear_groups = groups[g % ng], .linear_rows = rows[r],
                                         .linear_lanes = lanes[g / ng % nl], .linear_stage = (int)stage[g / (ng * nl)]};
                if (getenv("EMBER_BENCH_TM")) ko.linear_tm = (uint32_t)atoi(getenv("EMBER_BENCH_TM"));
                if (getenv("EMBER_BENCH_IDOT") && atoi(getenv("EMBER_BENCH_IDOT"))) ko.int_dot = EMBER_INT_DOT_ON;
                if (getenv("EMBER_BENCH_FP16") && atoi(getenv("EMBER_BENCH_FP16"))) ko.fp16_dot = EMBER_KERNEL_ON;
                bench_matrix(&ko);
                if (ember_kernels_create_opts(t->vk, &ko, &t->k, &t->err) != EMBER_OK) kt_die(t, "ember_kernels_create");
                ember_kernel_choice c;
                ember_kernels_describe(ember_vk_get_caps(t->vk), &ko, &c);
                char name[96];
                snprintf(name, sizeof name, "%s l%u g%u r%u%s%s%s%s", variants[v].name, c.lin_lanes, c.lin_groups,
                         c.lin_rows_decode, c.lin_int_dot ? " idot" : c.lin_fp16_dot ? " fp16" : "", c.lin_staged ? " st" : "",
                         c.lin_matrix ? " mm-" : "", c.lin_matrix ? MM_UNIT_NAMES[c.lin_matrix_units] : "");
                t->variant = name;
                bench(t);
                ember_kernels_destroy(t->k);
                t->k = NULL;
            }
    }
}

/* Rows long enough that a lane of 8, 16, 32 and 64 takes several Q8_0 scale texels
 * (q8_scales.glsl: 130 blocks a row), against the CPU: a decode, a mid and a prefill
 * tile. */
static void test_long_rows(ctx *t)
{
    static const ember_dtype types[] = {EMBER_DTYPE_F32, EMBER_DTYPE_F16, EMBER_DTYPE_Q8_0};
    static const uint32_t toks[] = {1, 5, 17};
    tu_rng r = {5};
    for (int d = 0; d < 3; d++)
        for (int n = 0; n < 3; n++) test_linear_case(t, &r, types[d], 19, 4160, toks[n], 0, 1);
}

/* test_kernels lanes: per width, the default kinds against the CPU (long rows, the block
 * types' smoke set; the fused RMSNorm's odd shapes in test_linear_norm), then the
 * invariance checks, whose bits the shared-memory combine must give again where the
 * first run combined in subgroups. */
static void run_lanes(ctx *t)
{
    static const uint32_t widths[] = {16, 32, 64};
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        bool subgroup_seen = false;
        for (int v = 0; v < 2; v++) {
            /* on demand: the pipelines the cases' weights use (upload makes them) */
            ember_kernels_opts ko = {.no_subgroup = v == 1, .norm_fusion = EMBER_NORM_FUSION_ON, .on_demand = true,
                                     .linear_lanes = widths[w]};
            ember_kernel_choice c;
            ember_kernels_describe(ember_vk_get_caps(t->vk), &ko, &c);
            /* a repeat: widths wider than the subgroup ran in shared memory at the default size */
            if (v == 0 && !c.lin_subgroup && tu_subgroup_repeat()) break;
            if (ember_kernels_create_opts(t->vk, &ko, &t->k, &t->err) != EMBER_OK) kt_die(t, "ember_kernels_create");
            CHECKF(c.lin_lanes == widths[w], "lanes %u chosen, %u forced", c.lin_lanes, widths[w]);
            char name[64];
            snprintf(name, sizeof name, "lanes %u, %s", widths[w], c.lin_subgroup ? "subgroup" : "shared memory");
            t->variant = name;
            t->variant_index = v;
            if (v == 0) {
                subgroup_seen = c.lin_subgroup;
                test_long_rows(t);
                tu_rng r = {6};
                test_block_types(t, &r);
            }
            if (v == 0 || subgroup_seen) {
                test_invariance(t);
                test_linear_norm(t);
                printf("[%s] checked\n", name);
            }
            ember_kernels_destroy(t->k);
            t->k = NULL;
        }
    }
}

/* test_kernels idot: Q8_0 by integer dot products, at the device's lanes and at 32, each
 * with the subgroup combine where the device has it and the shared-memory one; a block
 * type of each integer code family at the device's lanes, Q4_K's batch invariance at
 * both. The
 * invariance slots of the F32/F16 cases stay unused. */
static void run_idot(ctx *t)
{
    if (!ember_vk_get_caps(t->vk)->int_dot) {
        printf("no shaderIntegerDotProduct: integer dot products not checked\n");
        return;
    }
    static const inv_case inv[] = {{EMBER_DTYPE_Q8_0, 70, 1056, 0}, {EMBER_DTYPE_Q8_0, 38, 256, 256 * 7},
                                   {EMBER_DTYPE_Q4_K, 22, 1280, 0}};
    static const uint32_t widths[] = {0, 32};
    for (int w = 0; w < 2; w++)
        for (int v = 0; v < 2; v++) {
            ember_kernels_opts ko = {.no_subgroup = v == 1, .norm_fusion = EMBER_NORM_FUSION_ON, .on_demand = true,
                                     .int_dot = EMBER_INT_DOT_ON, .linear_lanes = widths[w]};
            ember_kernels_opts k0 = ko;
            k0.no_subgroup = false;
            ember_kernel_choice c, c0;
            ember_kernels_describe(ember_vk_get_caps(t->vk), &ko, &c);
            ember_kernels_describe(ember_vk_get_caps(t->vk), &k0, &c0);
            CHECK(c.lin_int_dot);
            if (v == 1 && !c0.lin_subgroup) continue; /* the first run's kernels again */
            if (!c0.lin_subgroup && tu_subgroup_repeat()) continue; /* shared memory only: as at the default size */
            if (ember_kernels_create_opts(t->vk, &ko, &t->k, &t->err) != EMBER_OK) kt_die(t, "ember_kernels_create");
            char name[64];
            snprintf(name, sizeof name, "idot, %u lanes, %s", c.lin_lanes, c.lin_subgroup ? "subgroup" : "shared memory");
            t->variant = name;
            t->variant_index = v;
            tu_rng r = {9};
            static const uint32_t toks[] = {1, 3, 5, 17};
            for (int n = 0; v == 0 && n < 4; n++) {
                test_linear_case(t, &r, EMBER_DTYPE_Q8_0, 33, 96, toks[n], 0, 1);
                test_linear_case(t, &r, EMBER_DTYPE_Q8_0, 19, 4160, toks[n], 0, 1);
            }
            /* the block types with integer codes, at the device's lanes: a decode and a
             * prefill tile each for one type of each code family (the integer unit is one
             * for all; the decoders are test_linear's); BF16 keeps its float unit */
            for (size_t b = 0; w == 0 && v == 0 && b < N_BLOCK_TYPES; b++) {
                ember_dtype bt = BLOCK_TYPES[b];
                CHECK(ember_kernels_int_dot(t->k, bt) == (bt != EMBER_DTYPE_BF16));
                bool family = bt == EMBER_DTYPE_Q4_0 || bt == EMBER_DTYPE_Q5_1 || bt == EMBER_DTYPE_Q3_K ||
                              bt == EMBER_DTYPE_Q4_K || bt == EMBER_DTYPE_Q6_K || bt == EMBER_DTYPE_IQ4_XS;
                for (int n = 0; n < 4 && family; n += 3)
                    test_linear_case(t, &r, bt, 33, 768, toks[n], 0, 1);
            }
            for (int i = 0; i < 3; i++)
                for (int mode = 0; mode < 3; mode++) test_invariance_case(t, 3 * i + mode, &inv[i], (ember_out_mode)mode);
            for (int mode = 0; mode < 3; mode += 2)
                test_norm_case(t, 10 + mode, EMBER_DTYPE_Q8_0, 70, 1056, (ember_out_mode)mode);
            printf("[%s] checked\n", name);
            ember_kernels_destroy(t->k);
            t->k = NULL;
        }
}

/* test_kernels fp16: F16 and Q8_0 units in fp16 arithmetic (FP16_DOT), forced: at the
 * device's lanes (the subgroup combine where it has one) against the CPU doing the same
 * fp16 arithmetic (fp16_dot_ref), then at 32 lanes (wider than lavapipe's subgroups: the
 * shared-memory combine) with x staged; batch invariant, and with the fused RMSNorm,
 * whose rows span 10^-2 .. 10^2 (x's scale is a power of two a unit). */
static void run_fp16(ctx *t)
{
    if (!ember_vk_get_caps(t->vk)->fp16_arith) {
        printf("no shaderFloat16: fp16 arithmetic not checked\n");
        return;
    }
    static const inv_case inv[] = {{EMBER_DTYPE_F16, 38, 1048, 0}, {EMBER_DTYPE_Q8_0, 70, 1056, 0}};
    for (int w = 0; w < 2; w++) {
        /* on demand: only the F16 and Q8_0 pipelines these cases use (upload makes them) */
        ember_kernels_opts ko = {.norm_fusion = EMBER_NORM_FUSION_ON, .on_demand = true, .fp16_dot = EMBER_KERNEL_ON,
                                 .linear_lanes = w ? 32 : 0, .linear_stage = w ? EMBER_STAGE_ON : EMBER_STAGE_OFF};
        ember_kernel_choice c;
        ember_kernels_describe(ember_vk_get_caps(t->vk), &ko, &c);
        CHECK(c.lin_fp16_dot);
        if (!c.lin_subgroup && tu_subgroup_repeat()) continue; /* shared memory only: as at the default size */
        if (ember_kernels_create_opts(t->vk, &ko, &t->k, &t->err) != EMBER_OK) kt_die(t, "ember_kernels_create");
        CHECK(ember_kernels_fp16_dot(t->k, EMBER_DTYPE_F16) && ember_kernels_fp16_dot(t->k, EMBER_DTYPE_Q8_0) &&
              !ember_kernels_fp16_dot(t->k, EMBER_DTYPE_F32) && !ember_kernels_fp16_dot(t->k, EMBER_DTYPE_Q4_K));
        char name[64];
        snprintf(name, sizeof name, "fp16, %u lanes, %s%s", c.lin_lanes, c.lin_subgroup ? "subgroup" : "shared memory",
                 c.lin_staged ? ", staged" : "");
        t->variant = name;
        t->variant_index = w; /* each set its own bits: another lane count sums in another order */
        tu_rng r = {13};
        static const uint32_t toks[] = {1, 3, 5, 17};
        for (int n = 0; w == 0 && n < 4; n++)
            for (int d = 0; d < 2; d++) {
                test_linear_case(t, &r, inv[d].type, 33, 96, toks[n], 0, 1);
                test_linear_case(t, &r, inv[d].type, 19, 4160, toks[n], 0, 1);
            }
        for (int i = 0; i < 2; i++)
            for (int mode = 0; mode < 3; mode++)
                test_invariance_case(t, 6 * w + 3 * i + mode, &inv[i], (ember_out_mode)mode);
        for (int i = 0; i < 2; i++)
            test_norm_case(t, 20 + 2 * w + i, inv[i].type, inv[i].rows, inv[i].cols, i ? EMBER_OUT_ADD : EMBER_OUT_SWIGLU);
        printf("[%s] checked\n", name);
        ember_kernels_destroy(t->k);
        t->k = NULL;
    }
}

/* test_kernels stage: x staged in shared memory must give the bits of the kernels that
 * read x themselves. Both kernel sets run the same weight and x, one dispatch per tile
 * shape (1, 2, 5 and 40 tokens), every mode, and the fused RMSNorm; the staged one has 4
 * lane groups a workgroup sharing the staged x. Types: one of each x piece (F32: a vec4,
 * Q8_0: 8, Q4_0: a unit at a time, Q4_K: runs of 4 units, a run's x a piece in the
 * mat-vec); cols leave lanes with different unit counts. */
static void make_for(ctx *t, ember_kernels *k, const ember_gpu_weight *g)
{
    ember_kernels_set want = {{0}};
    ember_kernels_want_linear(k, g, false, &want);
    if (ember_k_linear_can_norm(k, g)) ember_kernels_want_linear(k, g, true, &want);
    if (ember_kernels_make(k, &want, &t->err) != EMBER_OK) kt_die(t, "ember_kernels_make");
}

static void test_stage_case(ctx *t, ember_kernels *on, ember_dtype type, uint32_t cols, int mode, bool norm)
{
    enum { ROWS = 38, NT = 40 };
    static const uint32_t toks[] = {1, 2, 5, NT}; /* tiles of 1, 2, 4 and 8 tokens */
    tu_rng r = {500 + (uint64_t)type * 8 + (uint64_t)mode * 2 + norm};
    weight w = make_weight(&r, type, ROWS, cols);
    uint32_t ldy = mode == EMBER_OUT_SWIGLU ? ROWS / 2 : ROWS;
    float *x = kt_rand_floats(&r, (size_t)NT * cols, -1, 1), *y0 = kt_rand_floats(&r, (size_t)NT * ldy, -1, 1);
    float *gn = kt_rand_floats(&r, cols, 0.5f, 1.5f);
    char what[160];
    snprintf(what, sizeof what, "[%s] staged %s %ux%u mode %d%s", t->variant, dtype_name(type), ROWS, cols, mode,
             norm ? " fused norm" : "");
    kt_case_begin(t);
    ember_gpu_weight g;
    if (!upload(t, &w, 1, 0, &g)) goto done;
    make_for(t, on, &g);
    ember_linear_norm n = {kt_buf(t, gn, sizeof(float) * cols), NORM_EPS};
    ember_vk_span xs = xbuf(t, x, sizeof(float) * NT * cols), ys[4][2];
    for (int i = 0; i < 4; i++)
        for (int s = 0; s < 2; s++) {
            ember_kernels *k = s ? on : t->k;
            ys[i][s] = kt_buf(t, y0, sizeof(float) * toks[i] * ldy);
            if (norm) ember_k_linear_norm(t->cmd, k, &g, xs, &n, ys[i][s], toks[i], (ember_out_mode)mode);
            else ember_k_linear(t->cmd, k, &g, xs, ys[i][s], toks[i], (ember_out_mode)mode);
        }
    if (!kt_submit(t, what)) goto done;
    for (int i = 0; i < 4; i++)
        CHECKF(memcmp(ys[i][0].host, ys[i][1].host, sizeof(float) * toks[i] * ldy) == 0, "%s: %u tokens differ",
               what, toks[i]);
    /* ... and right, not merely alike */
    float *xr = norm ? norm_ref(x, gn, NT, cols) : x;
    double *want = malloc(sizeof(double) * NT * ldy);
    linear_ref(&w, xr, y0, NT, (ember_out_mode)mode, REF_EXACT, want);
    kt_check_close(what, ys[3][1].host, want, (size_t)NT * ldy, TOL);
    free(want);
    if (norm) free(xr);
done:
    free(x);
    free(y0);
    free(gn);
    free_weight(&w);
}

/* Per pairing (the device's lanes, staged with the subgroup and with the shared-memory
 * combine; 32 lanes), the unstaged kernels in t->k against the staged ones. */
static void run_stage(ctx *t)
{
    static const struct { ember_dtype type; uint32_t cols; bool norm; } cases[] = {
        {EMBER_DTYPE_F32, 1000, 1}, {EMBER_DTYPE_Q8_0, 1056, 1}, {EMBER_DTYPE_Q4_0, 288, 0},
        {EMBER_DTYPE_Q4_K, 1280, 1}};
    static const struct { uint32_t lanes; bool no_subgroup; } pairs[] = {{0, 0}, {0, 1}, {32, 0}};
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        ember_kernels_opts off = {.norm_fusion = EMBER_NORM_FUSION_ON, .linear_lanes = pairs[p].lanes,
                                  .linear_stage = EMBER_STAGE_OFF};
        ember_kernels_opts on = off;
        on.no_subgroup = pairs[p].no_subgroup, on.linear_groups = 4, on.linear_stage = EMBER_STAGE_ON;
        ember_kernel_choice c, c0;
        ember_kernels_describe(ember_vk_get_caps(t->vk), &on, &c);
        ember_kernels_describe(ember_vk_get_caps(t->vk), &off, &c0);
        if (pairs[p].no_subgroup && !c0.lin_subgroup) continue; /* the first pairing again */
        if (!c.lin_subgroup && !c0.lin_subgroup && tu_subgroup_repeat()) continue; /* as at the default size */
        /* every tile shape staged where its x fits (at 8 lanes, all) */
        CHECKF(c0.lin_staged == 0 && (c.lin_staged == 0x11e || (pairs[p].lanes && c.lin_staged)),
               "staged tiles %#x, %#x", c0.lin_staged, c.lin_staged);
        ember_kernels *k_on;
        if (ember_kernels_create_opts(t->vk, &off, &t->k, &t->err) != EMBER_OK ||
            ember_kernels_create_opts(t->vk, &on, &k_on, &t->err) != EMBER_OK)
            kt_die(t, "ember_kernels_create");
        char name[80];
        snprintf(name, sizeof name, "stage, %u lanes, %s", c.lin_lanes, c.lin_subgroup ? "subgroup" : "shared memory");
        t->variant = name;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            for (int mode = 0; mode < 3; mode++) {
                test_stage_case(t, k_on, cases[i].type, cases[i].cols, mode, false);
                if (cases[i].norm && mode != EMBER_OUT_ADD) test_stage_case(t, k_on, cases[i].type, cases[i].cols, mode, true);
            }
        printf("[%s] checked (staged tiles of tokens: %#x)\n", name, c.lin_staged);
        ember_kernels_destroy(k_on);
        ember_kernels_destroy(t->k);
        t->k = NULL;
    }
}

/* test_kernels matrix: the matrix family (linear_mm.comp) by FMA, then through NV's and
 * KHR's cooperative matrices where the device has them (lavapipe: neither; the GPU check
 * runs them), against the CPU given the same fp16 w and x: F32, F16 and Q8_0 at several
 * shapes and batch sizes (tiles of 16 and 64 tokens, rows past a tile's end), weights in
 * parts, every block type; then the invariance checks (bits across batches and offsets). */
static void run_matrix(ctx *t)
{
    if (!ember_vk_get_caps(t->vk)->fp16_arith) {
        printf("no shaderFloat16: the matrix family not checked\n");
        return;
    }
    static const int coop[EMBER_MM_UNITS] = {EMBER_COOP_OFF, EMBER_COOP_NV, EMBER_COOP_KHR};
    for (int u = 0; u < EMBER_MM_UNITS; u++) {
        ember_kernels_opts ko = {.matrix = EMBER_MATRIX_ON, .coop = coop[u]};
        ember_kernel_choice c;
        ember_kernels_describe(ember_vk_get_caps(t->vk), &ko, &c);
        CHECK(c.lin_matrix && !c.lin_norm_fused);
        char name[64];
        snprintf(name, sizeof name, "matrix,%s", MM_UNIT_NAMES[u]);
        if (c.lin_matrix_units != u) {
            printf("[%s] not on this device\n", name);
            continue;
        }
        if (ember_kernels_create_opts(t->vk, &ko, &t->k, &t->err) != EMBER_OK) kt_die(t, "ember_kernels_create");
        t->variant = name;
        t->variant_index = 0;
        static const ember_dtype types[] = {EMBER_DTYPE_F32, EMBER_DTYPE_F16, EMBER_DTYPE_Q8_0};
        static const uint32_t shapes[][2] = {{33, 96}, {130, 2048}};
        static const uint32_t toks[] = {1, 5, 16, 17, 64, 130};
        tu_rng r = {11};
        for (int d = 0; d < 3; d++) {
            for (size_t s = 0; s < 2; s++)
                for (size_t n = 0; n < sizeof toks / sizeof toks[0]; n++)
                    test_linear_case(t, &r, types[d], shapes[s][0], shapes[s][1], toks[n], 0, 1);
            for (uint32_t n = 1; n <= 20; n += 19)
                test_linear_case(t, &r, types[d], 74, 64, n, row_bytes(types[d], 64) * 9 + 8, 2);
        }
        test_block_types(t, &r);
        test_invariance(t);
        printf("[%s] checked\n", t->variant);
        ember_kernels_destroy(t->k);
        t->k = NULL;
    }
}

int main(int argc, char **argv)
{
    const kt_variant *variants = kt_variants;
    bool do_bench = argc > 1 && strcmp(argv[1], "bench") == 0;
    ctx t = {0};
    if (!kt_open(&t)) return tu_skip("no Vulkan device");
    const ember_vk_caps *caps = ember_vk_get_caps(t.vk);
    printf("device: %s, subgroup %u%s%s, texel views%s%s%s\n", caps->device_name, caps->subgroup_size,
           caps->subgroup_arith ? " arithmetic" : "", caps->subgroup_shuffle ? " shuffle" : "",
           caps->texel_rgba32f ? " rgba32f" : "", caps->texel_rgba32ui ? " rgba32ui" : "",
           caps->texel_r16f ? " r16f" : "");
    bool lanes = argc > 1 && strcmp(argv[1], "lanes") == 0, idot = argc > 1 && strcmp(argv[1], "idot") == 0;
    bool stage = argc > 1 && strcmp(argv[1], "stage") == 0, matrix = argc > 1 && strcmp(argv[1], "matrix") == 0;
    bool fp16 = argc > 1 && strcmp(argv[1], "fp16") == 0;
    if (do_bench || lanes || idot || stage || matrix || fp16) {
        if (do_bench) bench_all(&t, variants);
        else if (lanes) run_lanes(&t);
        else if (fp16) run_fp16(&t);
        else if (stage) run_stage(&t);
        else if (matrix) run_matrix(&t);
        else run_idot(&t);
        for (size_t i = 0; i < sizeof t.alone / sizeof t.alone[0]; i++) free(t.alone[i]);
        kt_close(&t);
        return tu_finish("test_kernels");
    }
    /* The four variants, then the first again with another linear tile shape (2 lane
     * groups of 8 rows a workgroup: neither lavapipe's nor a GPU's default): the same
     * bits as the first (check_across_variants). A repeat at another subgroup size
     * (tu_subgroup_repeat) skips the baseline variants: no subgroup operation in them. */
    for (int v = 0, done = 0; v < 5; v++) {
        const kt_variant *kv = &variants[v % 4];
        if (kv->no_subgroup && tu_subgroup_repeat()) continue;
        /* The fused RMSNorm's pipelines exist beside the plain ones (test_linear_norm). */
        ember_kernels_opts ko = {.no_subgroup = kv->no_subgroup, .no_texel = kv->no_texel,
                                 .norm_fusion = EMBER_NORM_FUSION_ON};
        if (v == 4) ko.linear_groups = 2, ko.linear_rows = 8;
        double t0 = kt_now_s();
        if (ember_kernels_create_opts(t.vk, &ko, &t.k, &t.err) != EMBER_OK) kt_die(&t, "ember_kernels_create");
        /* A variant the device lacks falls back to one already run. */
        bool dup = (!kv->no_texel && !ember_kernels_texel(t.k)) || (!kv->no_subgroup && !caps->subgroup_arith);
        ember_kernel_choice c;
        ember_kernels_describe(caps, &ko, &c);
        if (v == 4 && !c.lin_subgroup && tu_subgroup_repeat()) dup = true; /* linear checks only */
        if (!dup) {
            t.variant = v == 4 ? "subgroup+texel, 2 groups of 8 rows" : kv->name;
            t.variant_index = done++;
            printf("[%s] pipelines created in %.2f s\n", t.variant, kt_now_s() - t0);
            if (v < 4) {
                run_all(&t, v != 0 || tu_subgroup_repeat(), c.lin_subgroup);
            } else { /* the checks that compare bits across variants */
                test_invariance(&t);
                test_linear_norm(&t);
            }
        }
        ember_kernels_destroy(t.k);
        t.k = NULL;
    }
    for (size_t i = 0; i < sizeof t.alone / sizeof t.alone[0]; i++) free(t.alone[i]);
    kt_close(&t);
    return tu_finish("test_kernels");
}
