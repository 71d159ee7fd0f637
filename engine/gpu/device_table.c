/* device_table.c — the device classes of device_table.h. The lane counts are what each
 * vendor's hardware executes together: a whole NVIDIA warp (32) or AMD wave (64) reads
 * one run of a weight row and sums it with shuffles inside the subgroup, as llama.cpp's
 * Vulkan mat-vec does; Intel's EUs run SIMD8-32, and 16 keeps two row runs per 32-wide
 * subgroup. lavapipe measured fastest at 8 (16-row tiles, docs/kernels.md). None of the
 * GPU rows has been measured yet (bench/gpu-check.sh sweeps them). */
#include "device_table.h"

#include <stdbool.h>

typedef struct vendor_row {
    uint32_t vendor_id;
    const char *name;
    uint32_t lanes;
} vendor_row;

static const vendor_row VENDORS[] = {
    {0x10DE, "NVIDIA", 32},
    {0x1002, "AMD", 64},
    {0x8086, "Intel", 16},
};

ember_device_class ember_device_class_of(const ember_vk_caps *c)
{
    if (c->is_cpu) return (ember_device_class){"CPU", 8, "measured fastest on lavapipe"};
    ember_device_class d = {"other", 8, "an unknown vendor: the narrowest"};
    for (size_t i = 0; i < sizeof VENDORS / sizeof VENDORS[0]; i++)
        if (VENDORS[i].vendor_id == c->vendor_id)
            d = (ember_device_class){VENDORS[i].name, VENDORS[i].lanes, "the vendor's SIMD width"};
    /* The subgroup kernels need the whole group in one subgroup. */
    bool shuffle = c->subgroup_shuffle && !c->subgroup_false_size;
    while (d.lin_lanes > 8 && (!shuffle || d.lin_lanes > c->subgroup_size)) {
        d.lin_lanes /= 2;
        d.why = "the widest its subgroup takes";
    }
    return d;
}
