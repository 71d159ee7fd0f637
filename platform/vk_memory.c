/* vk_memory.c — arenas: a few large VkDeviceMemory blocks, each with one VkBuffer over
 * all of it (bound at offset 0, so a span's offset in its buffer is also its offset in
 * the memory), handed out as spans by bumping an offset. Models and engines allocate once
 * at start-up and free everything together, so no per-span free is needed. Also the
 * flushes and invalidations of mapped memory that is not coherent. */
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "vk_fault.h"
#include "vk_internal.h"
#include "vk_memory.h"
#include "vk_result.h"

#define CHUNK_MIN (64ull << 20)
#define CHUNK_MAX (256ull << 20)

typedef struct chunk {
    VkDeviceMemory memory;
    VkBuffer buffer;
    VkDeviceSize size, used;
    void *map; /* NULL when not mapped */
    VkDeviceMemory noncoherent; /* memory when mapped and to be flushed / invalidated */
    ember_vk_mem kind;
} chunk;

struct ember_vk_arena {
    ember_vk *vk;
    chunk *chunks;
    uint32_t n, cap;
    uint64_t bytes;
    VkBufferView *views;   /* texel views over spans, destroyed before the buffers */
    bool over_budget_ok;   /* counted, but not refused by the budget */
    uint32_t n_views, cap_views;
};

ember_status ember_vk_arena_create(ember_vk *vk, ember_vk_arena **out, ember_err *err)
{
    *out = ember_calloc(1, sizeof **out);
    if (!*out) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    (*out)->vk = vk;
    return EMBER_OK;
}

void ember_vk_arena_destroy(ember_vk_arena *a)
{
    if (!a) return;
    const ember_vk *vk = a->vk;
    VkDevice d = a->vk->device;
    for (uint32_t i = 0; i < a->n_views; i++) vk->fn.DestroyBufferView(d, a->views[i], NULL);
    ember_free(a->views);
    for (uint32_t i = 0; i < a->n; i++) {
        vk->fn.DestroyBuffer(d, a->chunks[i].buffer, NULL);
        if (a->chunks[i].map) vk->fn.UnmapMemory(d, a->chunks[i].memory);
        vk->fn.FreeMemory(d, a->chunks[i].memory, NULL);
    }
    atomic_fetch_sub(&a->vk->mem_bytes, a->bytes);
    ember_free(a->chunks);
    ember_free(a);
}

uint64_t ember_vk_arena_bytes(const ember_vk_arena *a) { return a->bytes; }

void ember_vk_arena_allow_over_budget(ember_vk_arena *a) { a->over_budget_ok = true; }

ember_vk *ember_vk_arena_device(const ember_vk_arena *a) { return a->vk; }

ember_status ember_vk_arena_own_view(ember_vk_arena *a, VkBufferView view, ember_err *err)
{
    const ember_vk *vk = a->vk;
    if (a->n_views == a->cap_views) {
        uint32_t cap = a->cap_views ? a->cap_views * 2 : 16;
        VkBufferView *v = ember_realloc(a->views, cap * sizeof *v);
        if (!v) {
            vk->fn.DestroyBufferView(a->vk->device, view, NULL);
            return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        }
        a->views = v;
        a->cap_views = cap;
    }
    a->views[a->n_views++] = view;
    return EMBER_OK;
}

/* Memory type for kind among those allowed by type_bits: DEVICE prefers device-local,
 * HOST needs host-visible and prefers coherent, then cached (fast reads back); memory
 * that is only host-visible (some mobile and integrated GPUs) is flushed and invalidated
 * (ember_vk_flush, ember_vk_invalidate). */
static int find_memory_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t type_bits,
                            ember_vk_mem kind, int skip)
{
    const VkMemoryPropertyFlags v = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, hv = v | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                cached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    VkMemoryPropertyFlags want[4], need;
    int n_want;
    if (kind == EMBER_VK_MEM_DEVICE) {
        want[0] = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
        want[1] = 0;
        n_want = 2;
    } else {
        want[0] = hv | cached;
        want[1] = hv;
        want[2] = v | cached;
        want[3] = v;
        n_want = 4;
    }
    int seen = 0;
    for (int w = 0; w < n_want; w++) {
        need = want[w];
        for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
            if (!(type_bits & (1u << i)) || (mp->memoryTypes[i].propertyFlags & need) != need) continue;
            if (seen++ == skip) return (int)i;
        }
    }
    return -1;
}

/* Counts size against the device's memory budget, or says by how much it is exceeded. */
static ember_status reserve_budget(ember_vk *vk, VkDeviceSize size, bool over_ok, ember_err *err)
{
    uint64_t used = atomic_fetch_add(&vk->mem_bytes, size), budget = atomic_load(&vk->mem_budget);
    if (!budget || over_ok || used + size <= budget) return EMBER_OK;
    atomic_fetch_sub(&vk->mem_bytes, size);
    return ember_fail(err, EMBER_ERR_DEVICE_MEMORY,
                      "device-memory budget of %.1f MiB exceeded: %.1f MiB in use, %.1f MiB more asked for",
                      budget / 1048576.0, used / 1048576.0, size / 1048576.0);
}

