/* kernels_moe.c — routing, grouped expert products and the combine of a mixture of
 * experts (kernels_moe.h; shaders/moe_route.comp, linear.comp's MOE, moe_combine.comp). */
#include "kernels_moe.h"

#include "kernels_internal.h"
#include "kernels_linear.h"

uint64_t ember_moe_groups_words(const ember_hparams *hp, uint32_t n_tok)
{
    return 3ull * hp->n_expert + 2ull * n_tok * hp->n_expert_used + 1 + 4ull * EMBER_MOE_MAX_ARGS;
}

/* Pairs an expert serves on average: what the tile shape is chosen for. */
static uint32_t pairs_per_expert(const ember_hparams *hp, uint32_t n_tok)
{
    uint32_t n = ember_k_ceil((uint64_t)n_tok * hp->n_expert_used, hp->n_expert);
    return n ? n : 1;
}

/* A grouped product's launch for n_tok tokens: its tile shape, the rows a tile steps and
 * the workgroups along x and z (the same for every part: a part is whole experts). */
typedef struct moe_launch {
    const ember_lin_shape *l;
    uint32_t width, step, gx, gz;
} moe_launch;

static moe_launch launch_of(const ember_kernels *k, const ember_hparams *hp, const ember_gpu_weight *ew,
                            uint32_t n_tok, bool gated)
{
    moe_launch m = {&k->lin[ember_k_linear_shape(k, pairs_per_expert(hp, n_tok))], 0, 0, 0, 0};
    m.width = gated ? ew->expert_rows / 2 : ew->expert_rows;
    m.step = gated ? m.l->tn / 2 : m.l->tn;
    ember_k_grid(ember_k_ceil(ember_k_ceil(m.width, m.step), m.l->ng), k->caps.max_wg_count[0], &m.gx, &m.gz);
    return m;
}

/* Whether pr's dispatches are indirect, and the first of product j's counts. */
static uint32_t parts_before(const ember_moe_products *pr, uint32_t j)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < j && i < pr->n; i++) n += pr->w[i]->n_parts;
    return n;
}

_Static_assert(sizeof(((moe_route_push *)0)->parts) / sizeof(((moe_route_push *)0)->parts[0]) == EMBER_MOE_MAX_ARGS,
               "moe_route_push: a count for each indirect dispatch");

static bool indirect(const ember_moe_products *pr) { return parts_before(pr, pr->n) <= EMBER_MOE_MAX_ARGS; }

void ember_k_moe_route(ember_vk_cmd *c, const ember_kernels *k, const ember_hparams *hp, ember_vk_span logits,
                       ember_vk_span bias, ember_vk_span w, ember_vk_span groups, uint32_t n_tok,
                       const ember_moe_products *pr)
{
    moe_route_push pc = {n_tok, hp->n_expert, hp->n_expert_used, (uint32_t)hp->expert_gating, hp->expert_norm,
                         hp->expert_scale, bias.size != 0, 0, {{0}}};
    for (uint32_t j = 0; indirect(pr) && j < pr->n; j++) {
        const ember_gpu_weight *ew = pr->w[j];
        moe_launch m = launch_of(k, hp, ew, n_tok, pr->mode[j] >= EMBER_OUT_SWIGLU);
        for (uint32_t i = 0; i < ew->n_parts; i++) {
            const ember_gpu_weight_part *p = &ew->parts[i];
            uint32_t e0 = p->row0 / ew->expert_rows;
            uint32_t *a = pc.parts[pc.n_parts++];
            a[0] = e0, a[1] = e0 + p->n_rows / ew->expert_rows, a[2] = m.gx, a[3] = m.gz;
        }
    }
    ember_vk_span b[4] = {logits, w, groups, bias.size ? bias : logits};
    ember_vk_cmd_dispatch(c, k->moe_route, b, &pc, 1, 1, 1);
}

