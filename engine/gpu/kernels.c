/* kernels.c — the compute pipelines, with the variant and launch shape chosen from the
 * device caps: every one at creation (tests), or on demand, only those a model and its
 * engines use (ember_kernels_make), in parallel and through the on-disk pipeline cache.
 * The ember_k_* recording functions live in kernels_linear.c, kernels_attention.c and
 * kernels_rows.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "device_table.h"
#include "ember_shaders.h"
#include "engine/sampling/candidates.h"
#include "kernels_internal.h"
#include "platform/vk_pipeline_cache.h"

typedef struct spv {
    const uint32_t *code;
    const size_t *bytes;
} spv;

#define SPV(n) {ember_spv_##n, &ember_spv_##n##_bytes}

#define LIN4(n) {{SPV(linear_##n), SPV(linear_##n##_sg)}, {SPV(linear_##n##_tx), SPV(linear_##n##_tx_sg)}}
#define MM3(n) {SPV(linear_mm_##n), SPV(linear_mm_##n##_nv), SPV(linear_mm_##n##_khr)}
#define MOE4(n) {{SPV(linear_moe_##n), SPV(linear_moe_##n##_sg)}, {SPV(linear_moe_##n##_tx), SPV(linear_moe_##n##_tx_sg)}}
#define NONE {{{0}}}
#define DT(n) LIN4(n), MM3(n), LIN4(n##_idot), NONE, MOE4(n) /* integer codes: an INT_DOT variant */
#define DT_FLOAT(n) LIN4(n), MM3(n), NONE, NONE, MOE4(n)     /* float values: none */

/* The weight types the linear shaders read: slot, name and variants, in slot order.
 * code: linear.comp's [binding kind][subgroup variant]; mm: linear_mm.comp's [EMBER_MM_*:
 * by FMA, NV's or KHR's cooperative matrices]; idot: linear.comp's INT_DOT variants, fp16:
 * its FP16_DOT ones (code NULL: none). */
static const struct {
    ember_dtype type;
    const char *name;
    uint32_t unit;  /* columns of one unit of linear.comp */
    spv code[LIN_KINDS][2];
    spv mm[EMBER_MM_UNITS];
    spv idot[LIN_KINDS][2];
    spv fp16[LIN_KINDS][2];
    spv moe[LIN_KINDS][2];  /* linear.comp's MOE variants: the grouped expert product */
} DT_TYPES[DT_SLOTS] = {
    {EMBER_DTYPE_F32, "f32", 4, DT_FLOAT(f32)},
    {EMBER_DTYPE_F16, "f16", 8, LIN4(f16), MM3(f16), NONE, LIN4(f16_h), MOE4(f16)},
    {EMBER_DTYPE_Q8_0, "q8_0", 32, LIN4(q8), MM3(q8), LIN4(q8_idot), LIN4(q8_h), MOE4(q8)},
    {EMBER_DTYPE_Q4_0, "q4_0", 32, DT(q4_0)},
    {EMBER_DTYPE_Q4_1, "q4_1", 32, DT(q4_1)},     {EMBER_DTYPE_Q5_0, "q5_0", 32, DT(q5_0)},
    {EMBER_DTYPE_Q5_1, "q5_1", 32, DT(q5_1)},     {EMBER_DTYPE_Q2_K, "q2_k", 32, DT(q2_k)},
    {EMBER_DTYPE_Q3_K, "q3_k", 32, DT(q3_k)},     {EMBER_DTYPE_Q4_K, "q4_k", 32, DT(q4_k)},
    {EMBER_DTYPE_Q5_K, "q5_k", 32, DT(q5_k)},     {EMBER_DTYPE_Q6_K, "q6_k", 32, DT(q6_k)},
    {EMBER_DTYPE_IQ4_NL, "iq4_nl", 32, DT(iq4_nl)}, {EMBER_DTYPE_IQ4_XS, "iq4_xs", 32, DT(iq4_xs)},
    {EMBER_DTYPE_BF16, "bf16", 32, DT_FLOAT(bf16)}, {EMBER_DTYPE_MXFP4, "mxfp4", 32, DT(mxfp4)},
};

int ember_k_dt_slot(ember_dtype t)
{
    for (int d = 0; d < DT_SLOTS; d++)
        if (DT_TYPES[d].type == t) return d;
    return -1;
}

uint32_t ember_k_unit_cols(ember_dtype t)
{
    int d = ember_k_dt_slot(t);
    return d < 0 ? 0 : DT_TYPES[d].unit;
}
static const spv LINEAR_GENERIC[2][2] = {{SPV(linear_f32_generic), SPV(linear_f32_generic_sg)},
                                         {SPV(linear_f16_generic), SPV(linear_f16_generic_sg)}};
static const spv RMSNORM[2] = {SPV(rmsnorm), SPV(rmsnorm_sg)};
/* [cache type][binding kind][subgroup variant] */
static const spv ATTENTION[ATT_KV_TYPES][ATT_KINDS][2] = {
    {{SPV(attention), SPV(attention_sg)}, {SPV(attention_tx), SPV(attention_tx_sg)}},
    {{SPV(attention_q8), SPV(attention_q8_sg)}, {SPV(attention_q8_tx), SPV(attention_q8_tx_sg)}},
    {{SPV(attention_f16), SPV(attention_f16_sg)}, {SPV(attention_f16), SPV(attention_f16_sg)}}, /* no texel kind */
};
static const spv ARGMAX[2] = {SPV(argmax), SPV(argmax_sg)};
static const spv EMBED = SPV(embed);
static const spv ROPE = SPV(rope_store);
static const spv ROPE_Q8 = SPV(rope_store_q8);
static const spv ROPE_F16 = SPV(rope_store_f16);
static const spv ATTN_MERGE = SPV(attention_merge);
static const spv TOPK = SPV(topk);
static const spv MOE_ROUTE = SPV(moe_route);
static const spv MOE_COMBINE = SPV(moe_combine);

