/* kernels.c — creating every compute pipeline once, with the variant and launch shape
 * chosen from the device caps. The ember_k_* recording functions live in
 * kernels_linear.c, kernels_attention.c and kernels_rows.c. */
#include <stdio.h>
#include <stdlib.h>

#include "ember_shaders.h"
#include "kernels_internal.h"

typedef struct spv {
    const uint32_t *code;
    const size_t *bytes;
} spv;

#define SPV(n) {ember_spv_##n, &ember_spv_##n##_bytes}

/* [dtype slot][binding kind][subgroup variant] */
static const spv LINEAR[DT_SLOTS][LIN_KINDS][2] = {
    {{SPV(linear_f32), SPV(linear_f32_sg)}, {SPV(linear_f32_tx), SPV(linear_f32_tx_sg)}},
    {{SPV(linear_f16), SPV(linear_f16_sg)}, {SPV(linear_f16_tx), SPV(linear_f16_tx_sg)}},
    {{SPV(linear_q8), SPV(linear_q8_sg)}, {SPV(linear_q8_tx), SPV(linear_q8_tx_sg)}},
};
static const spv LINEAR_GENERIC[2][2] = {{SPV(linear_f32_generic), SPV(linear_f32_generic_sg)},
                                         {SPV(linear_f16_generic), SPV(linear_f16_generic_sg)}};
static const spv RMSNORM[2] = {SPV(rmsnorm), SPV(rmsnorm_sg)};
/* [cache type][binding kind][subgroup variant] */
static const spv ATTENTION[ATT_KV_TYPES][ATT_KINDS][2] = {
    {{SPV(attention), SPV(attention_sg)}, {SPV(attention_tx), SPV(attention_tx_sg)}},
    {{SPV(attention_q8), SPV(attention_q8_sg)}, {SPV(attention_q8_tx), SPV(attention_q8_tx_sg)}},
};
static const spv ARGMAX[2] = {SPV(argmax), SPV(argmax_sg)};
static const spv EMBED = SPV(embed);
static const spv ROPE = SPV(rope_store);
static const spv ROPE_Q8 = SPV(rope_store_q8);

void ember_k_grid(uint32_t n, uint32_t lim_a, uint32_t *a, uint32_t *b)
{
    *a = n < lim_a ? n : lim_a;
    *b = *a ? ember_k_ceil(n, *a) : 0;
}

static ember_status make(ember_kernels *k, const char *name, spv s, uint32_t n_bindings, uint32_t push,
                         const ember_vk_spec *specs, uint32_t n_specs, ember_vk_pipeline **out, ember_err *err)
{
    return ember_vk_pipeline_create(k->vk, name, s.code, *s.bytes, n_bindings, push, specs, n_specs, out, err);
}

/* Launch shapes. Linear: a lane group of 8 owns a tile of tn rows x tm tokens. On
 * lavapipe (is_cpu) a texel fetch is a function call (docs/kernels.md), so the shapes
 * that win make the fewest fetches per multiply-add: 16 rows per group (each x fetch
 * serves 16 rows), one group per workgroup (one 8-wide subgroup, no shared memory).
 * GPUs: 8 groups per workgroup. The shared-memory baseline keeps ng * tn * tm * 8 floats
 * within the 16 KiB every device has. None of this changes a result. */
static void choose_shapes(ember_kernels *k)
{
    const ember_vk_caps *c = &k->caps;
    uint32_t sg = c->subgroup_size ? c->subgroup_size : 32;
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
        l->ng = c->is_cpu ? 1 : 8;
        /* A workgroup is whole subgroups; the baseline stays within 16 KiB of shared memory. */
        if (k->lin_subgroup && l->ng * 8 < sg) l->ng = sg / 8;
        if (!k->lin_subgroup && l->ng * l->tn * l->tm * 8 * 4 > 16384) l->ng = 16384 / (l->tn * l->tm * 8 * 4);
    }
}

/* Attention: a tile of (token, query head) pairs sharing their K/V rows per subgroup,
 * whose lanes split head_dim; a class per head size (chunks per lane 1, 2, 4, 8: on
 * lavapipe's 8 lanes head_dim up to 32, 64, 128, 256). Every pair of a tile costs its
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
    k->attn_classes = k->attn_subgroup ? ATT_CLASSES : 1;
    for (uint32_t i = 0; i < k->attn_classes; i++) {
        k->attn_cpl[i] = k->attn_subgroup ? 1u << i : 64;
        k->attn_slots[i][ATT_SMALL] = k->attn_subgroup ? 2 : 1;
        k->attn_slots[i][ATT_LARGE] = k->attn_subgroup ? 16u >> i : 1;
    }
}

/* One linear pipeline: dtype slot d (DT_SLOTS + 0/1: GENERIC F32/F16), binding kind,
 * tile shape. */