static VkDeviceSize align_up(VkDeviceSize x, VkDeviceSize a) { return (x + a - 1) / a * a; }

static ember_status new_chunk(ember_vk_arena *a, VkDeviceSize size, ember_vk_mem kind, ember_err *err)
{
    ember_vk *vk = a->vk;
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? a->cap * 2 : 8;
        chunk *c = ember_realloc(a->chunks, cap * sizeof *c);
        if (!c) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        a->chunks = c;
        a->cap = cap;
    }
    chunk ch = {.size = size, .kind = kind};
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = size,
                             /* Any span may be bound as any kind (ember_vk_binding_kind) or
                              * hold a dispatch's workgroup counts (ember_vk_cmd_dispatch_indirect). */
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT |
                                      VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    ember_status s = ember_vk_check(vk->fn.CreateBuffer(vk->device, &bi, NULL, &ch.buffer), err, "vkCreateBuffer");
    if (s != EMBER_OK) return s;
    VkMemoryRequirements req;
    vk->fn.GetBufferMemoryRequirements(vk->device, ch.buffer, &req);
    /* Host memory ends on a nonCoherentAtomSize boundary, so that a flushed range widened
     * to whole atoms stays inside the allocation. */
    if (kind == EMBER_VK_MEM_HOST) req.size = align_up(req.size, vk->atom);
    if ((s = reserve_budget(vk, req.size, a->over_budget_ok, err)) != EMBER_OK) {
        vk->fn.DestroyBuffer(vk->device, ch.buffer, NULL);
        return s;
    }

    /* Try each acceptable memory type in order of preference until one allocates. */
    VkResult r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    int type = -1;
    bool injected = ember_vk_fault_alloc(vk) != VK_SUCCESS; /* as if every type were full */
    for (int skip = 0; r != VK_SUCCESS && !injected; skip++) {
        type = find_memory_type(&vk->mem_props, req.memoryTypeBits, kind, skip);
        if (type < 0) break;
        VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                   .allocationSize = req.size, .memoryTypeIndex = (uint32_t)type};
        r = vk->fn.AllocateMemory(vk->device, &ai, NULL, &ch.memory);
    }
    if (r != VK_SUCCESS) {
        atomic_fetch_sub(&vk->mem_bytes, req.size);
        vk->fn.DestroyBuffer(vk->device, ch.buffer, NULL);
        if (type < 0 && !injected && r == VK_ERROR_OUT_OF_DEVICE_MEMORY && kind == EMBER_VK_MEM_HOST)
            return ember_fail(err, EMBER_ERR_VULKAN, "no host-visible memory type");
        return ember_vk_check(r, err, "vkAllocateMemory");
    }
    s = ember_vk_check(vk->fn.BindBufferMemory(vk->device, ch.buffer, ch.memory, 0), err, "vkBindBufferMemory");
    /* Host spans are mapped; device-local ones only where the memory is coherent and the
     * device is not treated as discrete (else they go through staging). */
    VkMemoryPropertyFlags flags = vk->mem_props.memoryTypes[type].propertyFlags;
    bool visible = flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, coherent = flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    bool map = visible && (kind == EMBER_VK_MEM_HOST || (coherent && !vk->discrete));
    if (s == EMBER_OK && map)
        s = ember_vk_check(vk->fn.MapMemory(vk->device, ch.memory, 0, VK_WHOLE_SIZE, 0, &ch.map), err, "vkMapMemory");
    if (map && (!coherent || vk->discrete)) ch.noncoherent = ch.memory;
    if (s != EMBER_OK) {
        atomic_fetch_sub(&vk->mem_bytes, req.size);
        vk->fn.DestroyBuffer(vk->device, ch.buffer, NULL);
        vk->fn.FreeMemory(vk->device, ch.memory, NULL);
        return s;
    }
    a->chunks[a->n++] = ch;
    a->bytes += req.size;
    return EMBER_OK;
}

