/* vk_pipeline_internal.h — the structure behind ember_vk_pipeline, shared by
 * vk_pipeline.c (creation) and vk_cmd.c (binding). Platform-internal. */
#ifndef EMBER_VK_PIPELINE_INTERNAL_H
#define EMBER_VK_PIPELINE_INTERNAL_H

#include "vk_pipeline.h"

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

#endif
