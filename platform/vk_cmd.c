/* vk_cmd.c — recording one command buffer per engine step, submitting it and waiting.
 *
 * Descriptor sets come from pools that are reset at every begin: a step binds a few
 * hundred sets at most and allocating them is cheaper than caching. The first error
 * during recording is kept and returned by ember_vk_cmd_submit. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "vk_cmd.h"
#include "vk_internal.h"
#include "vk_pipeline_internal.h"
#include "vk_queue.h"
#include "vk_result.h"

#define SETS_PER_POOL 1024
#define MAX_POOLS 64
#define N_TIMESTAMPS 64
#define WAIT_NS (600ull * 1000 * 1000 * 1000) /* a stuck device becomes an error */

struct ember_vk_cmd {
    ember_vk *vk;
    VkCommandPool pool;
    VkCommandBuffer cb;
    VkFence fence;
    bool in_flight;    /* submitted, not yet waited for */
    bool recording;
    VkDescriptorPool dpools[MAX_POOLS];
    uint32_t n_dpools, cur_dpool;
    VkQueryPool queries;
    uint64_t ts_written; /* bit i: slot i written in this recording */
    uint64_t ts_done;    /* the same for the last completed submission */
    const ember_vk_pipeline *bound;
    uint32_t n_dispatch, last_n_dispatch;
    ember_status status; /* first recording error */
    VkSemaphore sync;    /* the next submission waits for sync_wait and signals sync_signal */
    uint64_t sync_wait, sync_signal;
    ember_err err;
    struct {               /* profiling (ember_vk_cmd_set_profiling) */
        VkQueryPool queries;  /* EMBER_VK_PROFILE_MAX + 1 timestamps */
        ember_vk_dispatch_time *d; /* per dispatch of the recording */
        uint64_t *ts;
        uint32_t n_barriers, last_n, last_barriers;
        double last_ns;
        bool on;
        bool recorded;        /* this recording is profiled */
        bool done;            /* the last completed submission was profiled */
        bool last_ok;         /* the last ember_vk_cmd_dispatch recorded a dispatch */
    } prof;
};

static ember_status add_descriptor_pool(ember_vk_cmd *c)
{
    const ember_vk *vk = c->vk;
    if (c->n_dpools == MAX_POOLS)
        return ember_fail(&c->err, EMBER_ERR_OUT_OF_MEMORY, "too many dispatches in one command buffer");
    /* Room for every set to be all storage or all texel bindings (8 each); uniform
     * buffers are rare (2 per set). */
    VkDescriptorPoolSize sizes[] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, SETS_PER_POOL * 8},
                                    {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, SETS_PER_POOL * 8},
                                    {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, SETS_PER_POOL * 2}};
    VkDescriptorPoolCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                     .maxSets = SETS_PER_POOL, .poolSizeCount = 3, .pPoolSizes = sizes};
    ember_status s = ember_vk_check(vk->fn.CreateDescriptorPool(c->vk->device, &ci, NULL, &c->dpools[c->n_dpools]),
                                    &c->err, "vkCreateDescriptorPool");
    if (s == EMBER_OK) c->n_dpools++;
    return s;
}

ember_status ember_vk_cmd_create(ember_vk *vk, ember_vk_cmd **out, ember_err *err)
{
    ember_vk_cmd *c = ember_calloc(1, sizeof *c);
    *out = NULL;
    if (!c) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    c->vk = vk;
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = vk->queue_family};
    ember_status s = ember_vk_check(vk->fn.CreateCommandPool(vk->device, &pi, NULL, &c->pool), err, "vkCreateCommandPool");
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = c->pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    if (s == EMBER_OK)
        s = ember_vk_check(vk->fn.AllocateCommandBuffers(vk->device, &ai, &c->cb), err, "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (s == EMBER_OK) s = ember_vk_check(vk->fn.CreateFence(vk->device, &fi, NULL, &c->fence), err, "vkCreateFence");
    if (s == EMBER_OK && vk->caps.timestamp_period_ns > 0) {
        VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                    .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = N_TIMESTAMPS};
        s = ember_vk_check(vk->fn.CreateQueryPool(vk->device, &qi, NULL, &c->queries), err, "vkCreateQueryPool");
    }
    if (s == EMBER_OK && (s = add_descriptor_pool(c)) != EMBER_OK) *err = c->err;
    if (s != EMBER_OK) {
        ember_vk_cmd_destroy(c);
        return s;
    }
    *out = c;
    return EMBER_OK;
}