static ember_status make_linear_one(ember_kernels *k, int d, int kind, int shape, spv code,
                                    ember_vk_pipeline **out, ember_err *err)
{
    static const char *names[DT_SLOTS + 2] = {"f32", "f16", "q8_0", "f32_generic", "f16_generic"};
    static const ember_vk_binding_kind texel[6] = {EMBER_VK_BIND_TEXEL, EMBER_VK_BIND_STORAGE, EMBER_VK_BIND_TEXEL,
                                                   EMBER_VK_BIND_TEXEL, EMBER_VK_BIND_TEXEL, EMBER_VK_BIND_TEXEL};
    const ember_lin_shape *l = &k->lin[shape];
    /* A Q8_0 unit is a whole block, already two loads per row. */
    uint32_t unroll = d == DT_SLOT_Q8 ? 1 : l->unroll;
    ember_vk_spec sp[] = {{0, l->ng * 8}, {1, l->tn / 8}, {2, l->tm}, {3, l->ng}, {4, unroll}};
    char name[64];
    snprintf(name, sizeof name, "linear_%s%s_m%u", names[d], kind == LIN_TEXEL ? "_tx" : "", l->tm);
    return ember_vk_pipeline_create_ex(k->vk, name, code.code, *code.bytes, 6, kind == LIN_TEXEL ? texel : NULL,
                                       sizeof(linear_push), sp, 5, out, err);
}

static ember_status make_linear(ember_kernels *k, ember_err *err)
{
    int sg = k->lin_subgroup;
    ember_status s = EMBER_OK;
    for (int d = 0; s == EMBER_OK && d < DT_SLOTS; d++)
        for (int kind = 0; s == EMBER_OK && kind < (k->texel ? LIN_KINDS : 1); kind++)
            for (int i = 0; s == EMBER_OK && i < LIN_SHAPES; i++)
                s = make_linear_one(k, d, kind, i, LINEAR[d][kind][sg], &k->linear[d][kind][i], err);
    /* GENERIC serves every n_tok with the prefill shape (no real model has such rows). */
    for (int d = 0; s == EMBER_OK && d < 2; d++)
        s = make_linear_one(k, DT_SLOTS + d, LIN_STORAGE, LIN_SHAPES - 1, LINEAR_GENERIC[d][sg],
                            &k->linear_generic[d], err);
    return s;
}

/* Workgroup of the per-row reductions: one subgroup on lavapipe (no shared memory at
 * all), four on GPUs; the shared-memory baseline needs a power of two. */
static uint32_t row_wg(const ember_kernels *k)
{
    if (!k->subgroup) return 64;
    return k->caps.is_cpu ? k->caps.subgroup_size : 4 * k->caps.subgroup_size;
}

static ember_status make_others(ember_kernels *k, ember_err *err)
{
    ember_vk_spec wg64[] = {{0, 64}};
    ember_vk_spec rows[] = {{0, row_wg(k)}};
    ember_status s = make(k, "embed", EMBED, 4, sizeof(embed_push), wg64, 1, &k->embed, err);
    if (s == EMBER_OK) s = make(k, "rmsnorm", RMSNORM[k->subgroup], 4, sizeof(rmsnorm_push), rows, 1, &k->rmsnorm, err);
    if (s == EMBER_OK) s = make(k, "rope_store", ROPE, 8, sizeof(rope_push), wg64, 1, &k->rope, err);
    if (s == EMBER_OK) s = make(k, "rope_store_q8", ROPE_Q8, 8, sizeof(rope_push), wg64, 1, &k->rope_q8, err);
    if (s == EMBER_OK) s = make(k, "argmax", ARGMAX[k->subgroup], 2, sizeof(argmax_push), rows, 1, &k->argmax, err);
    return s;
}

