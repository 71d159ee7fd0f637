/* kernels_rows.h — the per-row jobs: embedding lookup, RMSNorm, argmax, best candidates
 * (kernels_rows.c). Library-internal. */
#ifndef EMBER_KERNELS_ROWS_H
#define EMBER_KERNELS_ROWS_H

#include "gpu_weight.h"
#include "kernels.h"

/* y[i] = x[r] / sqrt(mean(x[r]^2) + eps) * w, r = rows ? rows[i] : i (uint32), i < n. */
void ember_k_rmsnorm(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span x, ember_vk_span w,
                     ember_vk_span y, const ember_vk_span *rows, uint32_t n, uint32_t dim,
                     float eps);

/* y[i] += scale * (x[i] / sqrt(mean(x[i]^2) + eps) * w), i < n: a post-norm folded into
 * its residual add (scale <= 0: 1). */
void ember_k_rmsnorm_add(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span x, ember_vk_span w, ember_vk_span y,
                         uint32_t n, uint32_t dim, float eps, float scale);

/* x[t] = row tokens[t] (uint32) of the embedding table, as f32. */
void ember_k_embed(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *emb,
                   ember_vk_span tokens, ember_vk_span x, uint32_t n_tok);
/* The same times scale (<= 0: 1): gemma's sqrt(dim), granite's embedding_scale. */
void ember_k_embed_scaled(ember_vk_cmd *c, const ember_kernels *k, const ember_gpu_weight *emb,
                          ember_vk_span tokens, ember_vk_span x, uint32_t n_tok, float scale);

/* out[i] (uint32) = index of the largest of logits[i][0..n_cols) (lowest index on ties). */
void ember_k_argmax(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span logits,
                    ember_vk_span out, uint32_t n_rows, uint32_t n_cols);

/* out[i] (an ember_cand_row, engine/sampling/candidates.h: EMBER_CANDIDATES + 2 pairs of uint32) =
 * the best candidates of logits row rows[i] (uint32), i < n_rows, and its normalisers at
 * temperature 1 and at 1 / inv_t[i] (float) (shaders/topk.comp). n_cols < 2^24. */
void ember_k_topk(ember_vk_cmd *c, const ember_kernels *k, ember_vk_span logits, ember_vk_span rows,
                  ember_vk_span inv_t, ember_vk_span out, uint32_t n_rows, uint32_t n_cols);

/* Adds to want the pipelines of the jobs above (every model runs them). */
void ember_kernels_want_rows(const ember_kernels *k, ember_kernels_set *want);

#endif