void ember_vk_cmd_destroy(ember_vk_cmd *c)
{
    if (!c) return;
    const ember_vk *vk = c->vk;
    VkDevice d = c->vk->device;
    ember_err ignored;
    ember_vk_cmd_wait(c, UINT64_MAX, &ignored);
    for (uint32_t i = 0; i < c->n_dpools; i++) vk->fn.DestroyDescriptorPool(d, c->dpools[i], NULL);
    if (c->queries) vk->fn.DestroyQueryPool(d, c->queries, NULL);
    if (c->prof.queries) vk->fn.DestroyQueryPool(d, c->prof.queries, NULL);
    ember_free(c->prof.d);
    ember_free(c->prof.ts);
    if (c->fence) vk->fn.DestroyFence(d, c->fence, NULL);
    if (c->pool) vk->fn.DestroyCommandPool(d, c->pool, NULL);
    ember_free(c);
}

ember_status ember_vk_cmd_begin(ember_vk_cmd *c, ember_err *err)
{
    const ember_vk *vk = c->vk;
    ember_status s = ember_vk_cmd_wait(c, UINT64_MAX, err);
    if (s != EMBER_OK) return s;
    VkDevice d = c->vk->device;
    for (uint32_t i = 0; i < c->n_dpools; i++) vk->fn.ResetDescriptorPool(d, c->dpools[i], 0);
    c->cur_dpool = 0;
    c->bound = NULL;
    c->n_dispatch = 0;
    c->ts_written = 0;
    c->status = EMBER_OK;
    c->err.msg[0] = 0;
    s = ember_vk_check(vk->fn.ResetCommandBuffer(c->cb, 0), err, "vkResetCommandBuffer");
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    if (s == EMBER_OK) s = ember_vk_check(vk->fn.BeginCommandBuffer(c->cb, &bi), err, "vkBeginCommandBuffer");
    if (s != EMBER_OK) return s;
    if (c->queries) vk->fn.CmdResetQueryPool(c->cb, c->queries, 0, N_TIMESTAMPS);
    c->prof.n_barriers = 0;
    c->prof.done = false;
    c->prof.recorded = c->prof.on;
    if (c->prof.recorded) {
        vk->fn.CmdResetQueryPool(c->cb, c->prof.queries, 0, EMBER_VK_PROFILE_MAX + 1);
        vk->fn.CmdWriteTimestamp(c->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, c->prof.queries, 0);
    }
    c->recording = true;
    return EMBER_OK;
}

/* Records the first error only; later calls become no-ops via c->status. */
static void record_error(ember_vk_cmd *c, ember_status s)
{
    if (c->status == EMBER_OK) c->status = s;
}

static VkDescriptorSet allocate_set(ember_vk_cmd *c, const ember_vk_pipeline *p)
{
    const ember_vk *vk = c->vk;
    for (;;) {
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .descriptorPool = c->dpools[c->cur_dpool], .descriptorSetCount = 1,
                                          .pSetLayouts = &p->set_layout};
        VkDescriptorSet set;
        VkResult r = vk->fn.AllocateDescriptorSets(c->vk->device, &ai, &set);
        if (r == VK_SUCCESS) return set;
        if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) {
            record_error(c, ember_vk_check(r, &c->err, "vkAllocateDescriptorSets"));
            return VK_NULL_HANDLE;
        }
        if (++c->cur_dpool == c->n_dpools) {
            ember_status s = add_descriptor_pool(c);
            if (s != EMBER_OK) {
                record_error(c, s);
                return VK_NULL_HANDLE;
            }
        }
    }
}

/* Why binding b of kind k cannot be bound, or NULL when it can. */
static const char *binding_problem(const ember_vk_caps *caps, ember_vk_binding_kind k, const ember_vk_span *b)
{
    if (k == EMBER_VK_BIND_TEXEL) return b->view ? NULL : "no texel view";
    if (b->buffer == VK_NULL_HANDLE || b->size == 0) return "empty";
    if (k == EMBER_VK_BIND_UNIFORM)
        return b->size > caps->max_uniform_range ? "larger than maxUniformBufferRange"
               : b->offset % caps->min_uniform_align ? "misaligned"
                                                      : NULL;
    return b->size > caps->max_storage_range ? "larger than maxStorageBufferRange"
           : b->offset % caps->min_storage_align ? "misaligned"
                                                 : NULL;
}

