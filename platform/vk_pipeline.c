/* vk_pipeline.c — compute pipelines: bindings 0..n-1 of set 0 (storage buffers, uniform
 * texel buffers or uniform buffers), parameters as push constants, sizes as
 * specialization constants. */
#include <stdio.h>
#include <stdlib.h>

#include "vk_internal.h"
#include "vk_pipeline_internal.h"
#include "vk_result.h"

#define MAX_SPECS 16

ember_status ember_vk_pipeline_create(ember_vk *vk, const char *name, const uint32_t *spirv,
                                      size_t spirv_bytes, uint32_t n_bindings, uint32_t push_size,
                                      const ember_vk_spec *specs, uint32_t n_specs,
                                      ember_vk_pipeline **out, ember_err *err)
{
    return ember_vk_pipeline_create_ex(vk, name, spirv, spirv_bytes, n_bindings, NULL, push_size, specs, n_specs,
                                       out, err);
}

ember_status ember_vk_pipeline_create_ex(ember_vk *vk, const char *name, const uint32_t *spirv,
                                         size_t spirv_bytes, uint32_t n_bindings,
                                         const ember_vk_binding_kind *kinds, uint32_t push_size,
                                         const ember_vk_spec *specs, uint32_t n_specs,
                                         ember_vk_pipeline **out, ember_err *err)
{
    *out = NULL;
    if (n_bindings > EMBER_VK_MAX_BINDINGS || n_specs > MAX_SPECS || push_size > vk->caps.max_push)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "pipeline %s: too many bindings/specs or push bytes", name);
    for (uint32_t i = 0; kinds && i < n_bindings; i++)
        if (kinds[i] > EMBER_VK_BIND_UNIFORM)
            return ember_fail(err, EMBER_ERR_INVALID_ARG, "pipeline %s: binding %u of unknown kind", name, i);
    ember_vk_pipeline *p = calloc(1, sizeof *p);
    if (!p) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    snprintf(p->name, sizeof p->name, "%s", name);
    p->n_bindings = n_bindings;
    p->push_size = push_size;
    for (uint32_t i = 0; i < n_bindings; i++) p->kinds[i] = kinds ? kinds[i] : EMBER_VK_BIND_STORAGE;

    VkDescriptorSetLayoutBinding b[EMBER_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < n_bindings; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i, .descriptorType = ember_vk_descriptor_type(p->kinds[i]),
                                              .descriptorCount = 1, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dl = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                          .bindingCount = n_bindings, .pBindings = b};
    ember_status s = ember_vk_check(vkCreateDescriptorSetLayout(vk->device, &dl, NULL, &p->set_layout), err,
                                    "vkCreateDescriptorSetLayout");
    VkPushConstantRange pr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size};
    VkPipelineLayoutCreateInfo pl = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                     .setLayoutCount = 1, .pSetLayouts = &p->set_layout,
                                     .pushConstantRangeCount = push_size ? 1 : 0, .pPushConstantRanges = &pr};
    if (s == EMBER_OK)
        s = ember_vk_check(vkCreatePipelineLayout(vk->device, &pl, NULL, &p->layout), err, "vkCreatePipelineLayout");

    VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = spirv_bytes, .pCode = spirv};
    VkShaderModule module = VK_NULL_HANDLE;
    if (s == EMBER_OK)
        s = ember_vk_check(vkCreateShaderModule(vk->device, &mi, NULL, &module), err, "vkCreateShaderModule");

    VkSpecializationMapEntry map[MAX_SPECS];
    uint32_t data[MAX_SPECS];
    for (uint32_t i = 0; i < n_specs; i++) {
        map[i] = (VkSpecializationMapEntry){specs[i].id, i * 4, 4};
        data[i] = specs[i].value;
    }
    VkSpecializationInfo si = {n_specs, map, n_specs * 4, data};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = module, .pName = "main",
                  .pSpecializationInfo = n_specs ? &si : NULL},
        .layout = p->layout};
    if (s == EMBER_OK)
        s = ember_vk_check(vkCreateComputePipelines(vk->device, VK_NULL_HANDLE, 1, &ci, NULL, &p->pipeline), err,
                           "vkCreateComputePipelines");
    if (module) vkDestroyShaderModule(vk->device, module, NULL);
    if (s != EMBER_OK) {
        ember_fail_ctx(err, s, "pipeline %s", name);
        ember_vk_pipeline_destroy(vk, p);
        return s;
    }
    *out = p;
    return EMBER_OK;
}

void ember_vk_pipeline_destroy(ember_vk *vk, ember_vk_pipeline *p)
{
    if (!p) return;
    if (p->pipeline) vkDestroyPipeline(vk->device, p->pipeline, NULL);
    if (p->layout) vkDestroyPipelineLayout(vk->device, p->layout, NULL);
    if (p->set_layout) vkDestroyDescriptorSetLayout(vk->device, p->set_layout, NULL);
    free(p);
}
