/* vk_queue.h — submitting to the device's queue (vk_queue.c). */
#ifndef EMBER_VK_QUEUE_H
#define EMBER_VK_QUEUE_H

#include <vulkan/vulkan.h>

#include "vk_types.h"

/* vkQueueSubmit on the device's queue, serialised with every other submission to it
 * (Ember's threads and, through its lock callbacks, the application's). */
VkResult ember_vk_queue_submit(ember_vk *vk, const VkSubmitInfo *si, VkFence fence);
/* vkWaitForFences on one fence (VK_TIMEOUT when not signalled in time). Once the device
 * is lost, every submission and every completed wait gives VK_ERROR_DEVICE_LOST. */
VkResult ember_vk_wait_fence(ember_vk *vk, VkFence fence, uint64_t timeout_ns);

#endif
