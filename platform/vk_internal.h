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

#define EMBER_VK_MAX_BINDINGS 16

struct ember_vk_pipeline {
    char name[64];
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    uint32_t n_bindings, push_size;
    ember_vk_binding_kind kinds[EMBER_VK_MAX_BINDINGS];
};

static inline VkDescriptorType ember_vk_descriptor_type(ember_vk_binding_kind k)
{
    return k == EMBER_VK_BIND_TEXEL     ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
           : k == EMBER_VK_BIND_UNIFORM ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                        : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
}

/* Turns a failed VkResult into a status with "what: VK_ERROR_..." as the message. */
ember_status ember_vk_check(VkResult r, ember_err *err, const char *what);
const char *ember_vk_result_name(VkResult r);

/* The device an arena allocates from, and the arena taking ownership of a buffer view
 * (destroyed before the arena's buffers). On failure the view is destroyed. */
ember_vk *ember_vk_arena_device(const ember_vk_arena *a);
ember_status ember_vk_arena_own_view(ember_vk_arena *a, VkBufferView view, ember_err *err);

/* Fills caps for one physical device (used by list and create). */
void ember_vk_query_caps(VkPhysicalDevice phys, ember_vk_caps *caps);

#endif