void ember_k_grid(uint32_t n, uint32_t lim_a, uint32_t *a, uint32_t *b)
{
    *a = n < lim_a ? n : lim_a;
    *b = *a ? ember_k_ceil(n, *a) : 0;
}

/* Whether linear shape l's staged x (linear.comp's xs: lanes x tm tokens x a piece of at
 * most 32 vec4s in the mat-vec, a block type's run, and 8 in a mat-mat tile) fits the
 * device's shared memory beside the baseline's partials. */
static bool stage_fits(const ember_kernels *k, const ember_lin_shape *l)
{
    uint32_t lanes = k->lin_lanes, xs = lanes * l->tm * (l->tm == 1 ? 32 : 8) * 16;
    uint32_t red = k->lin_subgroup ? 0 : (l->ng * l->tn * l->tm * lanes + l->ng * lanes) * 4;
    return xs + red <= k->caps.max_shared;
}

/* Launch shapes. Linear: a lane group of lin_lanes owns a tile of tn rows x tm tokens. On
 * lavapipe (is_cpu) a texel fetch is a function call (docs/kernels.md), so the shapes
 * that win make the fewest fetches per multiply-add: 16 rows per group (each x fetch
 * serves 16 rows), one group per workgroup (one 8-wide subgroup, no shared memory).
 * GPUs: 64 invocations a workgroup. The shared-memory baseline keeps ng * tn * tm * lanes
 * floats within the 16 KiB every device has. None of this changes a result. */
static void choose_shapes(ember_kernels *k)
{
    const ember_vk_caps *c = &k->caps;
    uint32_t sg = c->subgroup_size ? c->subgroup_size : 32, lanes = k->lin_lanes;
    static const uint32_t tm[LIN_SHAPES] = {1, 2, 3, 4, 8};
    for (int i = 0; i < LIN_SHAPES; i++) {
        ember_lin_shape *l = &k->lin[i];
        l->tm = tm[i];
        /* Two rows per lane halve the x loads per row (lavapipe: 15% on the Q8_0 mat-vec,
         * up to 2x on its mat-mat); the shared-memory baseline keeps one, and so do GPU
         * mat-mat tiles (registers; not measured). */
        l->tn = k->lin_subgroup && (c->is_cpu || tm[i] <= 4) ? 16 : 8;
        l->unroll = tm[i] <= 2 ? 2 : 1;
        /* lavapipe: a lane's tn x tm accumulators live in 16 vector registers, and 8
         * tokens of 16 rows spill twice as much as 4, which the x loads saved do not repay
         * below 17 tokens (docs/kernels.md, "Tokens per tile on lavapipe"). */
        l->min_tok = c->is_cpu && tm[i] > 4 ? 17 : 0;
        l->ng = c->is_cpu || lanes >= 64 ? 1 : 64 / lanes;
        if (k->force_groups) l->ng = k->force_groups;
        if (k->force_rows == 8 || (k->force_rows == 16 && k->lin_subgroup)) l->tn = k->force_rows;
        /* A workgroup is whole subgroups within the device's limit; the baseline stays
         * within 16 KiB of shared memory (64 lanes x 8 rows x 8 tokens: one group). */
        if (k->lin_subgroup && l->ng * lanes < sg) l->ng = sg / lanes;
        while (l->ng > 1 && l->ng * lanes > (k->lin_subgroup ? c->max_wg_pinned : c->max_wg_invocations)) l->ng /= 2;
        if (!k->lin_subgroup && l->ng * l->tn * l->tm * lanes * 4 > 16384) l->ng = 16384 / (l->tn * l->tm * lanes * 4);
        /* Staged x: only when asked for until a GPU has timed it (kernels.h). */
        l->stage = k->stage == EMBER_STAGE_ON && stage_fits(k, l);
    }
}

/* Attention: a tile of (token, query head) pairs sharing their K/V rows per subgroup,
 * whose lanes split head_dim; a class per head size up to 32, 64, 128, 256 with as many
 * chunks per lane as the subgroup's lanes need to cover it (8 lanes: 1, 2, 4, 8; 4 lanes:
 * 2, 4, 8, 16; 32 lanes: 1, 2; 64 or more: 1), classes that come out alike merged. Every pair of a tile costs its
 * arithmetic whether it has work or not (lavapipe masks, it does not branch), so each
 * class has a small tile for decode steps (2 pairs: the query heads of a KV head in
 * common GQA models) and a large one for prefill chunks (16 pairs over the chunks per
 * lane: lavapipe compiles a pipeline at its first use, in seconds that grow with
 * pairs x chunks). One tile per workgroup on lavapipe spreads a decode step's few tiles
 * over both cores. The baseline gives a tile (one pair) to one invocation. */
