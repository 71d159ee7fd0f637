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

/* [dtype slot][subgroup variant] */
static const spv MATVEC[DT_SLOTS][2] = {
    {SPV(matvec_f32), SPV(matvec_f32_sg)},
    {SPV(matvec_f16), SPV(matvec_f16_sg)},
    {SPV(matvec_q8), SPV(matvec_q8_sg)},
};
static const spv MATMUL[DT_SLOTS] = {SPV(matmul_f32), SPV(matmul_f16), SPV(matmul_q8)};
static const spv MATMUL_GENERIC[2] = {SPV(matmul_f32_generic), SPV(matmul_f16_generic)};
static const spv RMSNORM[2] = {SPV(rmsnorm), SPV(rmsnorm_sg)};
static const spv ATTENTION[2] = {SPV(attention), SPV(attention_sg)};
static const spv ARGMAX[2] = {SPV(argmax), SPV(argmax_sg)};
static const spv EMBED = SPV(embed);
static const spv ROPE = SPV(rope_store);

/* Push-constant sizes, matching the Push blocks of the shaders. */
#define PUSH_LINEAR 48
#define PUSH_EMBED 24
#define PUSH_RMSNORM 20
#define PUSH_ROPE 36
#define PUSH_ATTENTION 32
#define PUSH_ARGMAX 12

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

/* Launch shapes. On lavapipe (is_cpu) every storage-buffer load is a per-lane,
 * per-component loop (Mesa 22.3), so the shapes that win are those with the fewest loads
 * per multiply-add: 16 rows per subgroup in the mat-vec (each x load serves 16 rows) and
 * 16x8 register tiles in the mat-mat (measured, docs/kernels.md). GPUs: smaller tiles
 * keep register pressure and occupancy sane. The shared-memory baseline keeps
 * tiles x rows x tokens x lanes floats within the 16 KiB every device has. */
static void choose_shapes(ember_kernels *k)
{
    const ember_vk_caps *c = &k->caps;
    uint32_t sg = c->subgroup_size ? c->subgroup_size : 32;
    k->mv_rows = !k->subgroup ? 8 : c->is_cpu ? 16 : 4;
    k->mv_tiles = 4;
    k->mm_wg = c->is_cpu ? 32 : 64;
    k->mm_tn = c->is_cpu ? 16 : 4;
    k->mm_tm = 8;
    /* A (token, head) pair per subgroup, head_dim up to 256 in vec4 chunks per lane; the
     * baseline gives each pair one invocation. */
    k->attn_lanes = k->subgroup ? sg : 1;
    k->attn_cpl = k->subgroup ? (sg >= 64 ? 1 : 64 / sg) : 64;
    k->attn_ppw = k->subgroup ? (c->is_cpu ? 8 : 4) : 64;
    if (k->mv_max_tok == 0 || k->mv_max_tok > EMBER_MV_MAX_NT) k->mv_max_tok = EMBER_MV_MAX_NT;
}

/* Workgroup size of the mat-vec shader: one lane group per tile. */
static uint32_t mv_wg(const ember_kernels *k, uint32_t lanes) { return k->mv_tiles * lanes; }

static ember_status make_linear(ember_kernels *k, ember_err *err)
{
    static const char *names[DT_SLOTS] = {"f32", "f16", "q8_0"};
    uint32_t lanes = k->subgroup ? k->caps.subgroup_size : 16;
    ember_status s = EMBER_OK;
    char name[64];
    for (int d = 0; s == EMBER_OK && d < DT_SLOTS; d++) {
        for (uint32_t nt = 1; s == EMBER_OK && nt <= EMBER_MV_MAX_NT; nt++) {
            ember_vk_spec sp[] = {{0, mv_wg(k, lanes)}, {1, k->mv_rows}, {2, nt}, {3, k->mv_tiles},
                                  {4, 2}, {5, lanes}};
            snprintf(name, sizeof name, "matvec_%s_%u", names[d], nt);
            s = make(k, name, MATVEC[d][k->subgroup], 6, PUSH_LINEAR, sp, 6, &k->matvec[d][nt - 1], err);
        }
        ember_vk_spec mm[] = {{0, k->mm_wg}, {1, k->mm_tn}, {2, k->mm_tm}};
        snprintf(name, sizeof name, "matmul_%s", names[d]);
        if (s == EMBER_OK) s = make(k, name, MATMUL[d], 6, PUSH_LINEAR, mm, 3, &k->matmul[d], err);
        if (s == EMBER_OK && d < 2) {
            snprintf(name, sizeof name, "matmul_%s_generic", names[d]);
            s = make(k, name, MATMUL_GENERIC[d], 6, PUSH_LINEAR, mm, 3, &k->matmul_generic[d], err);
        }
    }
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
    ember_vk_spec attn[] = {{0, k->attn_ppw * k->attn_lanes}, {1, k->attn_cpl}, {2, k->attn_ppw}};
    ember_status s = make(k, "embed", EMBED, 4, PUSH_EMBED, wg64, 1, &k->embed, err);
    if (s == EMBER_OK) s = make(k, "rmsnorm", RMSNORM[k->subgroup], 4, PUSH_RMSNORM, rows, 1, &k->rmsnorm, err);
    if (s == EMBER_OK) s = make(k, "rope_store", ROPE, 6, PUSH_ROPE, wg64, 1, &k->rope, err);
    if (s == EMBER_OK)
        s = make(k, "attention", ATTENTION[k->subgroup], 7, PUSH_ATTENTION, attn, 3, &k->attention, err);
    if (s == EMBER_OK) s = make(k, "argmax", ARGMAX[k->subgroup], 2, PUSH_ARGMAX, rows, 1, &k->argmax, err);
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
    k->subgroup = k->caps.subgroup_arith && k->caps.subgroup_size >= 4 && !(opts && opts->no_subgroup);
    k->mv_max_tok = opts ? opts->matvec_max_tok : 0;
    choose_shapes(k);
    ember_status s = make_linear(k, err);
    if (s == EMBER_OK) s = make_others(k, err);
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
    ember_vk_pipeline *all[] = {k->embed, k->rmsnorm, k->rope, k->attention, k->argmax,
                                k->matmul_generic[0], k->matmul_generic[1]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ember_vk_pipeline_destroy(k->vk, all[i]);
    for (int d = 0; d < DT_SLOTS; d++) {
        ember_vk_pipeline_destroy(k->vk, k->matmul[d]);
        for (int t = 0; t < EMBER_MV_MAX_NT; t++) ember_vk_pipeline_destroy(k->vk, k->matvec[d][t]);
    }
    free(k);
}

ember_status ember_kernels_check_attn(const ember_kernels *k, const ember_attn_shape *s, ember_err *err)
{
    uint32_t max_dim = 4 * k->attn_cpl * k->attn_lanes;
    if (s->n_heads == 0 || s->n_kv_heads == 0 || s->n_heads % s->n_kv_heads != 0)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "%u query heads cannot share %u KV heads", s->n_heads,
                          s->n_kv_heads);
    if (s->head_dim == 0 || s->head_dim % 4 != 0 || s->head_dim > max_dim)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "head_dim %u: must be a multiple of 4 and at most %u",
                          s->head_dim, max_dim);
    if (s->rope_dim % 2 != 0 || s->rope_dim > s->head_dim)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "rope_dim %u: must be even and at most head_dim",
                          s->rope_dim);
    if (s->block_size == 0 || s->max_blocks_per_seq == 0)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "KV block size and table width must be non-zero");
    return EMBER_OK;
}
