/* vk_memory.h — device memory (vk_memory.c). Buffers are sub-allocated from a few large
 * allocations owned by an arena; an arena frees everything at once. A span may be larger
 * than max_storage_range (it is then bound in parts by the caller, see
 * ember_vk_span_sub).
 *
 * Two paths to the data, as the device offers (or as ember_vk_opts.discrete_memory
 * forces): device-local spans are mapped where their memory is host-visible and coherent
 * (unified memory: ember_vk_upload is a memcpy), else not (a discrete GPU: uploads and
 * read-backs go through a staging buffer, vk_transfer.c). Host spans are always mapped;
 * where their memory is not coherent the CPU's writes are flushed (ember_vk_flush) and the
 * device's invalidated (ember_vk_invalidate) around each use. */
#ifndef EMBER_VK_MEMORY_H
#define EMBER_VK_MEMORY_H

#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "common/error.h"
#include "vk_types.h"


typedef enum ember_vk_mem {
    EMBER_VK_MEM_DEVICE = 0, /* device-local; uploads go through staging if needed */
    EMBER_VK_MEM_HOST = 1,   /* host-visible, always mapped (step inputs, read-back
                                outputs); coherent where the device has such memory */
} ember_vk_mem;

typedef struct ember_vk_span {
    VkBuffer buffer;
    VkDeviceSize offset, size;
    void *host;              /* mapped pointer to the span's first byte, or NULL */
    VkBufferView view;       /* a uniform texel buffer view starting at the span's first
                                byte (ember_vk_texel_view), or VK_NULL_HANDLE */
    VkDeviceMemory noncoherent; /* the span's memory when it is mapped but CPU writes must
                                be flushed and device writes invalidated (not coherent, or
                                the discrete mode), else VK_NULL_HANDLE */
} ember_vk_span;

typedef struct ember_vk_arena ember_vk_arena;

ember_status ember_vk_arena_create(ember_vk *vk, ember_vk_arena **out, ember_err *err);
void ember_vk_arena_destroy(ember_vk_arena *a);
/* Offsets are aligned to min_storage_align (and 256). Size 0 is invalid. */
ember_status ember_vk_alloc(ember_vk_arena *a, VkDeviceSize size, ember_vk_mem kind,
                            ember_vk_span *out, ember_err *err);
/* Makes room at once for spans of these sizes, of one kind, allocated next in this order:
 * chunks that hold them with no more than alignment to spare (as few as the device's
 * largest allocation allows), where ember_vk_alloc's growing chunks would leave tails
 * unused. For pools whose spans are known ahead: the KV cache, the step's buffers. */
ember_status ember_vk_arena_reserve(ember_vk_arena *a, const VkDeviceSize *sizes, uint32_t n, ember_vk_mem kind,
                                    ember_err *err);
/* Bytes currently allocated from the device by the arena. */
uint64_t ember_vk_arena_bytes(const ember_vk_arena *a);
/* Lets a's allocations pass the budget (still counted): for memory that replaces memory
 * about to be freed, such as a KV pool remade at the size the budget allows. */
void ember_vk_arena_allow_over_budget(ember_vk_arena *a);

/* A sub-range of a span (no checks beyond an assert-free clamp to the span). The texel
 * view is kept when offset is 0 (texel indices then mean the same thing), else dropped. */
ember_vk_span ember_vk_span_sub(ember_vk_span s, VkDeviceSize offset, VkDeviceSize size);

/* The device an arena allocates from, and the arena taking ownership of a buffer view
 * (destroyed before the arena's buffers). On failure the view is destroyed. */
ember_vk *ember_vk_arena_device(const ember_vk_arena *a);
ember_status ember_vk_arena_own_view(ember_vk_arena *a, VkBufferView view, ember_err *err);

/* Device memory held by all arenas of vk, and the budget (0 = none). Setting a budget
 * below what is held is allowed: later allocations fail until enough is freed. */
uint64_t ember_vk_memory_used(const ember_vk *vk);
uint64_t ember_vk_memory_budget(const ember_vk *vk);
void ember_vk_set_memory_budget(ember_vk *vk, uint64_t bytes);

/* For mapped spans whose memory is not coherent (span.noncoherent): ember_vk_flush makes
 * the CPU's writes visible to the device (after writing, before the submission that reads
 * them); ember_vk_invalidate makes the device's writes visible to the CPU (after the fence,
 * before reading). Ranges are widened to nonCoherentAtomSize; other spans (coherent,
 * unmapped, empty) are skipped, so callers call them on every host span they touch. */
ember_status ember_vk_flush(ember_vk *vk, const ember_vk_span *spans, uint32_t n, ember_err *err);
ember_status ember_vk_invalidate(ember_vk *vk, const ember_vk_span *spans, uint32_t n, ember_err *err);

/* The memory mode and what the paths above did since the device was made. */
typedef struct ember_vk_mem_stats {
    bool discrete;                              /* ember_vk_opts.discrete_memory */
    uint64_t staged_uploads, staged_downloads;  /* copies through the staging buffer */
    uint64_t flushes, invalidates;              /* ranges flushed / invalidated */
} ember_vk_mem_stats;
void ember_vk_memory_stats(const ember_vk *vk, ember_vk_mem_stats *out);

#endif
