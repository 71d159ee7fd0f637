/* vk_result.h — VkResult to ember_status (vk_result.c). Platform-internal. */
#ifndef EMBER_VK_RESULT_H
#define EMBER_VK_RESULT_H

#include <vulkan/vulkan.h>

#include "common/error.h"

/* Turns a failed VkResult into a status with "what: VK_ERROR_..." as the message. */
ember_status ember_vk_check(VkResult r, ember_err *err, const char *what);
const char *ember_vk_result_name(VkResult r);

#endif