static void choose_attention(ember_kernels *k)
{
    const ember_vk_caps *c = &k->caps;
    uint32_t sg = c->subgroup_size ? c->subgroup_size : 32;
    k->attn_lanes = k->attn_subgroup ? sg : 1;
    k->attn_tpw = k->attn_subgroup ? (c->is_cpu ? 1 : 4) : 64;
    k->attn_classes = 0;
    for (uint32_t i = 0; i < (k->attn_subgroup ? ATT_CLASSES : 1); i++) {
        uint32_t chunks = (EMBER_ATT_MAX_HEAD >> (ATT_CLASSES - 1 - i)) / 4; /* vec4s of head size 32 << i */
        uint32_t cpl = k->attn_subgroup ? (chunks + k->attn_lanes - 1) / k->attn_lanes : 64;
        if (k->attn_classes && k->attn_cpl[k->attn_classes - 1] == cpl) continue;
        uint32_t n = k->attn_classes++;
        k->attn_cpl[n] = cpl;
        /* Pairs x chunks bounds a lane's registers and lavapipe's compile time. */
        k->attn_slots[n][ATT_LARGE] = k->attn_subgroup ? (cpl < 8 ? 16 / cpl : 2) : 1;
        k->attn_slots[n][ATT_SMALL] = k->attn_subgroup ? 2 : 1;
        k->attn_slots[n][ATT_SPLIT] = k->attn_slots[n][ATT_SMALL];
    }
}

/* Workgroup of the per-row reductions: one subgroup on lavapipe (no shared memory at
 * all), four on GPUs; the shared-memory baseline needs a power of two. */
static uint32_t row_wg(const ember_kernels *k)
{
    if (!k->subgroup) return 64;
    return k->caps.is_cpu ? k->caps.subgroup_size : 4 * k->caps.subgroup_size;
}

/* topk's workgroup: 256 where the device allows (a power of two). A row is read in 5 to 8
 * passes, and llvmpipe ends a shader after 65535 loop iterations in all (docs/kernels.md):
 * 128 lanes (lavapipe at 4 lanes: 32 subgroups at most) keep a row of 256k logits at
 * 16,000. */
static uint32_t topk_wg(const ember_kernels *k)
{
    uint32_t wg = 256;
    while (wg > 1 && wg > k->caps.max_wg_pinned) wg /= 2; /* at most max_wg_invocations (vk_caps.h) */
    return wg;
}

/* ---- pipeline ids and what each is made from ----------------------------------------- */

/* One pipeline to make: its field in ember_kernels and its description (which points
 * into the job: jobs never move while they are made). */
typedef struct job {
    ember_vk_pipeline **slot;
    ember_vk_pipeline_desc d;
    char name[64];
    ember_vk_spec sp[8];
} job;

static ember_vk_pipeline **slot_of(ember_kernels *k, uint32_t id)
{
    if (id == PIPE_MOE_ROUTE) return &k->moe_route;
    if (id == PIPE_MOE_COMBINE) return &k->moe_combine;
    if (id >= PIPE_MOE) {
        uint32_t i = id - PIPE_MOE;
        return &k->linear_moe[i / (LIN_KINDS * LIN_SHAPES)][i / LIN_SHAPES % LIN_KINDS][i % LIN_SHAPES];
    }
    if (id < PIPE_GENERIC) {
        uint32_t i = id - PIPE_LINEAR, n = i % LIN_NORMS;
        i /= LIN_NORMS;
        return &k->linear[i / (LIN_KINDS * LIN_SHAPES)][i / LIN_SHAPES % LIN_KINDS][i % LIN_SHAPES][n];
    }
    if (id < PIPE_MM) return &k->linear_generic[id - PIPE_GENERIC];
    if (id < PIPE_EMBED) return &k->mm[(id - PIPE_MM) / MM_SHAPES][(id - PIPE_MM) % MM_SHAPES];
    ember_vk_pipeline **rows[] = {&k->embed,   &k->rmsnorm,  &k->argmax,    &k->rope,
                                  &k->rope_q8, &k->rope_f16, &k->attn_merge, &k->topk};
    if (id < PIPE_ATTENTION) return rows[id - PIPE_EMBED];
    uint32_t i = id - PIPE_ATTENTION;
    return &k->attention[i / (ATT_KINDS * ATT_CLASSES * ATT_TILES)][i / (ATT_CLASSES * ATT_TILES) % ATT_KINDS]
                        [i / ATT_TILES % ATT_CLASSES][i % ATT_TILES];
}

/* Whether the pipeline exists under these choices: texel kinds only when the kernels read
 * through texel views, attention classes as chosen, one tile where both are one size. */
static bool valid(const ember_kernels *k, uint32_t id)
{
    if (id >= PIPE_MOE_ROUTE) return true;
    if (id >= PIPE_MOE) return k->texel || (id - PIPE_MOE) / LIN_SHAPES % LIN_KINDS == LIN_STORAGE;
    if (id < PIPE_GENERIC) {
        uint32_t i = id - PIPE_LINEAR;
        bool norm = i % LIN_NORMS == LIN_NORM;
        return (k->texel || i / LIN_NORMS / LIN_SHAPES % LIN_KINDS == LIN_STORAGE) && (!norm || k->fuse_norm);
    }
    if (id >= PIPE_MM && id < PIPE_EMBED) return k->matrix;
    if (id == PIPE_ATTN_MERGE) return k->attn_split;
    if (id < PIPE_ATTENTION) return true;
    uint32_t i = id - PIPE_ATTENTION, tile = i % ATT_TILES, cls = i / ATT_TILES % ATT_CLASSES;
    uint32_t kind = i / (ATT_CLASSES * ATT_TILES) % ATT_KINDS;
    bool tile_ok = tile == ATT_SMALL || (tile == ATT_SPLIT && k->attn_split) ||
                   (tile == ATT_LARGE && k->attn_slots[cls][ATT_LARGE] != k->attn_slots[cls][ATT_SMALL]);
    uint32_t t = i / (ATT_KINDS * ATT_CLASSES * ATT_TILES);
    bool kind_ok = kind == ATT_STORAGE || (k->texel && t != ATT_F16); /* F16 rows: storage only */
    return kind_ok && cls < k->attn_classes && tile_ok;
}