static bool bindings_valid(ember_vk_cmd *c, const ember_vk_pipeline *p, const ember_vk_span *b)
{
    const ember_vk_caps *caps = &c->vk->caps;
    for (uint32_t i = 0; i < p->n_bindings; i++) {
        const char *why = binding_problem(caps, p->kinds[i], &b[i]);
        if (why) {
            record_error(c, ember_fail(&c->err, EMBER_ERR_INVALID_ARG,
                                       "%s: binding %u invalid: %s (size %llu, offset %llu)", p->name, i, why,
                                       (unsigned long long)b[i].size, (unsigned long long)b[i].offset));
            return false;
        }
    }
    return true;
}

static void write_set(ember_vk_cmd *c, const ember_vk_pipeline *p, const ember_vk_span *b, VkDescriptorSet set)
{
    const ember_vk *vk = c->vk;
    VkDescriptorBufferInfo info[EMBER_VK_MAX_BINDINGS];
    VkWriteDescriptorSet w[EMBER_VK_MAX_BINDINGS];
    for (uint32_t i = 0; i < p->n_bindings; i++) {
        info[i] = (VkDescriptorBufferInfo){b[i].buffer, b[i].offset, b[i].size};
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set,
                                      .dstBinding = i, .descriptorCount = 1,
                                      .descriptorType = ember_vk_descriptor_type(p->kinds[i])};
        if (p->kinds[i] == EMBER_VK_BIND_TEXEL) w[i].pTexelBufferView = &b[i].view;
        else w[i].pBufferInfo = &info[i];
    }
    vk->fn.UpdateDescriptorSets(c->vk->device, p->n_bindings, w, 0, NULL);
}

/* Binds the pipeline, its bindings and push constants for the next dispatch: false when a
 * binding is invalid (recorded as the command's error). */
static bool bind_for_dispatch(ember_vk_cmd *c, const ember_vk_pipeline *p, const ember_vk_span *bindings,
                              const void *push)
{
    const ember_vk *vk = c->vk;
    if (!bindings_valid(c, p, bindings)) return false;
    VkDescriptorSet set = allocate_set(c, p);
    if (!set) return false;
    write_set(c, p, bindings, set);
    if (c->bound != p) {
        vk->fn.CmdBindPipeline(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
        c->bound = p;
    }
    vk->fn.CmdBindDescriptorSets(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0, NULL);
    if (p->push_size) vk->fn.CmdPushConstants(c->cb, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p->push_size, push);
    return true;
}

/* After a dispatch is recorded: its profile timestamp and the count. */
static void note_dispatch(ember_vk_cmd *c, const ember_vk_pipeline *p)
{
    if (c->prof.recorded && c->n_dispatch < EMBER_VK_PROFILE_MAX) {
        c->prof.d[c->n_dispatch] = (ember_vk_dispatch_time){p->name, 0, 0};
        c->vk->fn.CmdWriteTimestamp(c->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, c->prof.queries, c->n_dispatch + 1);
        c->prof.last_ok = true;
    }
    c->n_dispatch++;
}

void ember_vk_cmd_dispatch(ember_vk_cmd *c, const ember_vk_pipeline *p, const ember_vk_span *bindings,
                           const void *push, uint32_t gx, uint32_t gy, uint32_t gz)
{
    const uint32_t *max = c->vk->caps.max_wg_count;
    c->prof.last_ok = false;
    if (c->status != EMBER_OK || !c->recording) return;
    if (gx == 0 || gy == 0 || gz == 0) return; /* nothing to do */
    if (gx > max[0] || gy > max[1] || gz > max[2]) {
        record_error(c, ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "%s: %u x %u x %u workgroups exceed the limit",
                                   p->name, gx, gy, gz));
        return;
    }
    if (!bind_for_dispatch(c, p, bindings, push)) return;
    c->vk->fn.CmdDispatch(c->cb, gx, gy, gz);
    note_dispatch(c, p);
}

void ember_vk_cmd_dispatch_indirect(ember_vk_cmd *c, const ember_vk_pipeline *p, const ember_vk_span *bindings,
                                    const void *push, ember_vk_span args)
{
    c->prof.last_ok = false;
    if (c->status != EMBER_OK || !c->recording) return;
    if (args.size < 12 || args.offset % 4) {
        record_error(c, ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "%s: indirect counts need 12 bytes, 4-aligned",
                                   p->name));
        return;
    }
    if (!bind_for_dispatch(c, p, bindings, push)) return;
    c->vk->fn.CmdDispatchIndirect(c->cb, args.buffer, args.offset);
    note_dispatch(c, p);
}

