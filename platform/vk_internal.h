/* vk_internal.h — the structure behind the ember_vk handle (made by vk_device.c), which
 * the .c files of platform/ read. Platform-internal. */
#ifndef EMBER_VK_INTERNAL_H
#define EMBER_VK_INTERNAL_H

#include <vulkan/vulkan.h>

#include "vk_caps.h"
#include "vk_types.h"

struct ember_vk {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    ember_vk_caps caps;
    VkPhysicalDeviceMemoryProperties mem_props;
    /* Validation messages, counted by the debug callback (called on the thread that made
     * the offending Vulkan call). */
    uint32_t n_validation;
    char first_validation[1024];
    /* Transfers for memory that the host cannot map: made on first use (vk_transfer.c). */
    struct ember_vk_transfer *xfer;
};

#endif