static void set_desc(job *j, spv code, uint32_t n_bindings, const ember_vk_binding_kind *kinds, uint32_t push,
                     uint32_t n_specs)
{
    j->d = (ember_vk_pipeline_desc){j->name, code.code, *code.bytes, n_bindings, kinds, push, j->sp, n_specs};
}

/* A linear pipeline: dtype slot, binding kind, tile shape, fused RMSNorm or not; or
 * GENERIC F32/F16 (storage, the prefill shape for every n_tok, never fused: no real model
 * has such rows). Binding 6 holds the norm's weights (the fused kind reads it). */
static void describe_linear(const ember_kernels *k, uint32_t id, job *j)
{
    static const char *generic_names[2] = {"f32_generic", "f16_generic"};
    static const ember_vk_binding_kind texel[7] = {EMBER_VK_BIND_TEXEL, EMBER_VK_BIND_STORAGE, EMBER_VK_BIND_TEXEL,
                                                   EMBER_VK_BIND_TEXEL, EMBER_VK_BIND_TEXEL, EMBER_VK_BIND_TEXEL,
                                                   EMBER_VK_BIND_STORAGE};
    bool generic = id >= PIPE_GENERIC;
    uint32_t i = generic ? 0 : (id - PIPE_LINEAR) / LIN_NORMS;
    uint32_t norm = generic ? LIN_PLAIN : (id - PIPE_LINEAR) % LIN_NORMS;
    uint32_t d = generic ? DT_SLOTS + id - PIPE_GENERIC : i / (LIN_KINDS * LIN_SHAPES);
    uint32_t kind = generic ? LIN_STORAGE : i / LIN_SHAPES % LIN_KINDS;
    uint32_t shape = generic ? LIN_SHAPES - 1 : i % LIN_SHAPES;
    const ember_lin_shape *l = &k->lin[shape];
    /* A Q8_0 unit is a whole block, already two loads per row; a block type's unit decodes
     * 32 weights. */
    uint32_t unroll = d >= DT_SLOT_Q8 && !generic ? 1 : l->unroll;
    uint32_t lanes = k->lin_lanes;
    bool stage = l->stage && !generic; /* GENERIC reads x as floats, not staged */
    ember_vk_spec sp[] = {{0, l->ng * lanes}, {1, l->tn / 8}, {2, l->tm},    {3, l->ng},
                          {4, unroll},        {5, norm},      {6, lanes}, {7, stage}};
    memcpy(j->sp, sp, sizeof sp);
    char wide[16] = ""; /* names stay as they were at 8 lanes */
    if (lanes != 8) snprintf(wide, sizeof wide, "_l%u", lanes);
    bool idot = !generic && k->int_dot && DT_TYPES[d].idot[0][0].code;
    bool fp16 = !generic && !idot && k->fp16_dot && DT_TYPES[d].fp16[0][0].code;
    snprintf(j->name, sizeof j->name, "linear_%s%s%s%s%s_m%u%s", generic ? generic_names[d - DT_SLOTS] : DT_TYPES[d].name,
             idot ? "_idot" : fp16 ? "_h" : "", kind == LIN_TEXEL ? "_tx" : "", norm == LIN_NORM ? "_norm" : "", wide,
             l->tm, stage ? "_st" : "");
    spv code = generic ? LINEAR_GENERIC[d - DT_SLOTS][k->lin_subgroup]
               : idot  ? DT_TYPES[d].idot[kind][k->lin_subgroup]
               : fp16  ? DT_TYPES[d].fp16[kind][k->lin_subgroup]
                       : DT_TYPES[d].code[kind][k->lin_subgroup];
    set_desc(j, code, 7, kind == LIN_TEXEL ? texel : NULL, sizeof(linear_push), 8);
}

/* A grouped expert product (linear.comp's MOE): dtype slot, binding kind and tile shape
 * as describe_linear's, never fused, never INT_DOT or FP16_DOT; binding 7 the groups. */
static void describe_moe(const ember_kernels *k, uint32_t id, job *j)
{
    static const ember_vk_binding_kind texel[8] = {EMBER_VK_BIND_TEXEL, EMBER_VK_BIND_STORAGE, EMBER_VK_BIND_TEXEL,
                                                   EMBER_VK_BIND_TEXEL, EMBER_VK_BIND_TEXEL, EMBER_VK_BIND_TEXEL,
                                                   EMBER_VK_BIND_STORAGE, EMBER_VK_BIND_STORAGE};
    uint32_t i = id - PIPE_MOE, d = i / (LIN_KINDS * LIN_SHAPES), kind = i / LIN_SHAPES % LIN_KINDS;
    const ember_lin_shape *l = &k->lin[i % LIN_SHAPES];
    uint32_t unroll = d >= DT_SLOT_Q8 ? 1 : l->unroll, lanes = k->lin_lanes;
    ember_vk_spec sp[] = {{0, l->ng * lanes}, {1, l->tn / 8}, {2, l->tm},    {3, l->ng},
                          {4, unroll},        {5, 0},         {6, lanes}, {7, l->stage}};
    memcpy(j->sp, sp, sizeof sp);
    snprintf(j->name, sizeof j->name, "linear_moe_%s%s_l%u_m%u%s", DT_TYPES[d].name, kind == LIN_TEXEL ? "_tx" : "",
             lanes, l->tm, l->stage ? "_st" : "");
    set_desc(j, DT_TYPES[d].moe[kind][k->lin_subgroup], 8, kind == LIN_TEXEL ? texel : NULL, sizeof(linear_push), 8);
}

