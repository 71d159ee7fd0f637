/* vk_caps.h — what a physical device can do: features, limits, formats (vk_caps.c). */
#ifndef EMBER_VK_CAPS_H
#define EMBER_VK_CAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "vk_loader.h"

#include "common/error.h"

typedef struct ember_vk_caps {
    char device_name[256];
    uint32_t vendor_id, device_id;
    VkPhysicalDeviceType device_type;
    uint32_t api_version, driver_version;
    bool is_cpu;                        /* lavapipe / llvmpipe / SwiftShader */
    int list_index;                     /* the device's place in vkEnumeratePhysicalDevices'
                                           order (ember_list_devices'); -1: unknown (an
                                           application's device) */
    /* features */
    bool fp16_arith;                    /* shaderFloat16 */
    bool int8_arith;                    /* shaderInt8 */
    bool storage8, storage16;           /* 8/16-bit storage buffer access */
    bool timeline_semaphore;            /* timelineSemaphore (a host's step ordering) */
    bool int_dot;                       /* shaderIntegerDotProduct (VK_KHR_shader_integer_
                                           dot_product, which Ember enables) */
    bool int_dot_accel;                 /* ... and packed signed 4x8 dot products faster than
                                           their emulation (integerDotProduct4x8Bit-
                                           PackedSignedAccelerated) */
    bool coop_khr;                      /* VK_KHR_cooperative_matrix's cooperativeMatrix in
                                           compute, and vulkanMemoryModel and shaderFloat16
                                           (which Ember then enables), with the 16x16x16
                                           fp16 x fp16 + fp32 subgroup product
                                           linear_mm.comp's COOPMAT variant uses */
    bool coop_nv;                       /* ... the same through VK_NV_cooperative_matrix */
    uint32_t subgroup_size;             /* default subgroup size */
    bool subgroup_arith;                /* subgroupAdd etc. in compute */
    bool subgroup_shuffle;
    bool subgroup_size_control;         /* can require a full subgroup size */
    bool subgroup_pin;                  /* Ember pins compute pipelines to subgroup_size with
                                           full subgroups (VK_EXT_subgroup_size_control:
                                           the features, compute in the required stages,
                                           the default size within min..max) */
    uint32_t subgroup_min, subgroup_max; /* the sizes a compute pipeline can be pinned to
                                           (0: none) */
    bool subgroup_false_size;           /* the driver runs fewer lanes than subgroup_size
                                           says: lavapipe past 16 (LP_NATIVE_VECTOR_WIDTH
                                           over 512); no subgroup variant can be trusted */
    /* limits */
    uint64_t max_storage_range;         /* maxStorageBufferRange */
    uint64_t max_alloc;                 /* maxMemoryAllocationSize */
    uint32_t max_shared;                /* maxComputeSharedMemorySize */
    uint32_t max_push;                  /* maxPushConstantsSize */
    uint32_t max_wg_invocations;
    uint32_t max_wg_pinned;             /* ... of a pipeline pinned to subgroup_size (at most
                                           maxComputeWorkgroupSubgroups subgroups); never
                                           above max_wg_invocations */
    uint32_t max_wg_subgroups;          /* maxComputeWorkgroupSubgroups (0: not known) */
    uint32_t max_wg_count[3];
    uint32_t max_texel_elements;        /* maxTexelBufferElements */
    uint64_t min_texel_align;           /* minTexelBufferOffsetAlignment */
    uint32_t max_uniform_range;         /* maxUniformBufferRange */
    uint64_t min_uniform_align;         /* minUniformBufferOffsetAlignment */
    uint64_t min_storage_align;         /* minStorageBufferOffsetAlignment */
    /* formats usable as uniform texel buffers (VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) */
    bool texel_rgba32f, texel_rgba32ui, texel_r16f, texel_r32ui;
    uint64_t device_local_bytes;        /* largest device-local heap */
    bool unified_memory;                /* device-local memory is also host-visible */
    float timestamp_period_ns;          /* 0 when timestamps are unsupported */
} ember_vk_caps;

/* Fills caps for one physical device (used by device listing and creation). */
void ember_vk_query_caps(const ember_vk_fn *fn, VkInstance inst, VkPhysicalDevice phys, ember_vk_caps *caps);

#endif
