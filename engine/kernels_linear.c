/* kernels_linear.c — ember_k_linear: y = W x in its three output modes, one dispatch per
 * weight part (STORE/ADD) or per run of outputs whose gate and up rows each lie in one
 * part (SWIGLU). See shaders/linear.glsl for how a dispatch reads its two weight bindings. */
#include "kernels_internal.h"

typedef struct linear_push {
    uint32_t cols, n_tok, mode, ldy;
    uint32_t out0, n_out, step, wgx;
    uint32_t off0, lim0, off1, lim1;
} linear_push;

typedef struct launch {
    const ember_vk_pipeline *p;
    bool matvec;
    uint32_t rows;     /* rows per tile */
    uint32_t per_wg;   /* tiles per workgroup */
    uint32_t tm;       /* tokens per workgroup row (matmul) */
} launch;

static int dt_slot(ember_dtype t)
{
    return t == EMBER_DTYPE_F32 ? DT_SLOT_F32 : t == EMBER_DTYPE_F16 ? DT_SLOT_F16 : DT_SLOT_Q8;
}

/* Columns per wide load; the vector shaders need cols to be a multiple. */
static uint32_t unit_cols(ember_dtype t)
{
    return t == EMBER_DTYPE_F32 ? 4 : t == EMBER_DTYPE_F16 ? 8 : 32;
}

static launch choose(const ember_kernels *k, const ember_gpu_weight *w, uint32_t n_tok)
{
    int d = dt_slot(w->type);
    if (w->cols % unit_cols(w->type) != 0)
        return (launch){k->matmul_generic[d], false, k->mm_tn, k->mm_wg, k->mm_tm};
    if (n_tok <= k->mv_max_tok)
        return (launch){k->matvec[d][n_tok - 1], true, k->mv_rows, k->mv_tiles, 1};
    return (launch){k->matmul[d], false, k->mm_tn, k->mm_wg, k->mm_tm};
}

static void dispatch(ember_vk_cmd *c, const ember_kernels *k, const launch *l, const ember_vk_span b[6],
                     linear_push *pc)
{
    uint32_t tiles = ember_k_ceil(pc->n_out, pc->step);
    uint32_t n_wg = ember_k_ceil(tiles, l->per_wg);
    uint32_t gy = l->matvec ? 1 : ember_k_ceil(pc->n_tok, l->tm);
    uint32_t gx, gz;
    ember_k_grid(n_wg, k->caps.max_wg_count[0], &gx, &gz);
    pc->wgx = gx;
    ember_vk_cmd_dispatch(c, l->p, b, pc, gx, gy, gz);
}

static void bind_weights(ember_vk_span b[6], const ember_gpu_weight *w, const ember_gpu_weight_part *p0,
                         const ember_gpu_weight_part *p1)
{
    bool q8 = w->type == EMBER_DTYPE_Q8_0;
    b[2] = p0->data;
    b[3] = q8 ? p0->scales : p0->data; /* unused by F32/F16 but every binding is filled */
    b[4] = p1->data;
    b[5] = q8 ? p1->scales : p1->data;
}

static const ember_gpu_weight_part *part_of(const ember_gpu_weight *w, uint32_t row)
{
    for (uint32_t i = 0; i + 1 < w->n_parts; i++)
        if (row < w->parts[i].row0 + w->parts[i].n_rows) return &w->parts[i];
    return &w->parts[w->n_parts - 1];
}

/* STORE/ADD: each part is its own dispatch writing columns row0.. of y. */
static void linear_rows(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w, const launch *l,
                        ember_vk_span b[6], linear_push pc)
{
    pc.step = l->rows;
    for (uint32_t i = 0; i < w->n_parts; i++) {
        const ember_gpu_weight_part *p = &w->parts[i];
        bind_weights(b, w, p, p);
        pc.out0 = p->row0;
        pc.n_out = p->n_rows;
        pc.off0 = 0;
        pc.off1 = l->rows / 2;
        pc.lim0 = pc.lim1 = p->n_rows;
        dispatch(c, k, l, b, &pc);
    }
}

/* SWIGLU: output i needs gate row i and up row i + h, which may sit in different parts;
 * each dispatch covers a run of outputs over which both stay within one part. */
static void linear_swiglu(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w, const launch *l,
                          ember_vk_span b[6], linear_push pc)
{
    uint32_t h = w->rows / 2;
    pc.step = l->rows / 2;
    for (uint32_t i = 0; i < h;) {
        const ember_gpu_weight_part *g = part_of(w, i), *u = part_of(w, i + h);
        uint32_t end = g->row0 + g->n_rows;
        if (u->row0 + u->n_rows - h < end) end = u->row0 + u->n_rows - h;
        if (end > h) end = h;
        bind_weights(b, w, g, u);
        pc.out0 = i;
        pc.n_out = end - i;
        pc.off0 = i - g->row0;
        pc.lim0 = g->n_rows;
        pc.off1 = i + h - u->row0;
        pc.lim1 = u->n_rows;
        dispatch(c, k, l, b, &pc);
        i = end;
    }
}

void ember_k_linear(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w, ember_vk_span x,
                    ember_vk_span y, uint32_t n_tok, ember_out_mode mode)
{
    if (n_tok == 0 || w->n_parts == 0) return;
    launch l = choose(k, w, n_tok);
    uint32_t ldy = mode == EMBER_OUT_SWIGLU ? w->rows / 2 : w->rows;
    ember_vk_span b[6];
    b[0] = ember_vk_span_sub(x, 0, (VkDeviceSize)n_tok * w->cols * sizeof(float));
    b[1] = ember_vk_span_sub(y, 0, (VkDeviceSize)n_tok * ldy * sizeof(float));
    linear_push pc = {.cols = w->cols, .n_tok = n_tok, .mode = (uint32_t)mode, .ldy = ldy};
    if (mode == EMBER_OUT_SWIGLU) linear_swiglu(c, k, w, &l, b, pc);
    else linear_rows(c, k, w, &l, b, pc);
}