/* moe_route (one workgroup for the step) and moe_combine. */
static void describe_moe_rows(const ember_kernels *k, uint32_t id, job *j)
{
    uint32_t wg = k->caps.max_wg_pinned >= 128 ? 128 : 64;
    bool route = id == PIPE_MOE_ROUTE;
    j->sp[0] = (ember_vk_spec){0, route ? wg : 64};
    snprintf(j->name, sizeof j->name, "%s", route ? "moe_route" : "moe_combine");
    set_desc(j, route ? MOE_ROUTE : MOE_COMBINE, route ? 4 : 3, NULL,
             route ? sizeof(moe_route_push) : sizeof(moe_combine_push), 1);
}

/* The matrix family: dtype slot and tile (16 or 64 tokens), storage bindings, by FMA or
 * through cooperative matrices (4 subgroups of 32: the workgroup is pinned to them). */
static void describe_mm(const ember_kernels *k, uint32_t id, job *j)
{
    static const char *units[EMBER_MM_UNITS] = {"", "_nv", "_khr"};
    uint32_t d = (id - PIPE_MM) / MM_SHAPES, tokens = ember_k_mm_tokens((int)((id - PIPE_MM) % MM_SHAPES));
    ember_vk_spec sp[] = {{0, MM_WG}, {2, tokens}};
    memcpy(j->sp, sp, sizeof sp);
    snprintf(j->name, sizeof j->name, "linear_mm_%s%s_n%u", DT_TYPES[d].name, units[k->mm_units], tokens);
    set_desc(j, DT_TYPES[d].mm[k->mm_units], 7, NULL, sizeof(linear_push), 2);
    if (k->mm_units != EMBER_MM_FMA) j->d.subgroup = MM_COOP_SUBGROUP;
}

/* embed, rmsnorm, argmax, rope_store (F32, Q8_0 and F16 caches), attention_merge, topk
 * (EMBER_CANDIDATES a row: specialization constant 1). */
static void describe_row(const ember_kernels *k, uint32_t id, job *j)
{
    const struct {
        const char *name;
        spv code;
        uint32_t bindings, push, wg;
    } r[] = {
        {"embed", EMBED, 4, sizeof(embed_push), 64},
        {"rmsnorm", RMSNORM[k->subgroup], 4, sizeof(rmsnorm_push), row_wg(k)},
        {"argmax", ARGMAX[k->subgroup], 2, sizeof(argmax_push), row_wg(k)},
        {"rope_store", ROPE, 9, sizeof(rope_push), 64},
        {"rope_store_q8", ROPE_Q8, 9, sizeof(rope_push), 64},
        {"rope_store_f16", ROPE_F16, 9, sizeof(rope_push), 64},
        {"attention_merge", ATTN_MERGE, 4, sizeof(attn_merge_push), 64},
        {"topk", TOPK, 4, sizeof(argmax_push), topk_wg(k)},
    };
    uint32_t i = id - PIPE_EMBED;
    j->sp[0] = (ember_vk_spec){0, r[i].wg};
    if (id == PIPE_TOPK) j->sp[1] = (ember_vk_spec){1, EMBER_CANDIDATES};
    snprintf(j->name, sizeof j->name, "%s", r[i].name);
    set_desc(j, r[i].code, r[i].bindings, NULL, r[i].push, id == PIPE_TOPK ? 2 : 1);
}

/* Attention per cache type, binding kind (K and V as uniform texel buffers or storage),
 * head size class and tile (the split tile: the small one, writing chunk states to the
 * scratch bindings 7 and 8 for attention_merge). */
static void describe_attention(const ember_kernels *k, uint32_t id, job *j)
{
    static const char *names[ATT_KV_TYPES] = {"attention", "attention_q8", "attention_f16"};
    static const ember_vk_binding_kind texel[10] = {EMBER_VK_BIND_STORAGE, EMBER_VK_BIND_STORAGE,
                                                    EMBER_VK_BIND_STORAGE, EMBER_VK_BIND_STORAGE,
                                                    EMBER_VK_BIND_TEXEL,   EMBER_VK_BIND_TEXEL,
                                                    EMBER_VK_BIND_STORAGE, EMBER_VK_BIND_STORAGE,
                                                    EMBER_VK_BIND_STORAGE, EMBER_VK_BIND_STORAGE};
    uint32_t i = id - PIPE_ATTENTION, tile = i % ATT_TILES, cls = i / ATT_TILES % ATT_CLASSES;
    uint32_t kind = i / (ATT_CLASSES * ATT_TILES) % ATT_KINDS, t = i / (ATT_KINDS * ATT_CLASSES * ATT_TILES);
    ember_vk_spec sp[] = {{0, k->attn_tpw * k->attn_lanes}, {1, k->attn_cpl[cls]}, {2, k->attn_tpw},
                          {3, k->attn_slots[cls][tile]}, {4, tile == ATT_SPLIT}, {5, k->attn_split}};
    memcpy(j->sp, sp, sizeof sp);
    snprintf(j->name, sizeof j->name, "%s%s_c%u_s%u%s", names[t], kind == ATT_TEXEL ? "_tx" : "", k->attn_cpl[cls],
             k->attn_slots[cls][tile], tile == ATT_SPLIT ? "_split" : "");
    set_desc(j, ATTENTION[t][kind][k->attn_subgroup], 10, kind == ATT_TEXEL ? texel : NULL, sizeof(attention_push),
             6);
}

