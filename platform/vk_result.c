/* vk_result.c — VkResult to ember_status and message. */
#include "vk_result.h"

const char *ember_vk_result_name(VkResult r)
{
    switch (r) {
#define R(x) case x: return #x;
    R(VK_SUCCESS) R(VK_NOT_READY) R(VK_TIMEOUT) R(VK_INCOMPLETE)
    R(VK_ERROR_OUT_OF_HOST_MEMORY) R(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    R(VK_ERROR_INITIALIZATION_FAILED) R(VK_ERROR_DEVICE_LOST) R(VK_ERROR_MEMORY_MAP_FAILED)
    R(VK_ERROR_LAYER_NOT_PRESENT) R(VK_ERROR_EXTENSION_NOT_PRESENT)
    R(VK_ERROR_FEATURE_NOT_PRESENT) R(VK_ERROR_INCOMPATIBLE_DRIVER)
    R(VK_ERROR_TOO_MANY_OBJECTS) R(VK_ERROR_FORMAT_NOT_SUPPORTED)
    R(VK_ERROR_FRAGMENTED_POOL) R(VK_ERROR_OUT_OF_POOL_MEMORY) R(VK_ERROR_UNKNOWN)
#undef R
    default: return "VK_ERROR_(other)";
    }
}

ember_status ember_vk_check(VkResult r, ember_err *err, const char *what)
{
    if (r == VK_SUCCESS) return EMBER_OK;
    ember_status s = EMBER_ERR_VULKAN;
    if (r == VK_ERROR_OUT_OF_HOST_MEMORY) s = EMBER_ERR_OUT_OF_MEMORY;
    else if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY) s = EMBER_ERR_DEVICE_MEMORY;
    else if (r == VK_ERROR_DEVICE_LOST) s = EMBER_ERR_DEVICE_LOST;
    return ember_fail(err, s, "%s: %s (%d)", what, ember_vk_result_name(r), (int)r);
}
