/* vk_queue.c — submissions to the device's one queue, serialised (Vulkan requires
 * external synchronisation of a VkQueue). */
#include "vk_internal.h"
#include "vk_queue.h"

VkResult ember_vk_queue_submit(ember_vk *vk, const VkSubmitInfo *si, VkFence fence)
{
    pthread_mutex_lock(&vk->queue_mu);
    if (vk->lock_queue) vk->lock_queue(vk->queue_user);
    VkResult r = vkQueueSubmit(vk->queue, 1, si, fence);
    if (vk->unlock_queue) vk->unlock_queue(vk->queue_user);
    pthread_mutex_unlock(&vk->queue_mu);
    return r;
}