static void describe(ember_kernels *k, uint32_t id, job *j)
{
    j->slot = slot_of(k, id);
    if (id >= PIPE_MOE_ROUTE) describe_moe_rows(k, id, j);
    else if (id >= PIPE_MOE) describe_moe(k, id, j);
    else if (id < PIPE_MM) describe_linear(k, id, j);
    else if (id < PIPE_EMBED) describe_mm(k, id, j);
    else if (id < PIPE_ATTENTION) describe_row(k, id, j);
    else describe_attention(k, id, j);
}

/* ---- making them ------------------------------------------------------------------------ */

/* Creates the wanted pipelines that do not exist yet, as one parallel batch; the cache
 * file is rewritten when the batch changed the cache's data. Caller holds k->mu. */
static ember_status make_locked(ember_kernels *k, const ember_kernels_set *want, ember_err *err)
{
    job *jobs = ember_malloc(PIPE_COUNT * sizeof *jobs);
    ember_vk_pipeline_desc d[PIPE_COUNT];
    ember_vk_pipeline *out[PIPE_COUNT];
    if (!jobs) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    uint32_t n = 0;
    for (uint32_t id = 0; id < PIPE_COUNT; id++)
        if (ember_kernels_set_has(want, id) && valid(k, id) && !*slot_of(k, id)) describe(k, id, &jobs[n++]);
    for (uint32_t i = 0; i < n; i++) d[i] = jobs[i].d;
    ember_status s = ember_vk_pipelines_create(k->vk, ember_vk_pipeline_cache_handle(k->cache), d, n, out, err);
    for (uint32_t i = 0; s == EMBER_OK && i < n; i++) *jobs[i].slot = out[i];
    if (s == EMBER_OK && n) {
        k->n_pipelines += n;
        /* The file only saves time: a failed write is not the caller's failure. */
        ember_err ignored;
        ember_vk_pipeline_cache_save(k->cache, &ignored);
    }
    ember_free(jobs);
    return s;
}

ember_status ember_kernels_make(ember_kernels *k, const ember_kernels_set *want, ember_err *err)
{
    ember_mutex_lock(&k->mu);
    ember_status s = make_locked(k, want, err);
    ember_mutex_unlock(&k->mu);
    return s;
}

/* The binding kinds attention may read a cache of type t through. ember_kernels_kv_view
 * gives a cache its texel view when the kernels read through views and the device has
 * the format, unless the cache holds more texels than a view may: as a cache is at most
 * one storage binding, only where maxStorageBufferRange exceeds maxTexelBufferElements
 * texels (not on lavapipe) does that need the storage kind too. */
static void attn_kinds(const ember_kernels *k, int t, bool kinds[ATT_KINDS])
{
    uint64_t texel_bytes = t == ATT_Q8 ? 4 : 16;
    kinds[ATT_TEXEL] = k->texel && (t == ATT_F32 || (t == ATT_Q8 && k->caps.texel_r32ui));
    kinds[ATT_STORAGE] = !kinds[ATT_TEXEL] || k->caps.max_storage_range / texel_bytes > k->caps.max_texel_elements;
}

ember_status ember_kernels_prepare_attn(ember_kernels *k, int t, uint32_t cls, ember_err *err)
{
    ember_kernels_set want = {{0}};
    bool kinds[ATT_KINDS];
    attn_kinds(k, t, kinds);
    ember_kernels_set_add(&want, t == ATT_Q8 ? PIPE_ROPE_Q8 : t == ATT_F16 ? PIPE_ROPE_F16 : PIPE_ROPE);
    ember_kernels_set_add(&want, PIPE_ATTN_MERGE); /* made where the kernels split (valid) */
    for (int kind = 0; kind < ATT_KINDS; kind++)
        for (int tile = 0; kinds[kind] && tile < ATT_TILES; tile++)
            ember_kernels_set_add(&want, ember_k_attention_id(t, kind, cls, tile));
    return ember_kernels_make(k, &want, err);
}

/* Every pipeline these choices allow: ember_kernels_create_opts without on_demand. The
 * linear pipelines of the block types are left out (ember_kernels_want_linear asks for
 * a weight's): 120 of them would triple the creation time, and no model has them all. */
static void want_all(const ember_kernels *k, ember_kernels_set *want)
{
    for (uint32_t id = 0; id < PIPE_COUNT; id++) {
        bool block = (id < PIPE_GENERIC && (id - PIPE_LINEAR) / (LIN_KINDS * LIN_SHAPES * LIN_NORMS) > DT_SLOT_Q8) ||
                     (id >= PIPE_MM && id < PIPE_EMBED && (id - PIPE_MM) / MM_SHAPES > DT_SLOT_Q8) ||
                     (id >= PIPE_MOE && id < PIPE_MOE_ROUTE); /* a mixture's model asks for its own */
        if (valid(k, id) && !block) ember_kernels_set_add(want, id);
    }
}

/* Every variant and launch shape, from the caps (and the overrides) alone: what
 * ember_kernels_create_opts builds and ember_kernels_describe reports. */