void ember_vk_cmd_barrier(ember_vk_cmd *c)
{
    const ember_vk *vk = c->vk;
    if (c->status != EMBER_OK || !c->recording) return;
    c->prof.n_barriers++;
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                                           VK_ACCESS_INDIRECT_COMMAND_READ_BIT};
    VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vk->fn.CmdPipelineBarrier(c->cb, st, st | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

void ember_vk_cmd_copy(ember_vk_cmd *c, const ember_vk_span *src, const ember_vk_span *dst, VkDeviceSize bytes)
{
    const ember_vk *vk = c->vk;
    if (c->status != EMBER_OK || !c->recording || bytes == 0) return;
    if (bytes > src->size || bytes > dst->size) {
        record_error(c, ember_fail(&c->err, EMBER_ERR_INVALID_ARG, "copy of %llu bytes exceeds a buffer",
                                   (unsigned long long)bytes));
        return;
    }
    VkBufferCopy r = {src->offset, dst->offset, bytes};
    vk->fn.CmdCopyBuffer(c->cb, src->buffer, dst->buffer, 1, &r);
}

void ember_vk_cmd_fill(ember_vk_cmd *c, const ember_vk_span *dst, uint32_t value)
{
    const ember_vk *vk = c->vk;
    if (c->status != EMBER_OK || !c->recording) return;
    vk->fn.CmdFillBuffer(c->cb, dst->buffer, dst->offset, dst->size & ~(VkDeviceSize)3, value);
}

void ember_vk_cmd_timestamp(ember_vk_cmd *c, uint32_t i)
{
    const ember_vk *vk = c->vk;
    if (!c->queries || i >= N_TIMESTAMPS || c->status != EMBER_OK || !c->recording) return;
    vk->fn.CmdWriteTimestamp(c->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, c->queries, i);
    c->ts_written |= 1ull << i;
}

ember_status ember_vk_cmd_submit_nowait(ember_vk_cmd *c, ember_err *err)
{
    const ember_vk *vk = c->vk;
    if (!c->recording) return ember_fail(err, EMBER_ERR_INVALID_ARG, "submit without begin");
    c->recording = false;
    /* Make shader and transfer writes visible to the host after the fence. */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vk->fn.CmdPipelineBarrier(c->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    ember_status s = ember_vk_check(vk->fn.EndCommandBuffer(c->cb), err, "vkEndCommandBuffer");
    if (s != EMBER_OK) return s;
    if (c->status != EMBER_OK) {
        *err = c->err;
        return c->status;
    }
    VkDevice d = c->vk->device;
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &c->cb};
    VkPipelineStageFlags stage = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    VkTimelineSemaphoreSubmitInfo ts = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                        .waitSemaphoreValueCount = 1, .pWaitSemaphoreValues = &c->sync_wait,
                                        .signalSemaphoreValueCount = 1, .pSignalSemaphoreValues = &c->sync_signal};
    if (c->sync) {
        si.pNext = &ts;
        si.waitSemaphoreCount = c->sync_wait ? 1 : 0;
        si.pWaitSemaphores = &c->sync;
        si.pWaitDstStageMask = &stage;
        si.signalSemaphoreCount = c->sync_signal ? 1 : 0;
        si.pSignalSemaphores = &c->sync;
        ts.waitSemaphoreValueCount = si.waitSemaphoreCount;
        ts.signalSemaphoreValueCount = si.signalSemaphoreCount;
    }
    s = ember_vk_check(vk->fn.ResetFences(d, 1, &c->fence), err, "vkResetFences");
    if (s == EMBER_OK) s = ember_vk_check(ember_vk_queue_submit(c->vk, &si, c->fence), err, "vkQueueSubmit");
    c->sync = VK_NULL_HANDLE; /* one submission only */
    if (s != EMBER_OK) return s;
    c->in_flight = true;
    c->last_n_dispatch = c->n_dispatch;
    c->prof.last_barriers = c->prof.n_barriers;
    c->ts_done = 0;
    return EMBER_OK;
}

/* The dispatches' times from the timestamps around them (after the fence). */
static void read_profile(ember_vk_cmd *c)
{
    const ember_vk *vk = c->vk;
    uint32_t n = c->last_n_dispatch < EMBER_VK_PROFILE_MAX ? c->last_n_dispatch : EMBER_VK_PROFILE_MAX;
    VkResult r = vk->fn.GetQueryPoolResults(c->vk->device, c->prof.queries, 0, n + 1, (n + 1) * sizeof(uint64_t),
                                       c->prof.ts, sizeof(uint64_t), VK_QUERY_RESULT_64_BIT);
    if (r != VK_SUCCESS) return;
    double period = c->vk->caps.timestamp_period_ns;
    for (uint32_t i = 0; i < n; i++) c->prof.d[i].ns = (double)(c->prof.ts[i + 1] - c->prof.ts[i]) * period;
    c->prof.last_n = n;
    c->prof.last_ns = (double)(c->prof.ts[n] - c->prof.ts[0]) * period;
    c->prof.done = true;
}

