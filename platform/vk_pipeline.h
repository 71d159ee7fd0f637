/* vk_pipeline.h — compute pipelines (vk_pipeline.c): bindings 0..n_bindings-1 in set 0,
 * push constants of push_size bytes and specialization constants (id, uint32).
 * ember_vk_pipeline_create makes every binding a storage buffer;
 * ember_vk_pipeline_create_ex takes a kind per binding; ember_vk_pipelines_create makes
 * a batch on worker threads through a VkPipelineCache. */
#ifndef EMBER_VK_PIPELINE_H
#define EMBER_VK_PIPELINE_H

#include <stdint.h>
#include <vulkan/vulkan.h>

#include "common/error.h"
#include "vk_types.h"


typedef struct ember_vk_pipeline ember_vk_pipeline;

typedef struct ember_vk_spec {
    uint32_t id;
    uint32_t value;
} ember_vk_spec;

typedef enum ember_vk_binding_kind {
    EMBER_VK_BIND_STORAGE = 0,       /* storage buffer: the span's buffer range */
    EMBER_VK_BIND_TEXEL = 1,         /* uniform texel buffer: the span's view */
    EMBER_VK_BIND_UNIFORM = 2,       /* uniform buffer: the span's buffer range
                                        (<= max_uniform_range, offset aligned) */
} ember_vk_binding_kind;

ember_status ember_vk_pipeline_create(ember_vk *vk, const char *name, const uint32_t *spirv,
                                      size_t spirv_bytes, uint32_t n_bindings, uint32_t push_size,
                                      const ember_vk_spec *specs, uint32_t n_specs,
                                      ember_vk_pipeline **out, ember_err *err);
/* kinds[i] is the kind of binding i; kinds NULL = all storage buffers. */
ember_status ember_vk_pipeline_create_ex(ember_vk *vk, const char *name, const uint32_t *spirv,
                                         size_t spirv_bytes, uint32_t n_bindings,
                                         const ember_vk_binding_kind *kinds, uint32_t push_size,
                                         const ember_vk_spec *specs, uint32_t n_specs,
                                         ember_vk_pipeline **out, ember_err *err);

/* One pipeline of a batch: what ember_vk_pipeline_create_ex takes. */
typedef struct ember_vk_pipeline_desc {
    const char *name;
    const uint32_t *spirv;
    size_t spirv_bytes;
    uint32_t n_bindings;
    const ember_vk_binding_kind *kinds; /* NULL = all storage buffers */
    uint32_t push_size;
    const ember_vk_spec *specs;
    uint32_t n_specs;
    /* 0: pinned to the device's default subgroup size where the workgroup (specialization
     * constant 0) is whole subgroups of it; else pinned to this size, one of the device's
     * (caps subgroup_min..max, or its default). */
    uint32_t subgroup;
} ember_vk_pipeline_desc;

/* Creates out[i] from d[i] for i < n on min(n, online CPUs, 8) threads (the calling one
 * among them), through cache (VK_NULL_HANDLE = none; it must not have been created
 * externally synchronized). All or nothing: on failure every out[i] is NULL and err has
 * the message of the first failed pipeline in d's order. d must stay valid during the
 * call. */
ember_status ember_vk_pipelines_create(ember_vk *vk, VkPipelineCache cache, const ember_vk_pipeline_desc *d,
                                       uint32_t n, ember_vk_pipeline **out, ember_err *err);
void ember_vk_pipeline_destroy(ember_vk *vk, ember_vk_pipeline *p);

#endif
