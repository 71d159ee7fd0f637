/* kernels_linear.h — matrix products with the weights (kernels_linear.c).
 * Library-internal. */
#ifndef EMBER_KERNELS_LINEAR_H
#define EMBER_KERNELS_LINEAR_H

#include "engine/model/hyperparams.h"
#include "gpu_weight.h"
#include "kernels.h"

typedef enum ember_out_mode {
    EMBER_OUT_STORE = 0,  /* y[t][r] = W[r].x[t] */
    EMBER_OUT_ADD = 1,    /* y[t][r] += W[r].x[t]          (residual folded in) */
    EMBER_OUT_SWIGLU = 2, /* W has 2h rows: gate rows 0..h-1, up rows h..2h-1;
                             y[t][i] = silu(gate_i) * up_i, y has h columns */
    EMBER_OUT_GEGLU = 3,  /* the same with gelu (tanh approximation) for silu */
    EMBER_OUT_SWIGLU_OAI = 4, /* gpt-oss's clamped SwiGLU (hyperparams.h's alpha and limit):
                                 g = min(gate, L), u = clamp(up, -L, L), g sigmoid(A g) (u + 1) */
} ember_out_mode;

/* The gated mode of a family's activation. */
ember_out_mode ember_k_glu_mode(ember_ffn_act act);

/* y = W x for n_tok rows of x (cols wide), one dispatch per weight part. The tile shape
 * follows n_tok (mat-vec for decode batches, where a batch costs about one weight read;
 * mat-mat for prefill), but every output is bit-identical whatever n_tok, the token's
 * row in the batch and the shape: its reduction order is a fixed function of cols
 * (docs/kernels.md). The weights and x are read through texel views when the kernels use
 * them and both have views (ember_kernels_input_view), else from storage buffers. */
void ember_k_linear(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w,
                    ember_vk_span x, ember_vk_span y, uint32_t n_tok, ember_out_mode mode);

/* The same with the output transformed before it is stored (STORE) or added (ADD): times
 * scale (<= 0: 1), then soft-capped, cap * tanh(v / cap) (<= 0: none): a family's
 * residual scale, its logit scale and final soft-cap (docs/models.md). Gated modes ignore
 * both. Scale 1 and no cap give ember_k_linear's bits. */
void ember_k_linear_out(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w, ember_vk_span x,
                        ember_vk_span y, uint32_t n_tok, ember_out_mode mode, float scale, float cap);

/* ember_k_linear_out with a bias per weight row (f32 [rows]; gated: the gate rows' then
 * the up rows', as W's) added to each row's sum first: y[t][r] (+)= xform(W[r].x[t] +
 * b[r]) (gpt-oss's attn_output.bias). A bias of size 0 is ember_k_linear_out, bit for bit. */
void ember_k_linear_bias(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w, ember_vk_span x,
                         ember_vk_span y, uint32_t n_tok, ember_out_mode mode, float scale, ember_vk_span bias);

/* The same for tokens whose x rows start at row x_row0 of x and whose y rows start at row
 * y_row0 of y (row offsets are push constants: sub-spans could break the binding offset
 * alignment). Bit-identical to the rows ember_k_linear computes. */
void ember_k_linear_rows(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w,
                         ember_vk_span x, uint32_t x_row0, ember_vk_span y, uint32_t y_row0,
                         uint32_t n_tok, ember_out_mode mode);

/* The fused RMSNorm: y = W (x / sqrt(mean(x^2) + eps) * w) per token, x's row normalised
 * as the product reads it (shaders/linear.comp), so that no rmsnorm dispatch, barrier or
 * normalised copy of x comes before the product. Its rows' bits are a function of x's row
 * alone, as ember_k_linear's: batch invariant. Only for a weight ember_k_linear_can_norm
 * accepts: the device fuses (ember_kernels_opts.norm_fusion) and every part's rows are
 * whole units (no GENERIC part). w: dim floats, the norm's weights. */
typedef struct ember_linear_norm {
    ember_vk_span w;
    float eps;
} ember_linear_norm;
bool ember_k_linear_can_norm(const ember_kernels *k, const ember_gpu_weight *w);
void ember_k_linear_norm(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *w, ember_vk_span x,
                         const ember_linear_norm *norm, ember_vk_span y, uint32_t n_tok, ember_out_mode mode);

/* Adds to want the linear pipelines ember_k_linear (norm: ember_k_linear_norm) may pick
 * for weight w: its dtype, the binding kind its views allow, every tile shape. */
void ember_kernels_want_linear(const ember_kernels *k, const ember_gpu_weight *w, bool norm,
                               ember_kernels_set *want);

/* kernels_linear.c's choices, which the grouped expert products (kernels_moe.c) share: the
 * tile shape for n_tok tokens (an index of ember_kernels.lin), whether a part has the views
 * the texel kind reads, and a dispatch's weight bindings 2..5 (p0's rows, then p1's). */
int ember_k_linear_shape(const ember_kernels *k, uint32_t n_tok);
bool ember_k_part_has_views(const ember_gpu_weight_part *p);
void ember_k_bind_weights(ember_vk_span *b, const ember_gpu_weight_part *p0, const ember_gpu_weight_part *p1);

#endif
