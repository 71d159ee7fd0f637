/* kernels_linear.c — ember_k_linear: y = W x in its three output modes, one dispatch per
 * weight part (STORE/ADD) or per run of outputs whose gate and up rows each lie in one
 * part (SWIGLU). See shaders/linear.glsl for how a dispatch reads its two weight bindings
 * and why the choices made here (tile shape, tokens per workgroup, texel or storage
 * reads) never change a result. */
#include "kernels_linear.h"

#include "kernels_internal.h"

typedef struct launch {
    const ember_vk_pipeline *p;
    uint32_t rows;     /* rows per tile */
    uint32_t per_wg;   /* tiles per workgroup */
    uint32_t tpw;      /* tokens per workgroup */
} launch;

/* The part has the views the texel shader reads. */
bool ember_k_part_has_views(const ember_gpu_weight_part *p)
{
    return p->data.view && (p->type != EMBER_DTYPE_Q8_0 || p->scales.view);
}

/* The tile shape for n_tok (linear.comp's; the matrix family's tile holds 16 or 64 tokens,
 * one tile a workgroup): among the shapes open to n_tok (min_tok), fewest loads,
 * counting per token group tn weight loads and tm x loads per unit. Decode batches end
 * up in one workgroup row (the weights are read once, the token groups loop over them
 * from cache); prefill spreads 64 tokens per workgroup row. */
int ember_k_linear_shape(const ember_kernels *k, uint32_t n_tok)
{
    int best = 0;
    uint64_t best_cost = UINT64_MAX;
    for (int i = 0; i < LIN_SHAPES; i++) {
        const ember_lin_shape *l = &k->lin[i];
        if (k->force_tm) {
            if (l->tm == k->force_tm) return i;
            continue;
        }
        if (n_tok < l->min_tok) continue;
        uint64_t cost = (uint64_t)ember_k_ceil(n_tok, l->tm) * (l->tn + l->tm);
        if (cost < best_cost) best = i, best_cost = cost;
    }
    return best;
}

static uint32_t tokens_per_wg(const ember_kernels *k, uint32_t tm, uint32_t n_tok)
{
    uint32_t tpw = k->force_tpw ? k->force_tpw : n_tok <= 64 ? n_tok : 64;
    return ember_k_ceil(tpw, tm) * tm;
}

/* The pipeline and launch of one part: parts of one weight may differ in type. norm: the
 * fused RMSNorm's variant (never GENERIC: ember_k_linear_can_norm). */
static launch choose(const ember_kernels *k, const ember_gpu_weight_part *p, uint32_t cols, ember_vk_span x,
                     uint32_t n_tok, bool norm)
{
    int d = ember_k_dt_slot(p->type);
    if (ember_kernels_matrix(k, cols)) {
        int s = n_tok <= ember_k_mm_tokens(MM_SMALL) ? MM_SMALL : MM_LARGE;
        return (launch){k->mm[d][s], MM_ROWS, 1, ember_k_mm_tokens(s)};
    }
    if (cols % ember_k_unit_cols(p->type) != 0) { /* F32/F16 only: other types are whole units */
        const ember_lin_shape *l = &k->lin[LIN_SHAPES - 1];
        return (launch){k->linear_generic[d], l->tn, l->ng, tokens_per_wg(k, l->tm, n_tok)};
    }
    int i = ember_k_linear_shape(k, n_tok);
    const ember_lin_shape *l = &k->lin[i];
    bool texel = k->texel && x.view && ember_k_part_has_views(p);
    return (launch){k->linear[d][texel ? LIN_TEXEL : LIN_STORAGE][i][norm ? LIN_NORM : LIN_PLAIN], l->tn, l->ng,
                    tokens_per_wg(k, l->tm, n_tok)};
}

bool ember_k_linear_can_norm(const ember_kernels *k, const ember_gpu_weight *w)
{
    if (!k->fuse_norm) return false;
    for (uint32_t p = 0; p < w->n_parts; p++)
        if (w->cols % ember_k_unit_cols(w->parts[p].type) != 0) return false;
    return w->n_parts > 0;
}