ember_status ember_vk_alloc(ember_vk_arena *a, VkDeviceSize size, ember_vk_mem kind,
                            ember_vk_span *out, ember_err *err)
{
    const ember_vk_caps *c = &a->vk->caps;
    VkDeviceSize align = c->min_storage_align > 256 ? c->min_storage_align : 256;
    memset(out, 0, sizeof *out);
    if (size == 0) return ember_fail(err, EMBER_ERR_INVALID_ARG, "zero-sized GPU buffer");
    if (size > c->max_alloc)
        return ember_fail(err, EMBER_ERR_DEVICE_MEMORY,
                          "buffer of %llu bytes exceeds the device's largest allocation (%llu)",
                          (unsigned long long)size, (unsigned long long)c->max_alloc);
    chunk *ch = NULL;
    for (uint32_t i = 0; i < a->n && !ch; i++) {
        chunk *k = &a->chunks[i];
        if (k->kind == kind && align_up(k->used, align) + size <= k->size) ch = k;
    }
    if (!ch) {
        /* Grow: chunks double from CHUNK_MIN up to CHUNK_MAX, or fit one big request. */
        VkDeviceSize want = CHUNK_MIN << (a->n < 3 ? a->n : 2);
        if (want > CHUNK_MAX) want = CHUNK_MAX;
        if (want < size) want = align_up(size, align);
        if (want > c->max_alloc) want = c->max_alloc;
        ember_status s = new_chunk(a, want, kind, err);
        if (s != EMBER_OK) return s;
        ch = &a->chunks[a->n - 1];
    }
    VkDeviceSize off = align_up(ch->used, align);
    ch->used = off + size;
    out->buffer = ch->buffer;
    out->offset = off;
    out->size = size;
    out->host = ch->map ? (char *)ch->map + off : NULL;
    out->noncoherent = ch->noncoherent;
    return EMBER_OK;
}

ember_status ember_vk_arena_reserve(ember_vk_arena *a, const VkDeviceSize *sizes, uint32_t n, ember_vk_mem kind,
                                    ember_err *err)
{
    const ember_vk_caps *c = &a->vk->caps;
    VkDeviceSize align = c->min_storage_align > 256 ? c->min_storage_align : 256, piece = 0;
    ember_status s = EMBER_OK;
    for (uint32_t i = 0; s == EMBER_OK && i <= n; i++) {
        VkDeviceSize next = i < n ? align_up(sizes[i], align) : 0;
        /* a piece ends where the next span would not fit one allocation, and at the end */
        if (piece && (i == n || piece + next > c->max_alloc)) {
            s = new_chunk(a, piece, kind, err);
            piece = 0;
        }
        piece += next;
    }
    return s;
}

ember_vk_span ember_vk_span_sub(ember_vk_span s, VkDeviceSize offset, VkDeviceSize size)
{
    if (offset > s.size) offset = s.size;
    if (size > s.size - offset) size = s.size - offset;
    ember_vk_span r = {s.buffer, s.offset + offset, size, s.host ? (char *)s.host + offset : NULL,
                       offset == 0 ? s.view : VK_NULL_HANDLE, s.noncoherent};
    return r;
}

uint64_t ember_vk_memory_used(const ember_vk *vk) { return atomic_load(&vk->mem_bytes); }

uint64_t ember_vk_memory_budget(const ember_vk *vk) { return atomic_load(&vk->mem_budget); }

void ember_vk_set_memory_budget(ember_vk *vk, uint64_t bytes) { atomic_store(&vk->mem_budget, bytes); }

/* Flushes (or invalidates) the spans that need it, a few ranges per call. */
static ember_status sync_spans(ember_vk *vk, const ember_vk_span *spans, uint32_t n, bool flush, ember_err *err)
{
    enum { BATCH = 8 };
    VkMappedMemoryRange r[BATCH];
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const ember_vk_span *sp = &spans[i];
        if (sp->noncoherent && sp->host && sp->size) {
            VkDeviceSize lo = sp->offset / vk->atom * vk->atom, hi = align_up(sp->offset + sp->size, vk->atom);
            r[k++] = (VkMappedMemoryRange){.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
                                           .memory = sp->noncoherent, .offset = lo, .size = hi - lo};
        }
        if (k == BATCH || (k && i + 1 == n)) {
            VkResult res = flush ? vk->fn.FlushMappedMemoryRanges(vk->device, k, r)
                                 : vk->fn.InvalidateMappedMemoryRanges(vk->device, k, r);
            ember_status s = ember_vk_check(res, err, flush ? "vkFlushMappedMemoryRanges"
                                                            : "vkInvalidateMappedMemoryRanges");
            if (s != EMBER_OK) return s;
            atomic_fetch_add(flush ? &vk->counts.flushes : &vk->counts.invalidates, k);
            k = 0;
        }
    }
    return EMBER_OK;
}

ember_status ember_vk_flush(ember_vk *vk, const ember_vk_span *spans, uint32_t n, ember_err *err)
{
    return sync_spans(vk, spans, n, true, err);
}

ember_status ember_vk_invalidate(ember_vk *vk, const ember_vk_span *spans, uint32_t n, ember_err *err)
{
    return sync_spans(vk, spans, n, false, err);
}

void ember_vk_memory_stats(const ember_vk *vk, ember_vk_mem_stats *out)
{
    out->discrete = vk->discrete;
    out->staged_uploads = atomic_load(&vk->counts.staged_uploads);
    out->staged_downloads = atomic_load(&vk->counts.staged_downloads);
    out->flushes = atomic_load(&vk->counts.flushes);
    out->invalidates = atomic_load(&vk->counts.invalidates);
}