/* What the matrix family multiplies with: cooperative matrices where the device has the
 * 16x16x16 fp16 product (vk_caps.h) and runs linear_mm.comp's workgroup as 4 subgroups of
 * 32 (pinned where 32 is not its default: AMD's wave64), KHR's unless NV's are asked for;
 * else FMA units. */
static int mm_units(const ember_vk_caps *c, int coop)
{
    bool sg32 = c->subgroup_size == MM_COOP_SUBGROUP ||
                (c->subgroup_min <= MM_COOP_SUBGROUP && MM_COOP_SUBGROUP <= c->subgroup_max);
    bool fits = sg32 && MM_WG <= c->max_wg_invocations && c->max_shared >= 32768 &&
                (!c->max_wg_subgroups || MM_WG / MM_COOP_SUBGROUP <= c->max_wg_subgroups);
    if (!fits || coop == EMBER_COOP_OFF) return EMBER_MM_FMA;
    if (c->coop_khr && coop != EMBER_COOP_NV) return EMBER_MM_KHR;
    if (c->coop_nv && coop != EMBER_COOP_KHR) return EMBER_MM_NV;
    return EMBER_MM_FMA;
}

static void choose(ember_kernels *k, const ember_vk_caps *caps, const ember_kernels_opts *opts)
{
    k->caps = *caps;
    ember_kernels_opts o = opts ? *opts : (ember_kernels_opts){0};
    const ember_vk_caps *c = &k->caps;
    bool sg = !o.no_subgroup && !c->subgroup_false_size;
    k->subgroup = c->subgroup_arith && c->subgroup_size >= 4 && sg;
    /* The linear's lane groups: as wide as the device table says or the caller forces,
     * in one subgroup where it is at least that wide (sizes are powers of two). */
    uint32_t lanes = o.linear_lanes;
    k->lin_lanes = lanes == 8 || lanes == 16 || lanes == 32 || lanes == 64 ? lanes : ember_device_class_of(c).lin_lanes;
    k->lin_subgroup = c->subgroup_shuffle && c->subgroup_size >= k->lin_lanes && c->subgroup_size % 8 == 0 && sg;
    /* Attention sums a position's dot product over the lanes with subgroupAdd. */
    k->attn_subgroup = c->subgroup_arith && c->subgroup_size >= 4 && sg;
    k->texel = c->texel_rgba32f && c->texel_rgba32ui && !o.no_texel;
    /* Integer dot products only when asked for, until a GPU has measured them faster
     * than the float unit (bench/gpu-check.sh times both): they round x to 8 bits, so
     * the checks that compare with the CPU in floats would need their own tolerance;
     * on lavapipe they measured no faster inside the tile (docs/kernels.md). */
    k->int_dot = o.int_dot == EMBER_INT_DOT_ON && c->int_dot;
    /* fp16 arithmetic inside a unit (F16, Q8_0) only when asked for, like integer dot
     * products: it rounds x and the unit's sums to fp16 (docs/kernels.md), and no GPU has
     * timed it; lavapipe has no fp16 units (LLVM computes it in fp32 and rounds). */
    k->fp16_dot = o.fp16_dot == EMBER_KERNEL_ON && c->fp16_arith;
    k->stage = o.linear_stage;
    /* The matrix family only when asked for until a GPU has timed it (kernels.h). */
    k->matrix = o.matrix == EMBER_MATRIX_ON && c->fp16_arith;
    k->mm_units = k->matrix ? mm_units(c, o.coop) : EMBER_MM_FMA;
    k->force_tm = o.linear_tm;
    k->force_tpw = o.linear_tpw;
    k->force_groups = o.linear_groups <= 32 ? o.linear_groups : 32;
    k->force_rows = o.linear_rows;
    /* A fused RMSNorm reads x's row again in every tile: on a GPU from cache, for a
     * dispatch and a barrier saved; on lavapipe, where a tile is one workgroup and loads
     * are instructions, it costs more than the dispatch (docs/kernels.md). */
    k->fuse_norm = o.norm_fusion == EMBER_NORM_FUSION_AUTO ? !c->is_cpu : o.norm_fusion == EMBER_NORM_FUSION_ON;
    k->fuse_norm &= !k->matrix; /* the matrix family stages x as it is */
    /* Split-K pays where a decode step's few attention tiles would leave most of a GPU
     * idle; lavapipe has two cores, which the tiles fill (docs/kernels.md). */
    k->attn_split = o.attn_split == EMBER_ATTN_SPLIT_AUTO ? !c->is_cpu : o.attn_split == EMBER_ATTN_SPLIT_ON;
    uint32_t chunk = o.attn_chunk ? o.attn_chunk : EMBER_ATTN_CHUNK;
    if (chunk < EMBER_ATTN_CHUNK_MIN) chunk = EMBER_ATTN_CHUNK_MIN;
    for (k->attn_chunk_log2 = 0; (2u << k->attn_chunk_log2) <= chunk; k->attn_chunk_log2++) {}
    choose_shapes(k);
    choose_attention(k);
}

