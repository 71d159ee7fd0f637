/* kernels_internal.h — the pipelines and launch shapes behind ember_kernels, shared by
 * kernels.c (creation), kernels_linear.c, kernels_attention.c and kernels_rows.c. */
#ifndef EMBER_KERNELS_INTERNAL_H
#define EMBER_KERNELS_INTERNAL_H

#include "platform/os_thread.h"

#include "engine/model/dtype.h"
#include "gpu_weight.h"
#include "kernels.h"

/* Dtype slots of the linear pipelines: F32, F16, Q8_0 (repacked at upload), then the block
 * types read as they lie in the file (shaders/types), in kernels.c's DT_TYPES order. */
enum {
    DT_SLOT_F32, DT_SLOT_F16, DT_SLOT_Q8,
    DT_SLOT_Q4_0, DT_SLOT_Q4_1, DT_SLOT_Q5_0, DT_SLOT_Q5_1, DT_SLOT_Q2_K, DT_SLOT_Q3_K, DT_SLOT_Q4_K,
    DT_SLOT_Q5_K, DT_SLOT_Q6_K, DT_SLOT_IQ4_NL, DT_SLOT_IQ4_XS, DT_SLOT_BF16, DT_SLOT_MXFP4,
    DT_SLOTS
};

/* The linear slot of a weight type the kernels read (-1: none), and the columns of one
 * unit of its shader (rows must be whole units). */
int ember_k_dt_slot(ember_dtype t);
uint32_t ember_k_unit_cols(ember_dtype t);

/* How the linear shader reads weights and x. */
enum { LIN_STORAGE, LIN_TEXEL, LIN_KINDS };
/* Whether the linear shader RMS-normalises x as it reads it (the fused RMSNorm). */
enum { LIN_PLAIN, LIN_NORM, LIN_NORMS };

/* Attention pipelines: [cache type: F32, Q8_0][K/V read from storage or texel buffers]
 * [head size class: chunks per lane][tile: small (decode) or large (prefill)]. */
enum { ATT_F32, ATT_Q8, ATT_F16, ATT_KV_TYPES };
enum { ATT_STORAGE, ATT_TEXEL, ATT_KINDS };
enum { ATT_SMALL, ATT_LARGE, ATT_SPLIT, ATT_TILES }; /* ATT_SPLIT: the small tile, split-K */
#define ATT_CLASSES 4          /* head sizes up to 32, 64, 128, 256 */
#define EMBER_ATT_MAX_HEAD 256 /* the largest head_dim attention serves, on any device */

/* Tile shapes of the linear shader: tokens per tile (TM) 1, 2, 3, 4 (decode batches,
 * tokens looped inside the workgroup) and 8 (prefill). The shape never changes the bits
 * of an output (shaders/linear.glsl), only the speed. */
#define LIN_SHAPES 5

/* The matrix family (shaders/linear_mm.comp): tiles of 64 rows x 16 tokens (decode
 * batches) or 64, 128 invocations; rows must be whole steps of MM_COLS columns. */
enum { MM_SMALL, MM_LARGE, MM_SHAPES };
#define MM_ROWS 64
#define MM_COLS 32
#define MM_WG 128
#define MM_COOP_SUBGROUP 32 /* ... as 4 subgroups of 32 in its COOPMAT variants */
static inline uint32_t ember_k_mm_tokens(int shape) { return shape == MM_SMALL ? 16 : 64; }

/* Every pipeline has an id: its place in one numbering (kernels.c maps an id to its
 * field of ember_kernels and to what it is made from). */
enum {
    PIPE_LINEAR = 0,                                   /* + ember_k_linear_id */
    PIPE_GENERIC = DT_SLOTS * LIN_KINDS * LIN_SHAPES * LIN_NORMS, /* + 0: F32, 1: F16 */
    PIPE_MM = PIPE_GENERIC + 2,                        /* + slot * MM_SHAPES + shape */
    PIPE_EMBED = PIPE_MM + DT_SLOTS * MM_SHAPES,
    PIPE_RMSNORM,
    PIPE_ARGMAX,
    PIPE_ROPE,
    PIPE_ROPE_Q8,
    PIPE_ROPE_F16,
    PIPE_ATTN_MERGE,                                   /* split-K attention's second pass */
    PIPE_TOPK,                                         /* a logits row's best candidates */
    PIPE_ATTENTION,                                    /* + ember_k_attention_id */
    PIPE_MOE = PIPE_ATTENTION + ATT_KV_TYPES * ATT_KINDS * ATT_CLASSES * ATT_TILES, /* + ember_k_moe_id */
    PIPE_MOE_ROUTE = PIPE_MOE + DT_SLOTS * LIN_KINDS * LIN_SHAPES,
    PIPE_MOE_COMBINE,
    PIPE_COUNT,
};
_Static_assert(PIPE_COUNT <= 64 * EMBER_KERNELS_SET_WORDS, "ember_kernels_set holds every pipeline id");

