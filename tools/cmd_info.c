/* cmd_info.c — `ember info`: every Vulkan device with the features and limits that
 * decide Ember's shader variants and buffer sizes. */
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "platform/vk.h"

static const char *type_name(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
    }
}

static void print_text(uint32_t i, const ember_vk_caps *c)
{
    printf("device %u: %s (%s, Vulkan %u.%u.%u)\n", i, c->device_name, type_name(c->device_type),
           VK_API_VERSION_MAJOR(c->api_version), VK_API_VERSION_MINOR(c->api_version),
           VK_API_VERSION_PATCH(c->api_version));
    printf("  features: fp16 %s, int8 %s, storage8 %s, storage16 %s, int-dot %s, coop-matrix %s\n",
           c->fp16_arith ? "yes" : "no", c->int8_arith ? "yes" : "no", c->storage8 ? "yes" : "no",
           c->storage16 ? "yes" : "no", c->int_dot ? "yes" : "no", c->coop_matrix ? "yes" : "no");
    printf("  subgroup: size %u, arithmetic %s, shuffle %s, size control %s\n", c->subgroup_size,
           c->subgroup_arith ? "yes" : "no", c->subgroup_shuffle ? "yes" : "no",
           c->subgroup_size_control ? "yes" : "no");
    printf("  limits: storage range %llu, allocation %llu, shared %u, push %u, workgroup %u invocations\n",
           (unsigned long long)c->max_storage_range, (unsigned long long)c->max_alloc, c->max_shared, c->max_push,
           c->max_wg_invocations);
    printf("  memory: device-local %.1f GiB%s, timestamps %s\n", c->device_local_bytes / 1073741824.0,
           c->unified_memory ? " (host-visible)" : "", c->timestamp_period_ns > 0 ? "yes" : "no");
}

static void print_json(uint32_t i, const ember_vk_caps *c)
{
    printf("%s{\"index\": %u, \"name\": ", i ? ", " : "", i);
    cli_json_string(stdout, c->device_name, strlen(c->device_name));
    printf(", \"type\": \"%s\", \"api\": \"%u.%u.%u\", \"fp16\": %s, \"int8\": %s, \"storage8\": %s, "
           "\"storage16\": %s, \"int_dot\": %s, \"coop_matrix\": %s, \"subgroup_size\": %u, "
           "\"subgroup_arith\": %s, \"max_storage_range\": %llu, \"max_alloc\": %llu, \"max_shared\": %u, "
           "\"max_push\": %u, \"device_local_bytes\": %llu}",
           type_name(c->device_type), VK_API_VERSION_MAJOR(c->api_version), VK_API_VERSION_MINOR(c->api_version),
           VK_API_VERSION_PATCH(c->api_version), c->fp16_arith ? "true" : "false", c->int8_arith ? "true" : "false",
           c->storage8 ? "true" : "false", c->storage16 ? "true" : "false", c->int_dot ? "true" : "false",
           c->coop_matrix ? "true" : "false", c->subgroup_size, c->subgroup_arith ? "true" : "false",
           (unsigned long long)c->max_storage_range, (unsigned long long)c->max_alloc, c->max_shared, c->max_push,
           (unsigned long long)c->device_local_bytes);
}

int ember_cmd_info(int argc, char **argv)
{
    bool json = argc > 1 && strcmp(argv[1], "--json") == 0;
    ember_vk_caps caps[16];
    uint32_t n = 0;
    ember_err err = {0};
    if (ember_vk_list_devices(caps, 16, &n, &err) != EMBER_OK) {
        fprintf(stderr, "ember: %s\n", err.msg);
        return 1;
    }
    if (json) printf("{\"devices\": [");
    for (uint32_t i = 0; i < n; i++) json ? print_json(i, &caps[i]) : print_text(i, &caps[i]);
    if (json) printf("]}\n");
    if (!json && n == 0) printf("no Vulkan devices\n");
    return 0;
}
