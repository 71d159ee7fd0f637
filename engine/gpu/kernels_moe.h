/* kernels_moe.h — a mixture of experts on the device (kernels_moe.c): the routing of a
 * step's tokens, the grouped expert products that read each chosen expert's weights once
 * for every token that chose it (llama.cpp's mul_mat_id, vLLM's fused MoE), and the
 * weighted sum of the experts' outputs into the residual stream. Library-internal.
 *
 * A step of T tokens, k experts a token: pair p = t * k + j is token t's j-th expert. The
 * groups buffer (ember_moe_groups_words uint32 words) holds what moe_route.comp writes:
 * pairs per expert, where each expert's run of the pair list starts, the list, the
 * expert of each pair, the experts some pair chose, and the workgroup counts of the grouped
 * products' indirect dispatches (shaders/moe_route.comp). */
#ifndef EMBER_KERNELS_MOE_H
#define EMBER_KERNELS_MOE_H

#include "engine/model/hyperparams.h"
#include "gpu_weight.h"
#include "kernels.h"

/* Words of the groups buffer for n_tok tokens of model hp. */
uint64_t ember_moe_groups_words(const ember_hparams *hp, uint32_t n_tok);

/* Dispatches of a layer's grouped products whose workgroup counts the routing writes. */
#define EMBER_MOE_MAX_ARGS 6

/* A layer's grouped products in the order they run (gate/up, then down). When their weight
 * parts number at most EMBER_MOE_MAX_ARGS, the routing writes each part's workgroup counts
 * and the products dispatch indirectly: only the chosen experts of a part get workgroups,
 * where a direct dispatch must give every part a row per chosen expert (lavapipe's 128 MiB
 * bindings split a 64-expert gate/up stack in two: half its workgroups would end at once). */
typedef struct ember_moe_products {
    const ember_gpu_weight *w[2];
    int mode[2]; /* each product's output mode (below): it decides the launch the counts are for */
    uint32_t n;
} ember_moe_products;

/* logits: n_tok rows of hp->n_expert router logits (plus bias, f32 [n_expert], where its
 * size is not 0: the router's); w: n_tok * k weights out; groups out, with the counts of
 * pr's dispatches. */
void ember_k_moe_route(ember_vk_cmd *c, const ember_kernels *k, const ember_hparams *hp, ember_vk_span logits,
                       ember_vk_span bias, ember_vk_span w, ember_vk_span groups, uint32_t n_tok,
                       const ember_moe_products *pr);

/* y row p = W_e x row (p / xdiv) for every pair p, e its expert: the experts' matrices of
 * product j of pr (ember_gpu_weight_upload_experts), one dispatch per part, a workgroup
 * row per chosen expert of the part (direct: min(pairs, n_expert) rows, those of other
 * parts ending at once; a decode step's k, not every expert).
 * pr->mode[j] gated (EMBER_OUT_SWIGLU, _GEGLU, _SWIGLU_OAI): each expert's rows are its gate rows then its up rows,
 * y gets act(gate) * up, expert_rows / 2 wide; else EMBER_OUT_STORE, expert_rows wide.
 * Bit-identical whatever the other tokens of the step (kernels_linear.h's order). n_tok
 * sizes the tile (pairs per expert, on average). bias (size 0: none): f32 per expert in
 * the stack's row order (expert_rows each: gated, its gate rows' then its up rows'),
 * added to each row's sum before the mode applies. */
void ember_k_moe_linear(ember_vk_cmd *c, const ember_kernels *k, const ember_hparams *hp,
                        const ember_moe_products *pr, uint32_t j, ember_vk_span x, uint32_t xdiv, ember_vk_span groups, ember_vk_span y, uint32_t n_tok,
                        ember_vk_span bias);

/* x[t] += scale * sum_j w[t k + j] * o[t k + j] over dim columns (scale <= 0: 1). */
void ember_k_moe_combine(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span o, ember_vk_span w, ember_vk_span x,
                         uint32_t n_tok, uint32_t dim, uint32_t k_used, float scale);

/* Adds the pipelines the products of ew and the routing may take. */
void ember_kernels_want_moe(const ember_kernels *k, const ember_gpu_weight *ew, ember_kernels_set *want);

#endif
