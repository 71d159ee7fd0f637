/* vk_caps.c — what a physical device can do: the features and limits that select
 * shader variants and bound buffer sizes. */
#include <stdio.h>
#include <string.h>

#include "vk_caps.h"
#include "vk_coopmat.h"

static bool has_extension(const ember_vk_fn *fn, VkPhysicalDevice phys, const char *name)
{
    uint32_t n = 0;
    if (fn->EnumerateDeviceExtensionProperties(phys, NULL, &n, NULL) != VK_SUCCESS) return false;
    VkExtensionProperties props[512];
    if (n > 512) n = 512;
    if (fn->EnumerateDeviceExtensionProperties(phys, NULL, &n, props) < 0) return false;
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(props[i].extensionName, name) == 0) return true;
    return false;
}

/* Whether a listed cooperative-matrix product is the one linear_mm.comp's COOPMAT variant
 * is written for: 16 x 16 x 16, A and B fp16, C and D fp32, one subgroup. (NV's and KHR's
 * component types and scopes have the same values.) */
static bool mm_shape(uint32_t m, uint32_t n, uint32_t k, VkComponentTypeNV a, VkComponentTypeNV b,
                     VkComponentTypeNV c, VkComponentTypeNV d, VkScopeNV scope)
{
    return m == 16 && n == 16 && k == 16 && a == VK_COMPONENT_TYPE_FLOAT16_NV && b == VK_COMPONENT_TYPE_FLOAT16_NV &&
           c == VK_COMPONENT_TYPE_FLOAT32_NV && d == VK_COMPONENT_TYPE_FLOAT32_NV && scope == VK_SCOPE_SUBGROUP_NV;
}

static bool coop_nv_shape(const ember_vk_fn *fn, VkInstance inst, VkPhysicalDevice phys)
{
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV get =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)fn->GetInstanceProcAddr(
            inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
    VkCooperativeMatrixPropertiesNV p[64];
    uint32_t n = 64;
    for (uint32_t i = 0; i < 64; i++) p[i] = (VkCooperativeMatrixPropertiesNV){
        .sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV};
    if (!get || get(phys, &n, p) < 0) return false;
    for (uint32_t i = 0; i < n; i++)
        if (mm_shape(p[i].MSize, p[i].NSize, p[i].KSize, p[i].AType, p[i].BType, p[i].CType, p[i].DType, p[i].scope))
            return true;
    return false;
}

static bool coop_khr_shape(const ember_vk_fn *fn, VkInstance inst, VkPhysicalDevice phys)
{
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR get =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)fn->GetInstanceProcAddr(
            inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    VkCooperativeMatrixPropertiesKHR p[64];
    uint32_t n = 64;
    for (uint32_t i = 0; i < 64; i++) p[i] = (VkCooperativeMatrixPropertiesKHR){
        .sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR};
    if (!get || get(phys, &n, p) < 0) return false;
    for (uint32_t i = 0; i < n; i++)
        if (!p[i].saturatingAccumulation &&
            mm_shape(p[i].MSize, p[i].NSize, p[i].KSize, p[i].AType, p[i].BType, p[i].CType, p[i].ResultType, p[i].scope))
            return true;
    return false;
}