void ember_k_moe_linear(ember_vk_cmd *c, const ember_kernels *k, const ember_hparams *hp,
                        const ember_moe_products *pr, uint32_t j, ember_vk_span x, uint32_t xdiv,
                        ember_vk_span groups, ember_vk_span y, uint32_t n_tok, ember_vk_span bias)
{
    const ember_gpu_weight *ew = pr->w[j];
    int mode = pr->mode[j];
    bool gated = mode >= EMBER_OUT_SWIGLU, oai = mode == EMBER_OUT_SWIGLU_OAI, ind = indirect(pr);
    uint32_t er = ew->expert_rows, pairs = n_tok * hp->n_expert_used, arg0 = parts_before(pr, j);
    moe_launch m = launch_of(k, hp, ew, n_tok, gated);
    int shape = (int)(m.l - k->lin);
    /* where moe_route.comp writes the counts: after the chosen experts' list */
    uint64_t args_word = 3ull * hp->n_expert + 2ull * pairs + 1;
    ember_vk_span b[8];
    b[0] = ember_vk_span_sub(x, 0, (VkDeviceSize)(pairs / xdiv) * ew->cols * sizeof(float));
    b[1] = ember_vk_span_sub(y, 0, (VkDeviceSize)pairs * m.width * sizeof(float));
    b[6] = bias.size ? bias : b[1]; /* no fused norm: the biases, else unread but filled */
    b[7] = groups;
    for (uint32_t i = 0; i < ew->n_parts; i++) {
        const ember_gpu_weight_part *p = &ew->parts[i];
        bool texel = k->texel && x.view && ember_k_part_has_views(p);
        const ember_vk_pipeline *pipe = k->linear_moe[ember_k_dt_slot(p->type)][texel ? LIN_TEXEL : LIN_STORAGE][shape];
        ember_k_bind_weights(b, p, p);
        linear_push pc = {.n_tok = pairs, .cols = ew->cols, .mode = (uint32_t)mode, .ldy = m.width,
                          .n_out = m.width, .step = m.step, .wgx = m.gx,
                          .off0 = 0, .lim0 = p->n_rows, .off1 = gated ? m.width : m.l->tn / 2, .lim1 = p->n_rows,
                          .oscale = oai ? EMBER_SWIGLU_OAI_ALPHA : 1.0f, .ocap = oai ? EMBER_SWIGLU_OAI_LIMIT : 0.0f,
                          .e0 = p->row0 / er, .erows = er, .xdiv = xdiv, .nexp = hp->n_expert,
                          .bias = bias.size != 0, .args = ind ? arg0 + i : UINT32_MAX};
        if (ind) {
            VkDeviceSize at = (args_word + 4ull * (arg0 + i)) * 4;
            ember_vk_cmd_dispatch_indirect(c, pipe, b, &pc, ember_vk_span_sub(groups, at, 12));
        } else {
            /* a row per slot of the chosen experts' list (at most the pairs, at most every
             * expert): the list spans every part, a row of another part's expert ends at once */
            ember_vk_cmd_dispatch(c, pipe, b, &pc, m.gx, hp->n_expert < pairs ? hp->n_expert : pairs, m.gz);
        }
        ember_vk_cmd_note_bytes(c, ember_gpu_weight_bytes(p->type, p->n_rows, ew->cols));
    }
}

void ember_k_moe_combine(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span o, ember_vk_span w, ember_vk_span x,
                         uint32_t n_tok, uint32_t dim, uint32_t k_used, float scale)
{
    uint32_t gx, gy;
    ember_k_grid(ember_k_ceil((uint64_t)n_tok * dim, 64), k->caps.max_wg_count[0], &gx, &gy);
    moe_combine_push pc = {n_tok, dim, k_used, gx, scale > 0 ? scale : 0.0f};
    ember_vk_span b[3] = {o, w, x};
    ember_vk_cmd_dispatch(c, k->moe_combine, b, &pc, gx, gy, 1);
}

void ember_kernels_want_moe(const ember_kernels *k, const ember_gpu_weight *ew, ember_kernels_set *want)
{
    ember_kernels_set_add(want, PIPE_MOE_ROUTE);
    ember_kernels_set_add(want, PIPE_MOE_COMBINE);
    for (uint32_t p = 0; p < ew->n_parts; p++) {
        const ember_gpu_weight_part *part = &ew->parts[p];
        int kind = k->texel && ember_k_part_has_views(part) ? LIN_TEXEL : LIN_STORAGE;
        for (int i = 0; i < LIN_SHAPES; i++) ember_kernels_set_add(want, ember_k_moe_id(ember_k_dt_slot(part->type), kind, i));
    }
}
