/* test_device_table.c — the device table (engine/gpu/device_table.h) and the linear
 * variants ember_kernels_describe picks from it, for made-up caps of each vendor's GPUs:
 * lanes a tile as wide as the vendor's SIMD but never wider than the subgroup that
 * combines them, the shared-memory combine where there are no shuffles, workgroups of
 * whole subgroups within the device's limits, a forced lane count honoured, and the
 * matrix family's cooperative matrices (KHR's, NV's or none) chosen by features,
 * subgroup sizes and the forced choice. No device needed. */
#include <string.h>

#include "engine/gpu/device_table.h"
#include "engine/gpu/kernels.h"
#include "testutil.h"

static ember_vk_caps gpu(uint32_t vendor, uint32_t subgroup, bool shuffle)
{
    ember_vk_caps c = {.vendor_id = vendor, .subgroup_size = subgroup, .subgroup_shuffle = shuffle,
                       .subgroup_arith = shuffle, .subgroup_pin = true, .api_version = VK_API_VERSION_1_3,
                       .max_wg_invocations = 1024, .max_wg_pinned = 1024, .max_wg_count = {65535, 65535, 65535},
                       .max_shared = 32768, .texel_rgba32f = true, .texel_rgba32ui = true};
    strcpy(c.device_name, "made up");
    return c;
}

typedef struct row {
    uint32_t vendor, subgroup;
    bool shuffle;
    const char *cls;
    uint32_t lanes;
    bool subgroup_combine;
} row;

static void test_classes(void)
{
    static const row rows[] = {
        {0x10DE, 32, true, "NVIDIA", 32, true},
        {0x1002, 64, true, "AMD", 64, true},
        {0x1002, 32, true, "AMD", 32, true},   /* RDNA at wave32: the subgroup bounds it */
        {0x8086, 32, true, "Intel", 16, true},
        {0x8086, 8, true, "Intel", 8, true},
        {0x10DE, 32, false, "NVIDIA", 8, false}, /* no shuffles: the narrowest, shared memory */
        {0x5143, 64, true, "other", 8, true},
        {0x1002, 4, true, "AMD", 8, false},    /* narrower than any group */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const row *r = &rows[i];
        ember_vk_caps c = gpu(r->vendor, r->subgroup, r->shuffle);
        ember_device_class d = ember_device_class_of(&c);
        CHECKF(strcmp(d.name, r->cls) == 0 && d.lin_lanes == r->lanes, "vendor %#x subgroup %u: %s %u lanes",
               r->vendor, r->subgroup, d.name, d.lin_lanes);
        ember_kernel_choice k;
        ember_kernels_describe(&c, NULL, &k);
        CHECKF(k.lin_lanes == r->lanes && k.lin_subgroup == r->subgroup_combine,
               "vendor %#x subgroup %u: linear %u lanes, subgroup combine %d", r->vendor, r->subgroup, k.lin_lanes,
               k.lin_subgroup);
        /* 64 invocations a workgroup on these GPUs: whole subgroups */
        uint32_t wg = k.lin_groups * k.lin_lanes;
        CHECKF(wg == 64, "vendor %#x subgroup %u: workgroup %u", r->vendor, r->subgroup, wg);
    }
    ember_vk_caps cpu = gpu(0x10005, 8, true);
    cpu.is_cpu = true;
    ember_device_class d = ember_device_class_of(&cpu);
    CHECK(strcmp(d.name, "CPU") == 0 && d.lin_lanes == 8);
}

/* Forced counts are taken as they are; the subgroup combine only where the subgroup
 * holds the group; nonsense counts fall back to the table's. */
static void test_forced(void)
{
    ember_vk_caps c = gpu(0x10DE, 16, true);
    static const uint32_t force[] = {8, 16, 32, 64, 12, 0};
    static const uint32_t want[] = {8, 16, 32, 64, 16, 16};
    for (int i = 0; i < 6; i++) {
        ember_kernels_opts o = {.linear_lanes = force[i]};
        ember_kernel_choice k;
        ember_kernels_describe(&c, &o, &k);
        CHECKF(k.lin_lanes == want[i], "forced %u: %u lanes", force[i], k.lin_lanes);
        CHECKF(k.lin_subgroup == (want[i] <= 16), "forced %u: subgroup combine %d", force[i], k.lin_subgroup);
        /* the shared-memory combine stays within 16 KiB: ng * rows * tokens * lanes floats */
        if (!k.lin_subgroup)
            CHECKF(k.lin_groups * k.lin_rows_prefill * k.lin_prefill_tokens * k.lin_lanes * 4 <= 16384,
                   "forced %u: %u groups of %u x %u", force[i], k.lin_groups, k.lin_rows_prefill,
                   k.lin_prefill_tokens);
    }
}

/* The matrix family's units: cooperative matrices need the device's product (coop_khr,
 * coop_nv) and subgroups of 32, the default or pinned (AMD's wave64 can pin 32; a device
 * that cannot runs FMA); AUTO prefers KHR; a forced extension the device lacks is FMA. */
static void test_coop(void)
{
    static const struct {
        bool khr, nv;
        uint32_t subgroup, min, max;
        int coop, want;
    } rows[] = {
        {true, true, 32, 32, 32, EMBER_COOP_AUTO, EMBER_MM_KHR},
        {true, true, 32, 32, 32, EMBER_COOP_NV, EMBER_MM_NV},
        {true, true, 32, 32, 32, EMBER_COOP_OFF, EMBER_MM_FMA},
        {false, true, 32, 32, 32, EMBER_COOP_AUTO, EMBER_MM_NV},
        {false, true, 32, 32, 32, EMBER_COOP_KHR, EMBER_MM_FMA},
        {true, false, 32, 32, 32, EMBER_COOP_NV, EMBER_MM_FMA},
        {true, false, 64, 32, 64, EMBER_COOP_AUTO, EMBER_MM_KHR}, /* wave64, pinned to 32 */
        {true, false, 64, 0, 0, EMBER_COOP_AUTO, EMBER_MM_FMA},   /* no size control */
        {true, false, 16, 8, 16, EMBER_COOP_AUTO, EMBER_MM_FMA},  /* no subgroups of 32 */
        {false, false, 32, 32, 32, EMBER_COOP_AUTO, EMBER_MM_FMA},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ember_vk_caps c = gpu(0x1002, rows[i].subgroup, true);
        c.fp16_arith = true, c.coop_khr = rows[i].khr, c.coop_nv = rows[i].nv;
        c.subgroup_min = rows[i].min, c.subgroup_max = rows[i].max, c.max_wg_subgroups = 16;
        ember_kernels_opts o = {.matrix = EMBER_MATRIX_ON, .coop = rows[i].coop};
        ember_kernel_choice k;
        ember_kernels_describe(&c, &o, &k);
        CHECKF(k.lin_matrix && k.lin_matrix_units == rows[i].want, "row %zu: units %d, want %d", i,
               k.lin_matrix_units, rows[i].want);
    }
    ember_vk_caps c = gpu(0x10DE, 32, true);
    c.fp16_arith = c.coop_khr = true;
    ember_kernel_choice k;
    ember_kernels_describe(&c, NULL, &k); /* AUTO: the matrix family not yet by default */
    CHECK(!k.lin_matrix && k.lin_matrix_units == EMBER_MM_FMA);
}

int main(void)
{
    test_classes();
    test_forced();
    test_coop();
    return tu_finish("test_device_table");
}
