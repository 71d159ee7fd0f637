/* test_kernel_topk.c — shaders/topk.comp against a sort on the CPU: for rows of 1 to
 * 262,144 logits (picked through its row list), the n = min(EMBER_CANDIDATES, cols) best (id, logit) pairs in the
 * sampler's order (higher logit, then lower id), bit for bit, and the row's normaliser z
 * within 1e-5. Rows with many equal logits (the id tie-break), NaN (counts as -inf), -0
 * and +0 (equal), -inf, +inf and all-equal rows; z_t at three temperatures; at whatever
 * subgroup size the device runs (ctest adds 4 and 16 lanes). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sampling/candidates.h"
#include "kernel_fixture.h"

typedef kt_ctx ctx;

typedef struct ref_cand {
    float v;
    uint32_t id;
} ref_cand;

static int cmp_ref(const void *a, const void *b)
{
    const ref_cand *x = a, *y = b;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* The best n of row, sorted, and z (z_t: at temperature 1 / inv_t) in double over the
 * finite logits under the largest. */
static uint32_t reference(const float *row, uint32_t cols, float inv_t, ref_cand *best, double *z, double *z_t)
{
    ref_cand *all = malloc(sizeof *all * cols);
    double m = -INFINITY;
    for (uint32_t c = 0; c < cols; c++) {
        float v = isnan(row[c]) ? -INFINITY : row[c] == 0 ? 0.0f : row[c];
        all[c] = (ref_cand){v, c};
        if (isfinite(v) && v > m) m = v;
    }
    *z = *z_t = 0;
    for (uint32_t c = 0; c < cols; c++)
        if (isfinite(all[c].v)) *z += exp((double)all[c].v - m), *z_t += exp(((double)all[c].v - m) * inv_t);
    qsort(all, cols, sizeof *all, cmp_ref);
    uint32_t n = cols < EMBER_CANDIDATES ? cols : EMBER_CANDIDATES;
    memcpy(best, all, sizeof *all * n);
    free(all);
    return n;
}

typedef enum { ROW_SPREAD, ROW_TIES, ROW_SPECIAL, ROW_EQUAL, ROW_INF } row_kind;

static void fill_row(tu_rng *r, row_kind kind, float *row, uint32_t cols)
{
    for (uint32_t c = 0; c < cols; c++) {
        float u = tu_uniform(r, 0, 1);
        switch (kind) {
        case ROW_SPREAD: row[c] = 20 * u - 10; break;
        case ROW_TIES: row[c] = (float)(int)(5 * u); break; /* 5 values: ties at every cut */
        case ROW_EQUAL: row[c] = 1.5f; break;
        case ROW_SPECIAL:
        case ROW_INF: {
            static const float special[] = {0.0f, -0.0f, -INFINITY, NAN, 3.0f, -3.0f};
            row[c] = u < 0.5f ? special[(c * 7) % 6] : 8 * u - 4;
            break;
        }
        }
    }
    if (kind == ROW_INF && cols > 3) row[cols / 3] = INFINITY;
}

static void check_row(ctx *t, const ember_cand_row *got, const float *row, uint32_t cols, float inv_t,
                      const char *what)
{
    ref_cand best[EMBER_CANDIDATES];
    double z, z_t;
    uint32_t n = reference(row, cols, inv_t, best, &z, &z_t);
    CHECKF(got->n == n, "[%s] %s cols %u: n %u want %u", t->variant, what, cols, got->n, n);
    uint32_t bad = 0, first = 0;
    for (uint32_t i = 0; i < n && i < got->n; i++)
        if (got->c[i].id != best[i].id || !(got->c[i].logit == best[i].v) ||
            signbit(got->c[i].logit) != signbit(best[i].v))
            if (!bad++) first = i;
    CHECKF(bad == 0, "[%s] %s cols %u: %u candidates differ, first at %u: got (%u, %g) want (%u, %g)", t->variant,
           what, cols, bad, first, got->c[first].id, got->c[first].logit, best[first].id, best[first].v);
    if (isfinite(best[0].v))
        CHECKF(fabs(got->z - z) <= 1e-5 * z && fabs(got->z_t - z_t) <= 1e-5 * z_t,
               "[%s] %s cols %u: z %.8g want %.8g, z_t %.8g want %.8g", t->variant, what, cols, got->z, z, got->z_t,
               z_t);
}

static void test_rows(ctx *t, row_kind kind, const char *what, const uint32_t *cols, uint32_t n_rows)
{
    tu_rng r = {11 + kind};
    /* One dispatch per width, of three rows. */
    for (uint32_t i = 0; i < n_rows; i++) {
        uint32_t rows = 3, w = cols[i];
        float *l = malloc(sizeof(float) * rows * w);
        for (uint32_t j = 0; j < rows; j++) fill_row(&r, kind, l + (size_t)j * w, w);
        kt_case_begin(t);
        ember_vk_span ls = kt_buf(t, l, sizeof(float) * rows * w);
        /* Rows taken out of order, one twice, one not at all: output j is row pick[j], its
         * z_t at temperature 1 / inv_t[j]. */
        const uint32_t pick[3] = {2, 0, 2};
        const float inv_t[3] = {1.0f, 2.0f, 0.7f};
        ember_vk_span os = kt_buf(t, NULL, sizeof(ember_cand_row) * rows), rs = kt_buf(t, pick, sizeof pick);
        ember_vk_span ts = kt_buf(t, inv_t, sizeof inv_t);
        ember_k_topk(t->cmd, t->k, ls, rs, ts, os, rows, w);
        if (kt_submit(t, "topk"))
            for (uint32_t j = 0; j < rows; j++)
                check_row(t, (const ember_cand_row *)os.host + j, l + (size_t)pick[j] * w, w, inv_t[j], what);
        free(l);
    }
}

static void run_all(ctx *t)
{
    /* 262144: a 256k vocabulary (Gemma's) within lavapipe's loop limit. */
    static const uint32_t widths[] = {1, 7, 255, 256, 257, 1000, 32000, 50000, 262144};
    uint32_t n = sizeof widths / sizeof widths[0];
    test_rows(t, ROW_SPREAD, "spread", widths, n);
    test_rows(t, ROW_TIES, "ties", widths, n);
    test_rows(t, ROW_SPECIAL, "nan/-0/-inf", widths, n);
    test_rows(t, ROW_EQUAL, "all equal", widths, n);
    test_rows(t, ROW_INF, "+inf", widths, n);
}

int main(void)
{
    ctx t = {0};
    if (!kt_open(&t)) return tu_skip("no Vulkan device");
    /* One variant: topk has no subgroup or texel form (its workgroup is 256 everywhere). */
    if (ember_kernels_create(t.vk, &t.k, &t.err) != EMBER_OK) kt_die(&t, "ember_kernels_create");
    t.variant = "default";
    run_all(&t);
    ember_kernels_destroy(t.k);
    t.k = NULL;
    kt_close(&t);
    return tu_finish("test_kernel_topk");
}
