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

#include "ember.h"
#include "engine/model/dtype.h"
#include "platform/vk.h"
#include "platform/vk_pipeline_cache.h"

typedef struct ember_kernels ember_kernels;

/* Creates every pipeline once, choosing variants from the device caps. */
ember_status ember_kernels_create(ember_vk *vk, ember_kernels **out, ember_err *err);
void ember_kernels_destroy(ember_kernels *k);

/* Choices that tests and benchmarks override; zero means the default. None of them but
 * linear_lanes, int_dot, fp16_dot and matrix changes a result of ember_k_linear by a single bit. */
typedef struct ember_kernels_opts {
    bool no_subgroup;         /* use the Vulkan 1.2 core variants even when the device
                                 has subgroup operations */
    bool no_texel;            /* read weights and x (attention: K and V) from storage
                                 buffers even when the device has uniform texel buffers */
    uint32_t linear_tm;       /* tokens per linear tile: 1, 2, 3, 4 or 8 (default: by n_tok) */
    uint32_t linear_tpw;      /* tokens per linear workgroup, rounded up to the tile
                                 (default: by n_tok) */
    uint32_t linear_groups;   /* lane groups (tiles) per linear workgroup, 1 to 32 (default:
                                 by device), raised to whole subgroups and lowered to what
                                 the device and the shared-memory baseline allow */
    uint32_t linear_rows;     /* rows per linear tile: 8 or 16; 16 needs the subgroup
                                 kernels (default: by device and tile) */
    uint32_t linear_lanes;    /* lanes per linear tile, the partial sums of an output: 8,
                                 16, 32 or 64 (default: the device table's); the subgroup
                                 kernels need a subgroup at least this wide, else the
                                 shared-memory ones run. Unlike the options above, another
                                 count sums in another order: other bits, as batch
                                 invariant (shaders/linear.glsl) */
    bool on_demand;           /* create no pipeline now: a model asks for its own
                                 (ember_kernels_make), ember_kernels_check_attn for a KV
                                 cache's, ember_kernels_input_view for the storage kind
                                 (default: every pipeline at creation, but the linear
                                 ones of the block types Q4_0 ... IQ4_XS, BF16, which
                                 ember_kernels_make makes for the weights that need them) */
    const char *pipeline_cache_dir; /* folder of the on-disk VkPipelineCache
                                       (platform/vk_pipeline_cache.h); NULL: none */
    /* The fused RMSNorm (ember_k_linear_norm): EMBER_NORM_FUSION_AUTO fuses on GPUs and
     * not on lavapipe (docs/kernels.md). Fused or not, a result is batch invariant; the
     * two round the normalised x in different orders. */
    int norm_fusion;
    /* Split-K attention (ember_k_attention_split): AUTO splits the positions of few
     * decode rows over workgroups on GPUs, not on lavapipe. Kernels that split merge
     * every pair's positions in chunks of attn_chunk (0: 256; a power of two, at least
     * EMBER_ATTN_CHUNK_MIN; tests make it small) in order, split or not, so a row's bits
     * do not depend on whether it was split; kernels that do not split keep one state
     * per pair (another rounding, the same in every batch). */
    int attn_split;
    uint32_t attn_chunk;
    /* Q8_0 and integer block-type products by integer dot products on x quantized to
     * int8 per block
     * (linear.comp's INT_DOT; another rounding of x, as batch invariant): ON wherever the
     * device has shaderIntegerDotProduct; AUTO does not use them yet (no GPU has timed
     * them: docs/kernels.md). */
    int int_dot;
    /* F16 and Q8_0 units in fp16 arithmetic (linear.comp's FP16_DOT: x scaled by a power
     * of two and rounded to fp16 per unit, sums of four columns in fp16, the rest in fp32;
     * batch invariant): ON wherever the device has shaderFloat16 (Q8_0 only where int_dot
     * does not take it); AUTO not yet (not timed on a GPU). */
    int fp16_dot;
    /* x staged in shared memory by the linear's workgroup for all its tiles (linear.comp's
     * STAGE; the same bits either way): ON stages every tile shape whose staged x fits the
     * device's shared memory; AUTO stages none yet: 1.2-2.7x slower on lavapipe, and not
     * timed on a GPU (bench/gpu-check.sh's kernel sweep does: docs/kernels.md). */
    int linear_stage;
    /* The matrix family (shaders/linear_mm.comp: w and x rounded to fp16, fp32 sums, a
     * device-wide choice like the lanes): ON takes it where the device has shaderFloat16,
     * through cooperative matrices where it has them (coop: EMBER_COOP_*); AUTO not yet
     * (not timed on a GPU: bench/gpu-check.sh does). */
    int matrix;
    int coop;
} ember_kernels_opts;