static ember_status make_attention_one(ember_kernels *k, int t, int kind, uint32_t cls, int tile, ember_err *err)
{
    static const char *names[ATT_KV_TYPES] = {"attention", "attention_q8"};
    static const ember_vk_binding_kind texel[7] = {EMBER_VK_BIND_STORAGE, EMBER_VK_BIND_STORAGE,
                                                   EMBER_VK_BIND_STORAGE, EMBER_VK_BIND_STORAGE,
                                                   EMBER_VK_BIND_TEXEL,   EMBER_VK_BIND_TEXEL,
                                                   EMBER_VK_BIND_STORAGE};
    ember_vk_spec sp[] = {{0, k->attn_tpw * k->attn_lanes}, {1, k->attn_cpl[cls]}, {2, k->attn_tpw},
                          {3, k->attn_slots[cls][tile]}};
    spv code = ATTENTION[t][kind][k->attn_subgroup];
    char name[64];
    snprintf(name, sizeof name, "%s%s_c%u_s%u", names[t], kind == ATT_TEXEL ? "_tx" : "", k->attn_cpl[cls],
             k->attn_slots[cls][tile]);
    return ember_vk_pipeline_create_ex(k->vk, name, code.code, *code.bytes, 7, kind == ATT_TEXEL ? texel : NULL,
                                       sizeof(attention_push), sp, 4, &k->attention[t][kind][cls][tile], err);
}

/* Attention per cache type, binding kind (the texel kind, K and V as uniform texel
 * buffers, only when the kernels read through texel views), head size class and tile. */
static ember_status make_attention(ember_kernels *k, ember_err *err)
{
    ember_status s = EMBER_OK;
    for (int t = 0; s == EMBER_OK && t < ATT_KV_TYPES; t++)
        for (int kind = 0; s == EMBER_OK && kind < (k->texel ? ATT_KINDS : 1); kind++)
            for (uint32_t cls = 0; s == EMBER_OK && cls < k->attn_classes; cls++)
                for (int tile = 0; s == EMBER_OK && tile < ATT_TILES; tile++) {
                    /* One pipeline when both tiles are the same size. */
                    if (tile == ATT_LARGE && k->attn_slots[cls][ATT_LARGE] == k->attn_slots[cls][ATT_SMALL]) break;
                    s = make_attention_one(k, t, kind, cls, tile, err);
                }
    return s;
}

ember_status ember_kernels_create_opts(ember_vk *vk, const ember_kernels_opts *opts, ember_kernels **out,
                                       ember_err *err)
{
    *out = NULL;
    ember_kernels *k = calloc(1, sizeof *k);
    if (!k) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    k->vk = vk;
    k->caps = *ember_vk_get_caps(vk);
    ember_kernels_opts o = opts ? *opts : (ember_kernels_opts){0};
    const ember_vk_caps *c = &k->caps;
    k->subgroup = c->subgroup_arith && c->subgroup_size >= 4 && !o.no_subgroup;
    /* The linear's lane groups are 8 lanes of one subgroup. */
    k->lin_subgroup = c->subgroup_shuffle && c->subgroup_size >= 8 && c->subgroup_size % 8 == 0 && !o.no_subgroup;
    /* Attention sums a position's dot product over the lanes with subgroupAdd. */
    k->attn_subgroup = c->subgroup_arith && c->subgroup_size >= 4 && !o.no_subgroup;
    k->texel = c->texel_rgba32f && c->texel_rgba32ui && !o.no_texel;
    k->force_tm = o.linear_tm;
    k->force_tpw = o.linear_tpw;
    choose_shapes(k);
    choose_attention(k);
    ember_status s = make_linear(k, err);
    if (s == EMBER_OK) s = make_others(k, err);
    if (s == EMBER_OK) s = make_attention(k, err);
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
    ember_vk_pipeline *all[] = {k->embed, k->rmsnorm, k->rope, k->argmax, k->rope_q8, k->linear_generic[0],
                                k->linear_generic[1]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ember_vk_pipeline_destroy(k->vk, all[i]);
    for (int t = 0; t < ATT_KV_TYPES; t++)
        for (int kind = 0; kind < ATT_KINDS; kind++)
            for (int cls = 0; cls < ATT_CLASSES; cls++)
                for (int tile = 0; tile < ATT_TILES; tile++)
                    ember_vk_pipeline_destroy(k->vk, k->attention[t][kind][cls][tile]);
    for (int d = 0; d < DT_SLOTS; d++)
        for (int kind = 0; kind < LIN_KINDS; kind++)
            for (int i = 0; i < LIN_SHAPES; i++) ember_vk_pipeline_destroy(k->vk, k->linear[d][kind][i]);
    free(k);
}

bool ember_kernels_texel(const ember_kernels *k) { return k->texel; }

ember_status ember_kernels_input_view(const ember_kernels *k, ember_vk_arena *a, ember_vk_span *x, ember_err *err)
{
    if (!k->texel || x->view || x->size < 16 || x->size / 16 > k->caps.max_texel_elements) return EMBER_OK;
    return ember_vk_texel_view(a, x, VK_FORMAT_R32G32B32A32_SFLOAT, err);
}