void ember_kernels_want_linear(const ember_kernels *k, const ember_gpu_weight *w, bool norm, ember_kernels_set *want)
{
    for (uint32_t p = 0; p < w->n_parts; p++) {
        const ember_gpu_weight_part *part = &w->parts[p];
        int d = ember_k_dt_slot(part->type);
        if (ember_kernels_matrix(k, w->cols)) { /* a tile of either size, as batches come */
            for (int s = 0; s < MM_SHAPES; s++) ember_kernels_set_add(want, PIPE_MM + (uint32_t)(d * MM_SHAPES + s));
            continue;
        }
        if (w->cols % ember_k_unit_cols(part->type) != 0) {
            ember_kernels_set_add(want, PIPE_GENERIC + (uint32_t)d);
            continue;
        }
        /* Texel or storage, as choose() decides for this part when x has a view (an x
         * without one: ember_kernels_input_view); every shape, as batches come. */
        int kind = k->texel && ember_k_part_has_views(part) ? LIN_TEXEL : LIN_STORAGE;
        for (int i = 0; i < LIN_SHAPES; i++)
            ember_kernels_set_add(want, ember_k_linear_id(d, kind, i, norm ? LIN_NORM : LIN_PLAIN));
    }
}

/* One dispatch, which reads weight_bytes of the weights (for the profile). */
static void dispatch(ember_vk_cmd *c, const ember_kernels *k, const launch *l, const ember_vk_span b[7],
                     linear_push *pc, uint64_t weight_bytes)
{
    uint32_t tiles = ember_k_ceil(pc->n_out, pc->step);
    uint32_t n_wg = ember_k_ceil(tiles, l->per_wg);
    uint32_t gy = ember_k_ceil(pc->n_tok, l->tpw);
    uint32_t gx, gz;
    ember_k_grid(n_wg, k->caps.max_wg_count[0], &gx, &gz);
    pc->wgx = gx;
    ember_vk_cmd_dispatch(c, l->p, b, pc, gx, gy, gz);
    ember_vk_cmd_note_bytes(c, weight_bytes);
}