/* norm_fusion and attn_split */
/* norm_fusion, attn_split, int_dot, linear_stage, matrix: the values of ember_kernel_opts's
 * fields (ember.h), which pass through as they are. */
enum { EMBER_NORM_FUSION_AUTO = EMBER_KERNEL_AUTO, EMBER_NORM_FUSION_ON = EMBER_KERNEL_ON, EMBER_NORM_FUSION_OFF = EMBER_KERNEL_OFF };
enum { EMBER_ATTN_SPLIT_AUTO = EMBER_KERNEL_AUTO, EMBER_ATTN_SPLIT_ON = EMBER_KERNEL_ON, EMBER_ATTN_SPLIT_OFF = EMBER_KERNEL_OFF };
enum { EMBER_INT_DOT_AUTO = EMBER_KERNEL_AUTO, EMBER_INT_DOT_ON = EMBER_KERNEL_ON, EMBER_INT_DOT_OFF = EMBER_KERNEL_OFF };
enum { EMBER_STAGE_AUTO = EMBER_KERNEL_AUTO, EMBER_STAGE_ON = EMBER_KERNEL_ON, EMBER_STAGE_OFF = EMBER_KERNEL_OFF };
enum { EMBER_MATRIX_AUTO = EMBER_KERNEL_AUTO, EMBER_MATRIX_ON = EMBER_KERNEL_ON, EMBER_MATRIX_OFF = EMBER_KERNEL_OFF };
#define EMBER_ATTN_CHUNK 256    /* attn_chunk's default */
#define EMBER_ATTN_CHUNK_MIN 32 /* the smallest attn_chunk (the forward pass sizes its
                                   split-K scratch for it) */

ember_status ember_kernels_create_opts(ember_vk *vk, const ember_kernels_opts *opts,
                                       ember_kernels **out, ember_err *err);

/* What the matrix family multiplies with: FMA units, or NV's or KHR's cooperative matrices
 * (linear_mm.comp's variants, in this order). */
enum { EMBER_MM_FMA, EMBER_MM_NV, EMBER_MM_KHR, EMBER_MM_UNITS };

/* The variants and launch shapes ember_kernels_create_opts would pick for a device with
 * these caps (the very same selection; no device needed): for `ember info`. */
