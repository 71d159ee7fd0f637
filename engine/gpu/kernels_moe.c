/* kernels_moe.c — routing, grouped expert products and the combine of a mixture of
 * experts (kernels_moe.h; shaders/moe_route.comp, linear.comp's MOE, moe_combine.comp). */
#include "kernels_moe.h"

#include "kernels_internal.h"
#include "kernels_linear.h"

uint64_t ember_moe_groups_words(const ember_hparams *hp, uint32_t n_tok)
{
    return 3ull * hp->n_expert + 2ull * n_tok * hp->n_expert_used + 1;
}

void ember_k_moe_route(ember_vk_cmd *c, const ember_kernels *k, const ember_hparams *hp, ember_vk_span logits,
                       ember_vk_span bias, ember_vk_span w, ember_vk_span groups, uint32_t n_tok)
{
    moe_route_push pc = {n_tok, hp->n_expert, hp->n_expert_used, (uint32_t)hp->expert_gating, hp->expert_norm,
                         hp->expert_scale, bias.size != 0};
    ember_vk_span b[4] = {logits, w, groups, bias.size ? bias : logits};
    ember_vk_cmd_dispatch(c, k->moe_route, b, &pc, 1, 1, 1);
}

/* Pairs an expert serves on average: what the tile shape is chosen for. */
static uint32_t pairs_per_expert(const ember_hparams *hp, uint32_t n_tok)
{
    uint32_t n = ember_k_ceil((uint64_t)n_tok * hp->n_expert_used, hp->n_expert);
    return n ? n : 1;
}

void ember_k_moe_linear(ember_vk_cmd *c, const ember_kernels *k, const ember_hparams *hp, const ember_gpu_weight *ew,
                        ember_vk_span x, uint32_t xdiv, ember_vk_span groups, ember_vk_span y, uint32_t n_tok,
                        int mode, ember_vk_span bias)
{
    bool gated = mode >= EMBER_OUT_SWIGLU, oai = mode == EMBER_OUT_SWIGLU_OAI;
    uint32_t er = ew->expert_rows, width = gated ? er / 2 : er, pairs = n_tok * hp->n_expert_used;
    const ember_lin_shape *l = &k->lin[ember_k_linear_shape(k, pairs_per_expert(hp, n_tok))];
    int shape = (int)(l - k->lin);
    ember_vk_span b[8];
    b[0] = ember_vk_span_sub(x, 0, (VkDeviceSize)(pairs / xdiv) * ew->cols * sizeof(float));
    b[1] = ember_vk_span_sub(y, 0, (VkDeviceSize)pairs * width * sizeof(float));
    b[6] = bias.size ? bias : b[1]; /* no fused norm: the biases, else unread but filled */
    b[7] = groups;
    for (uint32_t i = 0; i < ew->n_parts; i++) {
        const ember_gpu_weight_part *p = &ew->parts[i];
        bool texel = k->texel && x.view && ember_k_part_has_views(p);
        const ember_vk_pipeline *pipe = k->linear_moe[ember_k_dt_slot(p->type)][texel ? LIN_TEXEL : LIN_STORAGE][shape];
        ember_k_bind_weights(b, p, p);
        uint32_t step = gated ? l->tn / 2 : l->tn;
        linear_push pc = {.n_tok = pairs, .cols = ew->cols, .mode = (uint32_t)mode, .ldy = width, .n_out = width,
                          .step = step,
                          .off0 = 0, .lim0 = p->n_rows, .off1 = gated ? width : l->tn / 2, .lim1 = p->n_rows,
                          .oscale = oai ? EMBER_SWIGLU_OAI_ALPHA : 1.0f, .ocap = oai ? EMBER_SWIGLU_OAI_LIMIT : 0.0f,
                          .e0 = p->row0 / er, .erows = er, .xdiv = xdiv, .nexp = hp->n_expert,
                          .bias = bias.size != 0};
        uint32_t n_wg = ember_k_ceil(ember_k_ceil(width, step), l->ng), gx, gz;
        ember_k_grid(n_wg, k->caps.max_wg_count[0], &gx, &gz);
        pc.wgx = gx;
        /* a row per slot of the chosen experts' list (at most the pairs, at most every
         * expert): the list spans every part, a row of another part's expert ends at once */
        uint32_t rows = hp->n_expert < pairs ? hp->n_expert : pairs;
        ember_vk_cmd_dispatch(c, pipe, b, &pc, gx, rows, gz);
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