void ember_k_bind_weights(ember_vk_span *b, const ember_gpu_weight_part *p0, const ember_gpu_weight_part *p1)
{
    bool q8 = p0->type == EMBER_DTYPE_Q8_0;
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

/* The norm's weights a fused dispatch reads (0 without the fused RMSNorm). */
static uint64_t norm_bytes(const ember_gpu_weight *w, bool norm) { return norm ? (uint64_t)w->cols * sizeof(float) : 0; }

/* STORE/ADD: each part is its own dispatch, of its own type, writing columns row0.. of y. */
static void linear_rows(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w, ember_vk_span b[7],
                        linear_push pc, bool norm)
{
    for (uint32_t i = 0; i < w->n_parts; i++) {
        const ember_gpu_weight_part *p = &w->parts[i];
        launch l = choose(k, p, w->cols, b[0], pc.n_tok, norm);
        ember_k_bind_weights(b, p, p);
        pc.step = l.rows;
        pc.tpw = l.tpw;
        pc.out0 = p->row0;
        pc.n_out = p->n_rows;
        pc.off0 = 0;
        pc.off1 = l.rows / 2;
        pc.lim0 = pc.lim1 = p->n_rows;
        dispatch(c, k, &l, b, &pc, ember_gpu_weight_bytes(p->type, p->n_rows, w->cols) + norm_bytes(w, norm));
    }
}

/* SWIGLU, GEGLU: output i needs gate row i and up row i + h, which may sit in different parts;
 * each dispatch covers a run of outputs over which both stay within one part. Gate and up
 * have one type (gpu_model.c stacks them only then), so the gate part's launch serves. */
static void linear_swiglu(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w, ember_vk_span b[7],
                          linear_push pc, bool norm)
{
    uint32_t h = w->rows / 2;
    for (uint32_t i = 0; i < h;) {
        const ember_gpu_weight_part *g = part_of(w, i), *u = part_of(w, i + h);
        launch l = choose(k, g, w->cols, b[0], pc.n_tok, norm);
        pc.step = l.rows / 2;
        pc.tpw = l.tpw;
        uint32_t end = g->row0 + g->n_rows;
        if (u->row0 + u->n_rows - h < end) end = u->row0 + u->n_rows - h;
        if (end > h) end = h;
        ember_k_bind_weights(b, g, u);
        pc.out0 = i;
        pc.n_out = end - i;
        pc.off0 = i - g->row0;
        pc.lim0 = g->n_rows;
        pc.off1 = i + h - u->row0;
        pc.lim1 = u->n_rows;
        dispatch(c, k, &l, b, &pc, 2 * ember_gpu_weight_bytes(g->type, pc.n_out, w->cols) + norm_bytes(w, norm));
        i = end;
    }
}

static bool gated(ember_out_mode mode) { return mode >= EMBER_OUT_SWIGLU; }

ember_out_mode ember_k_glu_mode(ember_ffn_act act)
{
    return act == EMBER_FFN_GELU_TANH ? EMBER_OUT_GEGLU : act == EMBER_FFN_SWIGLU_OAI ? EMBER_OUT_SWIGLU_OAI
                                                                                      : EMBER_OUT_SWIGLU;
}

/* The output transform of a STORE or ADD call: v times scale, then soft-capped at cap. */
typedef struct out_xform {
    float scale, cap;
} out_xform;

static const out_xform PLAIN_OUT = {1.0f, 0.0f};
static const ember_vk_span NO_BIAS = {0};

/* Every linear call: norm (NULL: none) gives the fused RMSNorm's weights and epsilon,
 * bias (size 0: none) a bias per weight row; never both (binding 6 holds either). */
static void linear(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w, ember_vk_span x,
                   uint32_t x_row0, ember_vk_span y, uint32_t y_row0, uint32_t n_tok, ember_out_mode mode,
                   const ember_linear_norm *norm, out_xform ox, ember_vk_span bias)
{
    if (n_tok == 0 || w->n_parts == 0) return;
    uint32_t ldy = gated(mode) ? w->rows / 2 : w->rows;
    ember_vk_span b[7];
    /* Offset 0: the texel view (which starts at the span's first byte) is kept. */
    b[0] = ember_vk_span_sub(x, 0, (VkDeviceSize)(x_row0 + n_tok) * w->cols * sizeof(float));
    b[1] = ember_vk_span_sub(y, 0, (VkDeviceSize)(y_row0 + n_tok) * ldy * sizeof(float));
    b[6] = norm ? norm->w : bias.size ? bias : b[1]; /* unread without either, but every binding is filled */
    if (mode == EMBER_OUT_SWIGLU_OAI) ox = (out_xform){EMBER_SWIGLU_OAI_ALPHA, EMBER_SWIGLU_OAI_LIMIT};
    linear_push pc = {.cols = w->cols, .n_tok = n_tok, .mode = (uint32_t)mode, .ldy = ldy, .xrow0 = x_row0,
                      .yrow0 = y_row0, .eps = norm ? norm->eps : 0, .oscale = ox.scale, .ocap = ox.cap,
                      .bias = bias.size != 0};
    if (gated(mode)) linear_swiglu(c, k, w, b, pc, norm != NULL);
    else linear_rows(c, k, w, b, pc, norm != NULL);
}

void ember_k_linear_rows(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w, ember_vk_span x,
                         uint32_t x_row0, ember_vk_span y, uint32_t y_row0, uint32_t n_tok, ember_out_mode mode)
{
    linear(c, k, w, x, x_row0, y, y_row0, n_tok, mode, NULL, PLAIN_OUT, NO_BIAS);
}

void ember_k_linear(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w, ember_vk_span x,
                    ember_vk_span y, uint32_t n_tok, ember_out_mode mode)
{
    linear(c, k, w, x, 0, y, 0, n_tok, mode, NULL, PLAIN_OUT, NO_BIAS);
}

void ember_k_linear_out(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w, ember_vk_span x,
                        ember_vk_span y, uint32_t n_tok, ember_out_mode mode, float scale, float cap)
{
    linear(c, k, w, x, 0, y, 0, n_tok, mode, NULL, (out_xform){scale > 0 ? scale : 1.0f, cap > 0 ? cap : 0.0f},
           NO_BIAS);
}

void ember_k_linear_norm(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w, ember_vk_span x,
                         const ember_linear_norm *norm, ember_vk_span y, uint32_t n_tok, ember_out_mode mode)
{
    linear(c, k, w, x, 0, y, 0, n_tok, mode, norm, PLAIN_OUT, NO_BIAS);
}

void ember_k_linear_bias(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w, ember_vk_span x,
                         ember_vk_span y, uint32_t n_tok, ember_out_mode mode, float scale, ember_vk_span bias)
{
    linear(c, k, w, x, 0, y, 0, n_tok, mode, NULL, (out_xform){scale > 0 ? scale : 1.0f, 0.0f}, bias);
}
