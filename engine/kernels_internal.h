/* kernels_internal.h — the pipelines and launch shapes behind ember_kernels, shared by
 * kernels.c (creation), kernels_linear.c, kernels_attention.c and kernels_rows.c. */
#ifndef EMBER_KERNELS_INTERNAL_H
#define EMBER_KERNELS_INTERNAL_H

#include "kernels.h"

#define EMBER_MV_MAX_NT 4  /* mat-vec pipelines exist for 1..4 tokens */

/* Dtype slots of the linear pipelines. */
enum { DT_SLOT_F32, DT_SLOT_F16, DT_SLOT_Q8, DT_SLOTS };

struct ember_kernels {
    ember_vk *vk;
    ember_vk_caps caps;
    bool subgroup;              /* subgroup-arithmetic variants in use */
    uint32_t mv_max_tok;        /* n_tok <= this uses the mat-vec shader */

    ember_vk_pipeline *matvec[DT_SLOTS][EMBER_MV_MAX_NT];
    ember_vk_pipeline *matmul[DT_SLOTS];
    ember_vk_pipeline *matmul_generic[2]; /* F32, F16 with cols not a multiple of 4 / 8 */
    ember_vk_pipeline *embed, *rmsnorm, *rope, *attention, *argmax;

    /* Launch shapes, fixed at creation (they are specialization constants). */
    uint32_t mv_rows, mv_tiles;   /* rows per tile, tiles per workgroup */
    uint32_t mm_wg, mm_tn, mm_tm; /* invocations per workgroup, rows x tokens per invocation */
    uint32_t attn_ppw, attn_lanes, attn_cpl; /* pairs per workgroup, lanes per pair, chunks */
};

/* Spreads n workgroups over two grid dimensions: *a <= lim_a, *a * *b >= n. Shaders
 * rebuild the linear index as b_id * a + a_id and skip what lies past n. A *b over its
 * limit is caught by ember_vk_cmd_dispatch and reported at submit. */
void ember_k_grid(uint32_t n, uint32_t lim_a, uint32_t *a, uint32_t *b);

static inline uint32_t ember_k_ceil(uint64_t a, uint64_t b) { return (uint32_t)((a + b - 1) / b); }

#endif
