/* vk_internal.h — the structures behind the opaque handles of platform/vk.h, shared by
 * the .c files of platform/ only. */
#ifndef EMBER_VK_INTERNAL_H
#define EMBER_VK_INTERNAL_H

#include "vk.h"

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
    /* Transfers for memory that the host cannot map: created on first use. */
    VkCommandPool xfer_pool;
    VkCommandBuffer xfer_cb;
    VkFence xfer_fence;
    ember_vk_arena *staging_arena;
    ember_vk_span staging;
};

struct ember_vk_pipeline {
    char name[64];
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    uint32_t n_bindings, push_size;
};

/* Turns a failed VkResult into a status with "what: VK_ERROR_..." as the message. */
ember_status ember_vk_check(VkResult r, ember_err *err, const char *what);
const char *ember_vk_result_name(VkResult r);

/* Fills caps for one physical device (used by list and create). */
void ember_vk_query_caps(VkPhysicalDevice phys, ember_vk_caps *caps);

#endif