ember_status ember_vk_cmd_wait(ember_vk_cmd *c, uint64_t timeout_ns, ember_err *err)
{
    if (!c->in_flight) return EMBER_OK;
    VkResult r = ember_vk_wait_fence(c->vk, c->fence, timeout_ns < WAIT_NS ? timeout_ns : WAIT_NS);
    if (r == VK_TIMEOUT && timeout_ns < WAIT_NS) return EMBER_NOT_READY;
    c->in_flight = false;
    if (r == VK_TIMEOUT) return ember_fail(err, EMBER_ERR_DEVICE_LOST, "GPU work did not finish in 600 s");
    ember_status s = ember_vk_check(r, err, "vkWaitForFences");
    c->ts_done = s == EMBER_OK ? c->ts_written : 0;
    if (s == EMBER_OK && c->prof.recorded) read_profile(c);
    return s;
}

ember_status ember_vk_cmd_submit(ember_vk_cmd *c, ember_err *err)
{
    ember_status s = ember_vk_cmd_submit_nowait(c, err);
    return s == EMBER_OK ? ember_vk_cmd_wait(c, UINT64_MAX, err) : s;
}

double ember_vk_cmd_elapsed_ns(ember_vk_cmd *c, uint32_t a, uint32_t b)
{
    const ember_vk *vk = c->vk;
    if (!c->queries || a >= N_TIMESTAMPS || b >= N_TIMESTAMPS) return -1;
    if (!(c->ts_done >> a & 1) || !(c->ts_done >> b & 1)) return -1;
    uint64_t ta, tb;
    VkQueryResultFlags f = VK_QUERY_RESULT_64_BIT;
    if (vk->fn.GetQueryPoolResults(c->vk->device, c->queries, a, 1, 8, &ta, 8, f) != VK_SUCCESS) return -1;
    if (vk->fn.GetQueryPoolResults(c->vk->device, c->queries, b, 1, 8, &tb, 8, f) != VK_SUCCESS) return -1;
    return (double)(tb - ta) * c->vk->caps.timestamp_period_ns;
}

uint32_t ember_vk_cmd_dispatch_count(const ember_vk_cmd *c) { return c->last_n_dispatch; }

ember_status ember_vk_cmd_sync_next(ember_vk_cmd *c, VkSemaphore timeline, uint64_t wait_value,
                                    uint64_t signal_value, ember_err *err)
{
    if (timeline && !c->vk->caps.timeline_semaphore)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "the device was created without timelineSemaphore");
    c->sync = timeline;
    c->sync_wait = wait_value;
    c->sync_signal = signal_value;
    return EMBER_OK;
}

ember_status ember_vk_cmd_set_profiling(ember_vk_cmd *c, bool on, ember_err *err)
{
    const ember_vk *vk = c->vk;
    if (on && !c->prof.queries) {
        if (c->vk->caps.timestamp_period_ns <= 0)
            return ember_fail(err, EMBER_ERR_UNSUPPORTED, "the device has no timestamps on its compute queue");
        c->prof.d = ember_calloc(EMBER_VK_PROFILE_MAX, sizeof *c->prof.d);
        c->prof.ts = ember_calloc(EMBER_VK_PROFILE_MAX + 1, sizeof *c->prof.ts);
        if (!c->prof.d || !c->prof.ts) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                    .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = EMBER_VK_PROFILE_MAX + 1};
        ember_status s = ember_vk_check(vk->fn.CreateQueryPool(c->vk->device, &qi, NULL, &c->prof.queries), err,
                                        "vkCreateQueryPool");
        if (s != EMBER_OK) return s;
    }
    c->prof.on = on;
    return EMBER_OK;
}

void ember_vk_cmd_note_bytes(ember_vk_cmd *c, uint64_t bytes)
{
    if (c->prof.last_ok) c->prof.d[c->n_dispatch - 1].bytes += bytes;
}

uint32_t ember_vk_cmd_profile(const ember_vk_cmd *c, const ember_vk_dispatch_time **out, uint32_t *n_barriers,
                              double *gpu_ns)
{
    bool done = c->prof.done && !c->recording;
    *out = done ? c->prof.d : NULL;
    *n_barriers = done ? c->prof.last_barriers : 0;
    *gpu_ns = done ? c->prof.last_ns : 0;
    return done ? c->prof.last_n : 0;
}
