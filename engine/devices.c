/* devices.c — ember_list_devices: the platform layer's device capabilities, as the
 * public API describes them (so that tools and applications need no Vulkan header). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/vk.h"

static ember_device_type type_of(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return EMBER_DEVICE_DISCRETE;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return EMBER_DEVICE_INTEGRATED;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return EMBER_DEVICE_VIRTUAL;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return EMBER_DEVICE_CPU;
    default: return EMBER_DEVICE_OTHER;
    }
}

static ember_device_info info_of(const ember_vk_caps *c)
{
    ember_device_info d = {
        .type = type_of(c->device_type), .vendor_id = c->vendor_id, .device_id = c->device_id,
        .driver_version = c->driver_version, .api_major = VK_API_VERSION_MAJOR(c->api_version),
        .api_minor = VK_API_VERSION_MINOR(c->api_version), .api_patch = VK_API_VERSION_PATCH(c->api_version),
        .fp16 = c->fp16_arith, .int8 = c->int8_arith, .storage8 = c->storage8, .storage16 = c->storage16,
        .int_dot = c->int_dot, .coop_matrix = c->coop_matrix, .subgroup_size = c->subgroup_size,
        .subgroup_arith = c->subgroup_arith, .subgroup_shuffle = c->subgroup_shuffle,
        .subgroup_size_control = c->subgroup_size_control, .max_storage_range = c->max_storage_range,
        .max_alloc = c->max_alloc, .max_shared = c->max_shared, .max_push = c->max_push,
        .max_workgroup_invocations = c->max_wg_invocations, .device_local_bytes = c->device_local_bytes,
        .unified_memory = c->unified_memory, .timestamps = c->timestamp_period_ns > 0};
    snprintf(d.name, sizeof d.name, "%s", c->device_name);
    return d;
}

ember_status ember_list_devices(ember_device_info *out, size_t cap, size_t *n, char *msg, size_t msg_cap)
{
    *n = 0;
    if (msg && msg_cap) msg[0] = 0;
    uint32_t count = 0;
    ember_err err = {{0}};
    ember_vk_caps *caps = calloc(EMBER_VK_MAX_DEVICES, sizeof *caps);
    ember_status s = caps ? ember_vk_list_devices(caps, EMBER_VK_MAX_DEVICES, &count, &err)
                          : ember_fail(&err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; s == EMBER_OK && i < count && i < cap; i++) out[i] = info_of(&caps[i]);
    if (s == EMBER_OK) *n = count;
    else if (msg && msg_cap) snprintf(msg, msg_cap, "%s", err.msg);
    free(caps);
    return s;
}