static inline uint32_t ember_k_linear_id(int d, int kind, int shape, int norm)
{
    return PIPE_LINEAR + (((uint32_t)d * LIN_KINDS + (uint32_t)kind) * LIN_SHAPES + (uint32_t)shape) * LIN_NORMS +
           (uint32_t)norm;
}

static inline uint32_t ember_k_moe_id(int d, int kind, int shape)
{
    return PIPE_MOE + ((uint32_t)d * LIN_KINDS + (uint32_t)kind) * LIN_SHAPES + (uint32_t)shape;
}

static inline uint32_t ember_k_attention_id(int t, int kind, uint32_t cls, int tile)
{
    uint32_t i = ((uint32_t)t * ATT_KINDS + (uint32_t)kind) * ATT_CLASSES + cls;
    return PIPE_ATTENTION + i * ATT_TILES + (uint32_t)tile;
}

typedef struct ember_lin_shape {
    uint32_t tm;      /* tokens per tile */
    uint32_t tn;      /* rows per tile: 8 or 16 */
    uint32_t ng;      /* tiles per workgroup (workgroup = ng * lin_lanes invocations) */
    uint32_t unroll;  /* units per lane per loop iteration */
    uint32_t min_tok; /* calls with fewer tokens do not use this shape (0: any) */
    bool stage;       /* the workgroup stages x in shared memory (linear.comp's STAGE) */
} ember_lin_shape;

struct ember_kernels {
    ember_vk *vk;
    ember_vk_caps caps;
    /* Making pipelines (ember_kernels_make) is serialised: engines of one model may be
     * created from different threads. A pipeline field below is written once, under mu,
     * before anything that records it; recording reads it without the lock. */
    ember_mutex mu;
    ember_vk_pipeline_cache *cache; /* NULL: no on-disk cache */
    uint32_t n_pipelines;       /* made so far */
    bool subgroup;              /* subgroup-arithmetic variants of the row kernels */
    bool lin_subgroup;          /* linear combines partials with subgroupShuffleXor */
    uint32_t lin_lanes;         /* lanes per linear tile (NPART): 8, 16, 32, 64 */
    bool int_dot;               /* Q8_0 and integer block types by integer dot products (INT_DOT) */
    bool fp16_dot;              /* F16 and Q8_0 units in fp16 arithmetic (FP16_DOT) */
    bool matrix;                /* every linear of whole MM_COLS steps: linear_mm.comp */
    int mm_units;               /* ... by EMBER_MM_FMA, _NV or _KHR (kernels.h) */
    int stage;                  /* ember_kernels_opts.linear_stage */
    bool texel;                 /* texel-buffer linear pipelines exist and are preferred */
    uint32_t force_tm, force_tpw; /* ember_kernels_opts overrides, 0 = automatic */
    uint32_t force_groups, force_rows;
    bool fuse_norm;             /* the products after an RMSNorm normalise x themselves */
    bool attn_split;            /* decode attention may split its positions (split-K) */
    uint32_t attn_chunk_log2;   /* positions per attention chunk: 1 << it (attn_merge.glsl) */

    ember_vk_pipeline *linear[DT_SLOTS][LIN_KINDS][LIN_SHAPES][LIN_NORMS];
    ember_vk_pipeline *linear_generic[2]; /* F32, F16 with cols not a multiple of 4 / 8 */
    ember_vk_pipeline *mm[DT_SLOTS][MM_SHAPES]; /* the matrix family */
    ember_vk_pipeline *embed, *rmsnorm, *rope, *argmax;
    ember_vk_pipeline *rope_q8; /* the same over an EMBER_KV_Q8_0 cache */
    ember_vk_pipeline *rope_f16; /* ... and over an EMBER_KV_F16 cache */
    ember_vk_pipeline *attn_merge;
    ember_vk_pipeline *topk;    /* shaders/topk.comp, the push block of argmax */
    ember_vk_pipeline *attention[ATT_KV_TYPES][ATT_KINDS][ATT_CLASSES][ATT_TILES];
    ember_vk_pipeline *linear_moe[DT_SLOTS][LIN_KINDS][LIN_SHAPES]; /* linear.comp's MOE */
    ember_vk_pipeline *moe_route, *moe_combine;

    /* Launch shapes, fixed at creation (they are specialization constants). */
    ember_lin_shape lin[LIN_SHAPES];
    bool attn_subgroup;         /* attention splits head_dim over a subgroup (subgroupAdd) */
    uint32_t attn_tpw, attn_lanes; /* tiles per workgroup, lanes per tile */
    uint32_t attn_classes;      /* head size classes (pipelines per cache type and kind) */
    uint32_t attn_cpl[ATT_CLASSES];   /* per class: vec4 chunks of head_dim per lane */
    uint32_t attn_slots[ATT_CLASSES][ATT_TILES]; /* per class: (token, head) pairs per tile */
};

