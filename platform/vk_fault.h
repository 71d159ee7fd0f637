/* vk_fault.h — faults injected by tests (ember_model_inject_faults) and the device's lost
 * state (vk_fault.c). Each check is made where the real call would fail: the allocation
 * in vk_memory.c, the submission in vk_queue.c, the waits in vk_cmd.c and vk_transfer.c. */
#ifndef EMBER_VK_FAULT_H
#define EMBER_VK_FAULT_H

#include <stdbool.h>
#include <vulkan/vulkan.h>

#include "ember.h"
#include "vk_types.h"

/* Arms the countdowns (replacing the armed ones). */
void ember_vk_inject_faults(ember_vk *vk, const ember_faults *f);
/* VK_ERROR_OUT_OF_DEVICE_MEMORY when this allocation is the armed one, else VK_SUCCESS. */
VkResult ember_vk_fault_alloc(ember_vk *vk);
/* VK_ERROR_DEVICE_LOST when the device is lost or this submission / wait is the armed
 * one (the device is lost from then on), else VK_SUCCESS. */
VkResult ember_vk_fault_submit(ember_vk *vk);
VkResult ember_vk_fault_wait(ember_vk *vk);
/* Records a real VK_ERROR_DEVICE_LOST from the driver; returns r. */
VkResult ember_vk_note_result(ember_vk *vk, VkResult r);
bool ember_vk_lost(const ember_vk *vk);

#endif