void ember_kernels_describe(const ember_vk_caps *caps, const ember_kernels_opts *opts, ember_kernel_choice *out)
{
    ember_kernels k = {0};
    choose(&k, caps, opts);
    ember_device_class dc = ember_device_class_of(caps);
    const ember_lin_shape *dec = &k.lin[0], *pre = &k.lin[LIN_SHAPES - 1];
    uint32_t last = k.attn_classes ? k.attn_classes - 1 : 0;
    uint32_t head = 4 * k.attn_cpl[last] * k.attn_lanes; /* as ember_kernels_check_attn */
    uint32_t staged = 0;
    for (int i = 0; i < LIN_SHAPES; i++) staged |= (uint32_t)k.lin[i].stage << k.lin[i].tm;
    *out = (ember_kernel_choice){
        .subgroup_size = caps->subgroup_size, .row_subgroup = k.subgroup, .row_wg = row_wg(&k),
        .lin_subgroup = k.lin_subgroup, .lin_lanes = k.lin_lanes, .lin_int_dot = k.int_dot,
        .lin_fp16_dot = k.fp16_dot, .lin_staged = staged,
        .lin_matrix = k.matrix, .lin_matrix_units = k.mm_units,
        .device_class = dc.name, .lanes_why = dc.why, .lin_groups = dec->ng, .lin_rows_decode = dec->tn,
        .lin_rows_prefill = pre->tn, .lin_prefill_tokens = pre->tm, .lin_prefill_min_tok = pre->min_tok,
        .attn_subgroup = k.attn_subgroup, .attn_lanes = k.attn_lanes, .attn_tiles_per_wg = k.attn_tpw,
        .attn_classes = k.attn_classes, .attn_cpl_min = k.attn_cpl[0], .attn_cpl_max = k.attn_cpl[last],
        .attn_decode_pairs = k.attn_slots[0][ATT_SMALL], .attn_prefill_pairs = k.attn_slots[0][ATT_LARGE],
        .attn_max_head = head < EMBER_ATT_MAX_HEAD ? head : EMBER_ATT_MAX_HEAD, .texel = k.texel,
        .lin_norm_fused = k.fuse_norm, .attn_split = k.attn_split, .attn_chunk = 1u << k.attn_chunk_log2};
}

ember_status ember_kernels_create_opts(ember_vk *vk, const ember_kernels_opts *opts, ember_kernels **out,
                                       ember_err *err)
{
    *out = NULL;
    ember_kernels *k = ember_calloc(1, sizeof *k);
    if (!k) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    k->vk = vk;
    ember_mutex_init(&k->mu);
    choose(k, ember_vk_get_caps(vk), opts);
    ember_status s = EMBER_OK;
    if (opts && opts->pipeline_cache_dir)
        s = ember_vk_pipeline_cache_open(vk, opts->pipeline_cache_dir, &k->cache, err);
    if (s == EMBER_OK && !(opts && opts->on_demand)) {
        ember_kernels_set all = {{0}};
        want_all(k, &all);
        s = ember_kernels_make(k, &all, err);
    }
    if (s != EMBER_OK) {
        ember_kernels_destroy(k);
        return s;
    }
    *out = k;
    return EMBER_OK;
}

ember_status ember_kernels_create(ember_vk *vk, ember_kernels **out, ember_err *err)
{
    return ember_kernels_create_opts(vk, NULL, out, err);
}

void ember_kernels_destroy(ember_kernels *k)
{
    if (!k) return;
    for (uint32_t id = 0; id < PIPE_COUNT; id++) ember_vk_pipeline_destroy(k->vk, *slot_of(k, id));
    ember_vk_pipeline_cache_close(k->cache);
    ember_mutex_destroy(&k->mu);
    ember_free(k);
}

void ember_kernels_get_stats(ember_kernels *k, ember_kernels_stats *out)
{
    ember_mutex_lock(&k->mu);
    *out = (ember_kernels_stats){.pipelines = k->n_pipelines};
    ember_vk_pipeline_cache_get_stats(k->cache, &out->cache);
    snprintf(out->cache_path, sizeof out->cache_path, "%s", ember_vk_pipeline_cache_path(k->cache));
    ember_mutex_unlock(&k->mu);
}

bool ember_kernels_int_dot(const ember_kernels *k, ember_dtype t)
{
    int d = ember_k_dt_slot(t);
    return k->int_dot && d >= 0 && DT_TYPES[d].idot[0][0].code;
}

bool ember_kernels_fp16_dot(const ember_kernels *k, ember_dtype t)
{
    int d = ember_k_dt_slot(t);
    return k->fp16_dot && !ember_kernels_int_dot(k, t) && d >= 0 && DT_TYPES[d].fp16[0][0].code;
}

bool ember_kernels_matrix(const ember_kernels *k, uint32_t cols) { return k->matrix && cols % MM_COLS == 0; }

bool ember_kernels_texel(const ember_kernels *k) { return k->texel; }

/* A linear input without a view is read through the storage kind: each texel-kind linear
 * made so far gets its storage twin. */
static ember_status make_storage_twins(ember_kernels *k, ember_err *err)
{
    ember_kernels_set want = {{0}};
    ember_mutex_lock(&k->mu);
    for (int d = 0; d < DT_SLOTS; d++)
        for (int i = 0; i < LIN_SHAPES; i++)
            for (int n = 0; n < LIN_NORMS; n++)
                if (k->linear[d][LIN_TEXEL][i][n]) ember_kernels_set_add(&want, ember_k_linear_id(d, LIN_STORAGE, i, n));
    ember_status s = make_locked(k, &want, err);
    ember_mutex_unlock(&k->mu);
    return s;
}

ember_status ember_kernels_input_view(ember_kernels *k, ember_vk_arena *a, ember_vk_span *x, ember_err *err)
{
    if (!k->texel || x->view) return EMBER_OK;
    if (x->size < 16 || x->size / 16 > k->caps.max_texel_elements) return make_storage_twins(k, err);
    return ember_vk_texel_view(a, x, VK_FORMAT_R32G32B32A32_SFLOAT, err);
}
