/* vk_queue.c — submissions to the device's one queue, serialised (Vulkan requires
 * external synchronisation of a VkQueue), and waits for them; both where a lost device
 * (real or injected, vk_fault.h) shows. */
#include "vk_fault.h"
#include "vk_internal.h"
#include "vk_queue.h"

VkResult ember_vk_queue_submit(ember_vk *vk, const VkSubmitInfo *si, VkFence fence)
{
    VkResult r = ember_vk_fault_submit(vk);
    if (r != VK_SUCCESS) return r; /* lost: nothing is submitted, so nothing is waited for */
    ember_mutex_lock(&vk->queue_mu);
    if (vk->lock_queue) vk->lock_queue(vk->queue_user);
    r = vk->fn.QueueSubmit(vk->queue, 1, si, fence);
    if (vk->unlock_queue) vk->unlock_queue(vk->queue_user);
    ember_mutex_unlock(&vk->queue_mu);
    return ember_vk_note_result(vk, r);
}

VkResult ember_vk_wait_fence(ember_vk *vk, VkFence fence, uint64_t timeout_ns)
{
    VkResult r = vk->fn.WaitForFences(vk->device, 1, &fence, VK_TRUE, timeout_ns);
    /* An injected loss is reported once the work is done, so that nothing it uses is
     * freed under it; a real one as the driver says. */
    return r == VK_SUCCESS ? ember_vk_fault_wait(vk) : ember_vk_note_result(vk, r);
}
