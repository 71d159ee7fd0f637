/* kernels_rows.c — the row-at-a-time jobs: ember_k_embed, ember_k_rmsnorm(_add), ember_k_argmax
 * and ember_k_topk. Each gives a workgroup to one row. */
#include "kernels_rows.h"

#include "kernels_internal.h"

void ember_kernels_want_rows(const ember_kernels *k, ember_kernels_set *want)
{
    (void)k; /* one variant each, chosen at creation */
    ember_kernels_set_add(want, PIPE_EMBED);
    ember_kernels_set_add(want, PIPE_RMSNORM);
    ember_kernels_set_add(want, PIPE_ARGMAX);
    ember_kernels_set_add(want, PIPE_TOPK);
}

/* One dispatch per part of the table: a token is written by the part holding its row. */
void ember_k_embed(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *emb,
                   ember_vk_span tokens, ember_vk_span x, uint32_t n_tok)
{
    ember_k_embed_scaled(c, k, emb, tokens, x, n_tok, 1.0f);
}

void ember_k_embed_scaled(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *emb,
                          ember_vk_span tokens, ember_vk_span x, uint32_t n_tok, float scale)
{
    if (n_tok == 0) return;
    uint32_t gx, gy;
    ember_k_grid(n_tok, k->caps.max_wg_count[0], &gx, &gy);
    for (uint32_t i = 0; i < emb->n_parts; i++) {
        const ember_gpu_weight_part *p = &emb->parts[i];
        embed_push pc = {emb->cols, n_tok, p->row0, p->n_rows, (uint32_t)p->type, gx, scale > 0 ? scale : 1.0f};
        ember_vk_span b[4] = {tokens, x, p->data, p->type == EMBER_DTYPE_Q8_0 ? p->scales : p->data};
        ember_vk_cmd_dispatch(c, k->embed, b, &pc, gx, gy, 1);
        /* Each token reads one row, from whichever part holds it: counted on the first. */
        if (i == 0) ember_vk_cmd_note_bytes(c, n_tok * ember_gpu_weight_bytes(p->type, 1, emb->cols));
    }
}

static void rmsnorm(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span x, ember_vk_span w, ember_vk_span y,
                    const ember_vk_span *rows, uint32_t n, uint32_t dim, float eps, bool add, float scale)
{
    if (n == 0) return;
    uint32_t gx, gy;
    ember_k_grid(n, k->caps.max_wg_count[0], &gx, &gy);
    rmsnorm_push pc = {n, dim, rows != NULL, gx, eps, add, scale};
    /* Without indirection binding 3 is unused; x stands in for it. */
    ember_vk_span b[4] = {x, w, y, rows ? *rows : x};
    ember_vk_cmd_dispatch(c, k->rmsnorm, b, &pc, gx, gy, 1);
    ember_vk_cmd_note_bytes(c, (uint64_t)dim * sizeof(float));
}

void ember_k_rmsnorm(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span x, ember_vk_span w,
                     ember_vk_span y, const ember_vk_span *rows, uint32_t n, uint32_t dim, float eps)
{
    rmsnorm(c, k, x, w, y, rows, n, dim, eps, false, 1.0f);
}

void ember_k_rmsnorm_add(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span x, ember_vk_span w, ember_vk_span y,
                         uint32_t n, uint32_t dim, float eps, float scale)
{
    rmsnorm(c, k, x, w, y, NULL, n, dim, eps, true, scale > 0 ? scale : 1.0f);
}

void ember_k_argmax(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span logits,
                    ember_vk_span out, uint32_t n_rows, uint32_t n_cols)
{
    if (n_rows == 0 || n_cols == 0) return;
    uint32_t gx, gy;
    ember_k_grid(n_rows, k->caps.max_wg_count[0], &gx, &gy);
    argmax_push pc = {n_rows, n_cols, gx};
    ember_vk_span b[2] = {logits, out};
    ember_vk_cmd_dispatch(c, k->argmax, b, &pc, gx, gy, 1);
}

void ember_k_topk(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span logits, ember_vk_span rows,
                  ember_vk_span inv_t, ember_vk_span out, uint32_t n_rows, uint32_t n_cols)
{
    if (n_rows == 0 || n_cols == 0) return;
    uint32_t gx, gy;
    ember_k_grid(n_rows, k->caps.max_wg_count[0], &gx, &gy);
    argmax_push pc = {n_rows, n_cols, gx};
    ember_vk_span b[4] = {logits, out, rows, inv_t};
    ember_vk_cmd_dispatch(c, k->topk, b, &pc, gx, gy, 1);
}
