/* vk_transfer.c — uploads and read-backs (vk_transfer.h). Mapped spans are plain
 * memcpy (flushed or invalidated where not coherent); the others go through one staging
 * buffer of the device (host memory, flushed after the CPU writes it and invalidated
 * before the CPU reads it where it is not coherent), 64 MiB at a time. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "vk_internal.h"
#include "vk_queue.h"
#include "vk_result.h"
#include "vk_transfer.h"

#define STAGING_BYTES (64ull << 20)

struct ember_vk_transfer {
    const ember_vk *vk;         /* its functions */
    VkDevice device;
    VkCommandPool pool;
    VkCommandBuffer cb;
    VkFence fence;
    ember_vk_arena *arena;
    ember_vk_span staging;
};

void ember_vk_transfer_free(ember_vk_transfer *x)
{
    if (!x) return;
    const ember_vk *vk = x->vk;
    ember_vk_arena_destroy(x->arena);
    if (x->fence) vk->fn.DestroyFence(x->device, x->fence, NULL);
    if (x->pool) vk->fn.DestroyCommandPool(x->device, x->pool, NULL);
    ember_free(x);
}

static ember_status make_transfer(ember_vk *vk, ember_vk_transfer *x, ember_err *err)
{
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = vk->queue_family};
    ember_status s = ember_vk_check(vk->fn.CreateCommandPool(vk->device, &pi, NULL, &x->pool), err,
                                    "vkCreateCommandPool");
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (s == EMBER_OK)
        s = ember_vk_check(vk->fn.CreateFence(vk->device, &fi, NULL, &x->fence), err, "vkCreateFence");
    if (s == EMBER_OK) s = ember_vk_arena_create(vk, &x->arena, err);
    if (s == EMBER_OK) s = ember_vk_alloc(x->arena, STAGING_BYTES, EMBER_VK_MEM_HOST, &x->staging, err);
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = x->pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    if (s == EMBER_OK)
        s = ember_vk_check(vk->fn.AllocateCommandBuffers(vk->device, &ai, &x->cb), err,
                           "vkAllocateCommandBuffers");
    return s;
}

/* The device's transfer state, made on first use. */
static ember_status transfer_of(ember_vk *vk, ember_vk_transfer **out, ember_err *err)
{
    if (!vk->xfer) {
        ember_vk_transfer *x = ember_calloc(1, sizeof *x);
        if (!x) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        x->vk = vk, x->device = vk->device;
        ember_status s = make_transfer(vk, x, err);
        if (s != EMBER_OK) {
            ember_vk_transfer_free(x);
            return s;
        }
        vk->xfer = x;
    }
    *out = vk->xfer;
    return EMBER_OK;
}

/* One buffer copy, submitted and waited for. */
static ember_status copy_and_wait(ember_vk *vk, ember_vk_transfer *x, VkBuffer src, VkDeviceSize src_off, VkBuffer dst,
                                  VkDeviceSize dst_off, VkDeviceSize n, ember_err *err)
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    ember_status s = ember_vk_check(vk->fn.BeginCommandBuffer(x->cb, &bi), err, "vkBeginCommandBuffer");
    if (s != EMBER_OK) return s;
    VkBufferCopy region = {src_off, dst_off, n};
    vk->fn.CmdCopyBuffer(x->cb, src, dst, 1, &region);
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT};
    vk->fn.CmdPipelineBarrier(x->cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0,
                         NULL, 0, NULL);
    s = ember_vk_check(vk->fn.EndCommandBuffer(x->cb), err, "vkEndCommandBuffer");
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                       .pCommandBuffers = &x->cb};
    if (s == EMBER_OK) s = ember_vk_check(vk->fn.ResetFences(vk->device, 1, &x->fence), err, "vkResetFences");
    if (s == EMBER_OK)
        s = ember_vk_check(ember_vk_queue_submit(vk, &si, x->fence), err, "vkQueueSubmit");
    if (s == EMBER_OK)
        s = ember_vk_check(ember_vk_wait_fence(vk, x->fence, UINT64_MAX), err,
                           "vkWaitForFences");
    return s;
}

static ember_status check_range(const ember_vk_span *s, VkDeviceSize off, size_t n, ember_err *err)
{
    if (off > s->size || n > s->size - off)
        return ember_fail(err, EMBER_ERR_INVALID_ARG, "transfer of %zu bytes at %llu outside a %llu-byte buffer",
                          n, (unsigned long long)off, (unsigned long long)s->size);
    return EMBER_OK;
}

ember_status ember_vk_upload(ember_vk *vk, const ember_vk_span *dst, VkDeviceSize offset,
                             const void *src, size_t n, ember_err *err)
{
    ember_status s = check_range(dst, offset, n, err);
    if (s != EMBER_OK) return s;
    if (dst->host) {
        memcpy((char *)dst->host + offset, src, n);
        ember_vk_span written = ember_vk_span_sub(*dst, offset, n);
        return ember_vk_flush(vk, &written, 1, err);
    }
    ember_vk_transfer *x;
    ember_mutex_lock(&vk->xfer_mu); /* one staging buffer per device */
    s = transfer_of(vk, &x, err);
    for (size_t done = 0; done < n && s == EMBER_OK;) {
        size_t k = n - done < STAGING_BYTES ? n - done : STAGING_BYTES;
        memcpy(x->staging.host, (const char *)src + done, k);
        ember_vk_span written = ember_vk_span_sub(x->staging, 0, k);
        s = ember_vk_flush(vk, &written, 1, err);
        if (s == EMBER_OK)
            s = copy_and_wait(vk, x, x->staging.buffer, x->staging.offset, dst->buffer,
                              dst->offset + offset + done, k, err);
        done += k;
    }
    if (s == EMBER_OK && n) atomic_fetch_add(&vk->counts.staged_uploads, 1);
    ember_mutex_unlock(&vk->xfer_mu);
    return s;
}

ember_status ember_vk_download(ember_vk *vk, const ember_vk_span *src, VkDeviceSize offset,
                               void *dst, size_t n, ember_err *err)
{
    ember_status s = check_range(src, offset, n, err);
    if (s != EMBER_OK) return s;
    if (src->host) {
        ember_vk_span read = ember_vk_span_sub(*src, offset, n);
        s = ember_vk_invalidate(vk, &read, 1, err);
        if (s == EMBER_OK) memcpy(dst, (const char *)src->host + offset, n);
        return s;
    }
    ember_vk_transfer *x;
    ember_mutex_lock(&vk->xfer_mu);
    s = transfer_of(vk, &x, err);
    for (size_t done = 0; done < n && s == EMBER_OK;) {
        size_t k = n - done < STAGING_BYTES ? n - done : STAGING_BYTES;
        ember_vk_span read = ember_vk_span_sub(x->staging, 0, k);
        s = copy_and_wait(vk, x, src->buffer, src->offset + offset + done, x->staging.buffer, x->staging.offset,
                          k, err);
        if (s == EMBER_OK) s = ember_vk_invalidate(vk, &read, 1, err);
        if (s == EMBER_OK) memcpy((char *)dst + done, x->staging.host, k);
        done += k;
    }
    if (s == EMBER_OK && n) atomic_fetch_add(&vk->counts.staged_downloads, 1);
    ember_mutex_unlock(&vk->xfer_mu);
    return s;
}