/* Makes, unless they exist, rope_store for cache type t (ATT_F32, ATT_Q8) and the
 * attention pipelines of head size class cls for it: both tiles, in the binding kinds
 * ember_kernels_kv_view can lead to. ember_kernels_check_attn calls it for a shape it
 * accepts. Thread-safe. */
ember_status ember_kernels_prepare_attn(ember_kernels *k, int t, uint32_t cls, ember_err *err);

/* Push constants, field for field the Push blocks of the shaders (4-byte scalars, no
 * padding); the pipelines are created with their sizes. Each size is asserted against
 * its shader's block, counted by hand, so a struct changed alone stops the build; a
 * shader block grown alone is a validation-layer error in the tests. */
typedef struct linear_push {
    uint32_t cols, n_tok, mode, ldy;
    uint32_t out0, n_out, step, wgx;
    uint32_t off0, lim0, off1, lim1;
    uint32_t tpw, xrow0, yrow0;
    float eps;
    float oscale, ocap;
    uint32_t e0, erows, xdiv, nexp;
    uint32_t bias;
    uint32_t args; /* MOE: which of moe_route's counts an indirect dispatch took (UINT32_MAX: direct) */
} linear_push;
_Static_assert(sizeof(linear_push) == 96, "linear_push: the Push block of shaders/linear.glsl");

typedef struct moe_route_push {
    uint32_t n_tok, nexp, k, gating;
    uint32_t norm;
    float scale;
    uint32_t bias;
    uint32_t n_parts;     /* the grouped products' dispatches to write counts for */
    uint32_t parts[6][4]; /* each: its first expert, the end of its experts, workgroups along x and z */
} moe_route_push;
_Static_assert(sizeof(moe_route_push) == 128, "moe_route_push: the Push block of shaders/moe_route.comp");

typedef struct moe_combine_push {
    uint32_t n_tok, dim, k, wgx;
    float scale;
} moe_combine_push;
_Static_assert(sizeof(moe_combine_push) == 20, "moe_combine_push: the Push block of shaders/moe_combine.comp");

typedef struct embed_push {
    uint32_t cols, n_tok, row0, n_rows;
    uint32_t dtype, wgx;
    float scale;
} embed_push;
_Static_assert(sizeof(embed_push) == 28, "embed_push: the Push block of shaders/embed.comp");

typedef struct rmsnorm_push {
    uint32_t n, dim, use_rows, wgx;
    float eps;
    uint32_t add;
    float scale;
} rmsnorm_push;
_Static_assert(sizeof(rmsnorm_push) == 28, "rmsnorm_push: the Push block of shaders/rmsnorm.comp");

typedef struct argmax_push {
    uint32_t n_rows, n_cols, wgx;
} argmax_push;
_Static_assert(sizeof(argmax_push) == 12, "argmax_push: the Push block of shaders/argmax.comp and topk.comp");

typedef struct rope_push {
    uint32_t n_heads, n_kv_heads, head_dim, rope_dim;
    uint32_t block_size, max_blocks, n_tok, wgx;
    float log2_base, pos_scale;
    uint32_t flags, group;
    float ext_factor, corr_lo, corr_hi, mscale;
    float eps, temp_scale, temp_floor;
} rope_push;
_Static_assert(sizeof(rope_push) == 76, "rope_push: the Push block of shaders/rope_store.comp");

typedef struct attention_push {
    uint32_t n_heads, n_kv_heads, head_dim, block_size;
    uint32_t max_blocks, n_tok, wgx;
    float scale;
    uint32_t group_log2, tile_tok, tile_heads, row0;
    uint32_t chunk_log2, n_chunks;
    uint32_t window;
    float softcap;
    uint32_t sinks;
} attention_push;
_Static_assert(sizeof(attention_push) == 68, "attention_push: the Push block of shaders/attention.comp");

typedef struct attn_merge_push {
    uint32_t n_pairs, d4, n_chunks, out0, wgx, n_heads, sinks;
} attn_merge_push;
_Static_assert(sizeof(attn_merge_push) == 28, "attn_merge_push: the Push block of shaders/attention_merge.comp");

/* Spreads n workgroups over two grid dimensions: *a <= lim_a, *a * *b >= n. Shaders
 * rebuild the linear index as b_id * a + a_id and skip what lies past n. A *b over its
 * limit is caught by ember_vk_cmd_dispatch and reported at submit. */
void ember_k_grid(uint32_t n, uint32_t lim_a, uint32_t *a, uint32_t *b);

static inline uint32_t ember_k_ceil(uint64_t a, uint64_t b) { return (uint32_t)((a + b - 1) / b); }

#endif