static void query_features(const ember_vk_fn *fn, VkInstance inst, VkPhysicalDevice phys, ember_vk_caps *c)
{
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &f12};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
    /* The extension, not 1.3 core: Ember's instance is Vulkan 1.2 (vk_device.c enables it). */
    bool dot_known = has_extension(fn, phys, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    if (dot_known) f12.pNext = &dot;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    bool cm_ext = has_extension(fn, phys, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    if (cm_ext) cm.pNext = f12.pNext, f12.pNext = &cm;
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR ck = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
    bool ck_ext = has_extension(fn, phys, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    if (ck_ext) ck.pNext = f12.pNext, f12.pNext = &ck;
    /* Ember's instance is Vulkan 1.2, so size control is the extension's even on 1.3. */
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT sc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT};
    bool sc_ext = has_extension(fn, phys, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    if (sc_ext) sc.pNext = f11.pNext, f11.pNext = &sc;
    fn->GetPhysicalDeviceFeatures2(phys, &f);
    bool pin_any = sc_ext && sc.subgroupSizeControl && sc.computeFullSubgroups; /* properties: earlier */
    c->subgroup_pin &= pin_any;
    if (!pin_any) c->subgroup_min = c->subgroup_max = 0;
    c->fp16_arith = f12.shaderFloat16;
    c->int8_arith = f12.shaderInt8;
    c->storage8 = f12.storageBuffer8BitAccess;
    c->timeline_semaphore = f12.timelineSemaphore;
    c->storage16 = f11.storageBuffer16BitAccess;
    c->int_dot = dot_known && dot.shaderIntegerDotProduct;
    c->int_dot_accel &= c->int_dot; /* properties: earlier */
    c->coop_nv = cm_ext && cm.cooperativeMatrix && f12.vulkanMemoryModel && f12.shaderFloat16 &&
                 coop_nv_shape(fn, inst, phys);
    c->coop_khr &= ck_ext && ck.cooperativeMatrix && f12.vulkanMemoryModel && f12.shaderFloat16 &&
                   coop_khr_shape(fn, inst, phys); /* properties (compute among its stages): earlier */
    c->subgroup_size_control = c->api_version >= VK_API_VERSION_1_3 ||
                               has_extension(fn, phys, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
}

static void query_properties(const ember_vk_fn *fn, VkPhysicalDevice phys, ember_vk_caps *c)
{
    VkPhysicalDeviceVulkan11Properties p11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES};
    VkPhysicalDeviceProperties2 p = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    /* The 1.1 property struct may only be chained on 1.2+ devices; older ones are
     * listed by `ember info` but never used. */
    fn->GetPhysicalDeviceProperties(phys, &p.properties);
    VkPhysicalDeviceSubgroupSizeControlPropertiesEXT sc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
    bool sc_ext = has_extension(fn, phys, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    VkPhysicalDeviceShaderIntegerDotProductProperties dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
    bool dot_ext = has_extension(fn, phys, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    VkPhysicalDeviceCooperativeMatrixPropertiesKHR ck = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_KHR};
    bool ck_ext = has_extension(fn, phys, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    if (p.properties.apiVersion >= VK_API_VERSION_1_2) {
        p.pNext = &p11;
        if (sc_ext) p11.pNext = &sc;
        if (dot_ext) dot.pNext = p11.pNext, p11.pNext = &dot;
        if (ck_ext) ck.pNext = p11.pNext, p11.pNext = &ck;
        fn->GetPhysicalDeviceProperties2(phys, &p);
    }
    c->coop_khr = ck.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT; /* features: later */
    c->int_dot_accel = dot.integerDotProduct4x8BitPackedSignedAccelerated; /* features: later */
    const VkPhysicalDeviceLimits *l = &p.properties.limits;

    snprintf(c->device_name, sizeof c->device_name, "%s", p.properties.deviceName);
    c->vendor_id = p.properties.vendorID;
    c->device_id = p.properties.deviceID;
    c->device_type = p.properties.deviceType;
    c->api_version = p.properties.apiVersion;
    c->driver_version = p.properties.driverVersion;
    c->is_cpu = p.properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;

    c->subgroup_size = p11.subgroupSize;
    /* gallivm's vectors are at most 512 bits (LP_MAX_VECTOR_WIDTH); LP_NATIVE_VECTOR_WIDTH
     * 1024 or 2048 makes lavapipe report 32 or 64 lanes while a subgroup runs 16:
     * gl_SubgroupInvocationID counts 0-15 and subgroupAdd sums 16 lanes (measured with
     * Mesa 22.3; docs/portability.md). */
    c->subgroup_false_size = c->is_cpu && strncmp(c->device_name, "llvmpipe", 8) == 0 && c->subgroup_size > 16;
    /* Pinning needs compute among the stages that take a required size, and the default
     * size among those allowed (query_features adds the features). */
    bool pin_compute = sc_ext && (sc.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
    c->subgroup_pin = pin_compute && sc.minSubgroupSize <= p11.subgroupSize && p11.subgroupSize <= sc.maxSubgroupSize;
    c->subgroup_min = pin_compute ? sc.minSubgroupSize : 0;
    c->subgroup_max = pin_compute ? sc.maxSubgroupSize : 0;
    c->max_wg_subgroups = sc_ext ? sc.maxComputeWorkgroupSubgroups : 0;
    bool compute = p11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT;
    c->subgroup_arith = compute && (p11.subgroupSupportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    c->subgroup_shuffle = compute && (p11.subgroupSupportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    c->max_alloc = p11.maxMemoryAllocationSize;

    c->max_storage_range = l->maxStorageBufferRange;
    c->max_shared = l->maxComputeSharedMemorySize;
    c->max_push = l->maxPushConstantsSize;
    c->max_wg_invocations = l->maxComputeWorkGroupInvocations;
    uint64_t pinned = (uint64_t)p11.subgroupSize * sc.maxComputeWorkgroupSubgroups;
    c->max_wg_pinned = c->subgroup_pin && pinned < c->max_wg_invocations ? (uint32_t)pinned : c->max_wg_invocations;
    for (int i = 0; i < 3; i++) c->max_wg_count[i] = l->maxComputeWorkGroupCount[i];
    c->max_texel_elements = l->maxTexelBufferElements;
    c->min_texel_align = l->minTexelBufferOffsetAlignment;
    c->max_uniform_range = l->maxUniformBufferRange;
    c->min_uniform_align = l->minUniformBufferOffsetAlignment;
    c->min_storage_align = l->minStorageBufferOffsetAlignment;
    c->timestamp_period_ns = l->timestampComputeAndGraphics ? l->timestampPeriod : 0.0f;
}

static void query_memory(const ember_vk_fn *fn, VkPhysicalDevice phys, ember_vk_caps *c)
{
    VkPhysicalDeviceMemoryProperties m;
    fn->GetPhysicalDeviceMemoryProperties(phys, &m);
    c->device_local_bytes = 0;
    c->unified_memory = false;
    for (uint32_t i = 0; i < m.memoryHeapCount; i++)
        if ((m.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            m.memoryHeaps[i].size > c->device_local_bytes)
            c->device_local_bytes = m.memoryHeaps[i].size;
    /* Unified when the first (preferred) device-local type can be mapped. */
    for (uint32_t i = 0; i < m.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = m.memoryTypes[i].propertyFlags;
        if (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) {
            c->unified_memory = (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
                                (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
            break;
        }
    }
}

static bool uniform_texel(const ember_vk_fn *fn, VkPhysicalDevice phys, VkFormat f)
{
    VkFormatProperties p;
    fn->GetPhysicalDeviceFormatProperties(phys, f, &p);
    return (p.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0;
}

/* Texel-buffer formats the kernels may read weights and activations through (on
 * lavapipe texel fetches are vector gathers, storage loads per-lane loops). */
static void query_formats(const ember_vk_fn *fn, VkPhysicalDevice phys, ember_vk_caps *c)
{
    c->texel_rgba32f = uniform_texel(fn, phys, VK_FORMAT_R32G32B32A32_SFLOAT);
    c->texel_rgba32ui = uniform_texel(fn, phys, VK_FORMAT_R32G32B32A32_UINT);
    c->texel_r16f = uniform_texel(fn, phys, VK_FORMAT_R16_SFLOAT);
    c->texel_r32ui = uniform_texel(fn, phys, VK_FORMAT_R32_UINT);
}

void ember_vk_query_caps(const ember_vk_fn *fn, VkInstance inst, VkPhysicalDevice phys, ember_vk_caps *c)
{
    memset(c, 0, sizeof *c);
    c->list_index = -1;
    query_properties(fn, phys, c);
    if (c->api_version >= VK_API_VERSION_1_2) query_features(fn, inst, phys, c);
    query_memory(fn, phys, c);
    query_formats(fn, phys, c);
}
