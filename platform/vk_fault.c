/* vk_fault.c — injected faults and the lost state (vk_fault.h). */
#include "vk_fault.h"
#include "vk_internal.h"

void ember_vk_inject_faults(ember_vk *vk, const ember_faults *f)
{
    atomic_store(&vk->fault.alloc, f ? f->device_alloc : 0);
    atomic_store(&vk->fault.submit, f ? f->submit_lost : 0);
    atomic_store(&vk->fault.wait, f ? f->wait_lost : 0);
}

/* Counts an event down; true when it is the armed one (the count was 1). Engines on one
 * model step from different threads: a compare-and-swap loop, so each event counts once. */
static bool fires(_Atomic uint32_t *left)
{
    uint32_t n = atomic_load(left);
    while (n && !atomic_compare_exchange_weak(left, &n, n - 1)) {
    }
    return n == 1;
}

VkResult ember_vk_fault_alloc(ember_vk *vk)
{
    return fires(&vk->fault.alloc) ? VK_ERROR_OUT_OF_DEVICE_MEMORY : VK_SUCCESS;
}

static VkResult lose_if(ember_vk *vk, bool fire)
{
    if (fire) atomic_store(&vk->fault.lost, true);
    return atomic_load(&vk->fault.lost) ? VK_ERROR_DEVICE_LOST : VK_SUCCESS;
}

VkResult ember_vk_fault_submit(ember_vk *vk) { return lose_if(vk, fires(&vk->fault.submit)); }
VkResult ember_vk_fault_wait(ember_vk *vk) { return lose_if(vk, fires(&vk->fault.wait)); }

VkResult ember_vk_note_result(ember_vk *vk, VkResult r)
{
    if (r == VK_ERROR_DEVICE_LOST) atomic_store(&vk->fault.lost, true);
    return r;
}

bool ember_vk_lost(const ember_vk *vk) { return atomic_load(&((ember_vk *)vk)->fault.lost); }
