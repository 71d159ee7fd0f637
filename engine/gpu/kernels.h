/* kernels.h — the compute pipelines behind the ember_k_* recording functions, created
 * once per device with the variants and launch shapes its capabilities call for
 * (kernels.c). The recording functions, one per shader job, are in kernels_linear.h,
 * kernels_attention.h and kernels_rows.h. Each records its dispatch(es) into a command
 * buffer; none inserts a barrier: the caller (forward.c) orders dependent calls with
 * ember_vk_cmd_barrier.
 *
 * Activations are f32, row-major, one row per token, rows tightly packed.
 * Library-internal. */
#ifndef EMBER_KERNELS_H
#define EMBER_KERNELS_H

#include <stdbool.h>

#include "platform/vk.h"

typedef struct ember_kernels ember_kernels;

/* Creates every pipeline once, choosing variants from the device caps. */
ember_status ember_kernels_create(ember_vk *vk, ember_kernels **out, ember_err *err);
void ember_kernels_destroy(ember_kernels *k);

/* Choices that tests and benchmarks override; zero means the default. None of them
 * changes a result of ember_k_linear by a single bit. */
typedef struct ember_kernels_opts {
    bool no_subgroup;         /* use the Vulkan 1.2 core variants even when the device
                                 has subgroup operations */
    bool no_texel;            /* read weights and x (attention: K and V) from storage
                                 buffers even when the device has uniform texel buffers */
    uint32_t linear_tm;       /* tokens per linear tile: 1, 2, 3, 4 or 8 (default: by n_tok) */
    uint32_t linear_tpw;      /* tokens per linear workgroup, rounded up to the tile
                                 (default: by n_tok) */
} ember_kernels_opts;

ember_status ember_kernels_create_opts(ember_vk *vk, const ember_kernels_opts *opts,
                                       ember_kernels **out, ember_err *err);

/* Gives an activation buffer that will be a linear input (f32 rows) the texel view the
 * kernels read it through, when they read through texel views and the buffer fits one;
 * otherwise leaves it as is (the linear then reads it as a storage buffer). Create once:
 * the view lives as long as arena a. */
ember_status ember_kernels_input_view(const ember_kernels *k, ember_vk_arena *a, ember_vk_span *x,
                                      ember_err *err);

/* Whether the linear reads weights and x through texel views (when both have them). */
bool ember_kernels_texel(const ember_kernels *k);

#endif
