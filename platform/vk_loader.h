/* vk_loader.h — the Vulkan functions Ember calls, as a table loaded at run time: from the
 * Vulkan loader Ember opens itself (libvulkan.so.1, vulkan-1.dll), or through the
 * application's vkGetInstanceProcAddr (ember_vulkan_device.get_instance_proc_addr), so
 * that a game's loader and layers are Ember's too. The library links no Vulkan library
 * and keeps no global table: each device (ember_vk) holds its own. Platform-internal. */
#ifndef EMBER_VK_LOADER_H
#define EMBER_VK_LOADER_H

#include <vulkan/vulkan.h>

#include "common/error.h"

/* Before an instance: what vkGetInstanceProcAddr(NULL, ...) gives. */
#define EMBER_VK_GLOBAL_FUNCTIONS(X) X(CreateInstance) X(EnumerateInstanceLayerProperties) \
    X(EnumerateInstanceExtensionProperties)
/* Of an instance and its physical devices. */
#define EMBER_VK_INSTANCE_FUNCTIONS(X) X(DestroyInstance) X(EnumeratePhysicalDevices) \
    X(GetPhysicalDeviceQueueFamilyProperties) X(EnumerateDeviceExtensionProperties) X(GetPhysicalDeviceProperties) \
    X(GetPhysicalDeviceProperties2) X(GetPhysicalDeviceFeatures2) X(GetPhysicalDeviceMemoryProperties) \
    X(GetPhysicalDeviceFormatProperties) X(CreateDevice) X(GetDeviceProcAddr)
/* Of a device (loaded with vkGetDeviceProcAddr: no loader trampoline on the way). */
#define EMBER_VK_DEVICE_FUNCTIONS(X) X(DestroyDevice) X(GetDeviceQueue) X(DeviceWaitIdle) X(QueueSubmit) \
    X(CreateBuffer) X(DestroyBuffer) X(GetBufferMemoryRequirements) X(AllocateMemory) X(FreeMemory) \
    X(BindBufferMemory) X(MapMemory) X(UnmapMemory) X(FlushMappedMemoryRanges) X(InvalidateMappedMemoryRanges) \
    X(CreateBufferView) X(DestroyBufferView) X(CreateShaderModule) X(DestroyShaderModule) \
    X(CreateDescriptorSetLayout) X(DestroyDescriptorSetLayout) X(CreatePipelineLayout) X(DestroyPipelineLayout) \
    X(CreateComputePipelines) X(DestroyPipeline) X(CreatePipelineCache) X(DestroyPipelineCache) \
    X(GetPipelineCacheData) X(MergePipelineCaches) X(CreateDescriptorPool) X(DestroyDescriptorPool) \
    X(ResetDescriptorPool) X(AllocateDescriptorSets) X(UpdateDescriptorSets) X(CreateCommandPool) \
    X(DestroyCommandPool) X(AllocateCommandBuffers) X(BeginCommandBuffer) X(EndCommandBuffer) \
    X(ResetCommandBuffer) X(CreateFence) X(DestroyFence) X(ResetFences) X(WaitForFences) X(CreateQueryPool) \
    X(DestroyQueryPool) X(GetQueryPoolResults) X(CmdBindPipeline) X(CmdBindDescriptorSets) X(CmdPushConstants) \
    X(CmdDispatch) X(CmdDispatchIndirect) X(CmdPipelineBarrier) X(CmdCopyBuffer) X(CmdFillBuffer) X(CmdResetQueryPool) \
    X(CmdWriteTimestamp)

typedef struct ember_vk_fn {
    void *library;      /* the loader Ember opened, or NULL (the application's) */
    PFN_vkGetInstanceProcAddr GetInstanceProcAddr;
#define EMBER_VK_FN_FIELD(name) PFN_vk##name name;
    EMBER_VK_GLOBAL_FUNCTIONS(EMBER_VK_FN_FIELD)
    EMBER_VK_INSTANCE_FUNCTIONS(EMBER_VK_FN_FIELD)
    EMBER_VK_DEVICE_FUNCTIONS(EMBER_VK_FN_FIELD)
#undef EMBER_VK_FN_FIELD
} ember_vk_fn;

/* The global functions, through gipa (the application's vkGetInstanceProcAddr), or from
 * the Vulkan loader Ember opens when gipa is NULL. EMBER_ERR_NO_DEVICE, naming the files
 * tried, when there is no loader. */
ember_status ember_vk_fn_open(ember_vk_fn *f, PFN_vkGetInstanceProcAddr gipa, ember_err *err);
/* The functions of instance, then of device: EMBER_ERR_NO_DEVICE naming the first one
 * missing (a Vulkan 1.2 driver has them all). */
ember_status ember_vk_fn_instance(ember_vk_fn *f, VkInstance instance, ember_err *err);
ember_status ember_vk_fn_device(ember_vk_fn *f, VkDevice device, ember_err *err);
/* Closes the loader Ember opened (after every object of it is destroyed). */
void ember_vk_fn_close(ember_vk_fn *f);

#endif