typedef struct ember_kernel_choice {
    uint32_t subgroup_size;       /* the caps' default subgroup size the choices assume */
    bool row_subgroup;            /* rmsnorm/argmax reduce with subgroupAdd/Max, else a
                                     shared-memory tree */
    uint32_t row_wg;              /* their workgroup (invocations per row) */
    bool lin_subgroup;            /* linear: lane groups within a subgroup, partials
                                     combined with subgroupShuffleXor, else shared memory */
    uint32_t lin_lanes;           /* lanes per linear tile (device_table.h) */
    bool lin_int_dot;             /* Q8_0 and the integer block types by integer dot
                                     products on int8 x */
    bool lin_fp16_dot;            /* F16 and Q8_0 units in fp16 arithmetic */
    uint32_t lin_staged;          /* bit n: the linear's tiles of n tokens stage x in
                                     shared memory */
    bool lin_matrix;              /* the matrix family (linear_mm.comp) */
    int lin_matrix_units;         /* ... by EMBER_MM_FMA, _NV or _KHR */
    const char *device_class;     /* device_table.h's class name and the reason for */
    const char *lanes_why;        /* lin_lanes */
    uint32_t lin_groups;          /* lane groups (tiles) per workgroup, decode tiles */
    uint32_t lin_rows_decode;     /* rows per tile for 1-4 tokens */
    uint32_t lin_rows_prefill;    /* rows per tile of the prefill shape */
    uint32_t lin_prefill_tokens;  /* tokens per tile of the prefill shape */
    uint32_t lin_prefill_min_tok; /* calls with fewer tokens do not use it (0: any) */
    bool attn_subgroup;           /* attention: a subgroup per tile splitting head_dim,
                                     subgroupAdd per position; else an invocation per pair */
    uint32_t attn_lanes, attn_tiles_per_wg;
    uint32_t attn_classes, attn_cpl_min, attn_cpl_max; /* head-size classes, vec4s per lane */
    uint32_t attn_decode_pairs, attn_prefill_pairs;    /* (token, head) pairs per tile */
    uint32_t attn_max_head;       /* the largest head_dim attention serves here */
    bool texel;                   /* weights, x and K/V read through uniform texel views */
    bool lin_norm_fused;          /* the products after an RMSNorm normalise x themselves */
    bool attn_split;              /* few decode rows' attention split over workgroups */
    uint32_t attn_chunk;          /* positions per attention chunk */
} ember_kernel_choice;

/* opts may be NULL (the defaults). */
void ember_kernels_describe(const ember_vk_caps *caps, const ember_kernels_opts *opts,
                            ember_kernel_choice *out);

/* A set of pipelines, by id (kernels_internal.h): what a model or an engine will record.
 * ember_kernels_want_* (kernels_linear.h, kernels_rows.h) add to it. */
#define EMBER_KERNELS_SET_WORDS 10
typedef struct ember_kernels_set {
    uint64_t bits[EMBER_KERNELS_SET_WORDS];
} ember_kernels_set;

static inline void ember_kernels_set_add(ember_kernels_set *s, uint32_t id)
{
    s->bits[id / 64] |= 1ull << (id % 64);
}

static inline bool ember_kernels_set_has(const ember_kernels_set *s, uint32_t id)
{
    return (s->bits[id / 64] >> (id % 64)) & 1;
}

/* Makes the pipelines of want that do not exist yet, as one batch on worker threads
 * (platform/vk_pipeline.h) through the pipeline cache, whose file is rewritten when its
 * data changed. Thread-safe. */
ember_status ember_kernels_make(ember_kernels *k, const ember_kernels_set *want, ember_err *err);

typedef struct ember_kernels_stats {
    uint32_t pipelines;                  /* made so far */
    ember_vk_pipeline_cache_stats cache; /* all zero without an on-disk cache */
    char cache_path[1024];               /* "" without one */
} ember_kernels_stats;

void ember_kernels_get_stats(ember_kernels *k, ember_kernels_stats *out);

/* Gives an activation buffer that will be a linear input (f32 rows) the texel view the
 * kernels read it through, when they read through texel views and the buffer fits one;
 * otherwise leaves it as is (the linear then reads it as a storage buffer, whose
 * pipelines it makes). Create once: the view lives as long as arena a. */
ember_status ember_kernels_input_view(ember_kernels *k, ember_vk_arena *a, ember_vk_span *x, ember_err *err);

/* Whether the linear of weights of type t takes integer dot products on int8 x
 * (ember_kernels_opts.int_dot: Q8_0 and the block types with integer codes, not BF16). */
bool ember_kernels_int_dot(const ember_kernels *k, ember_dtype t);
/* Whether a linear of type t computes its units in fp16 (linear.comp's FP16_DOT: F16 and
 * Q8_0, where integer dot products do not take it). */
bool ember_kernels_fp16_dot(const ember_kernels *k, ember_dtype t);
/* Whether a linear of cols columns takes the matrix family (w and x rounded to fp16). */
bool ember_kernels_matrix(const ember_kernels *k, uint32_t cols);

/* Whether the linear reads weights and x through texel views (when both have them). */
bool ember_kernels_texel(const ember_kernels *k);

#endif
