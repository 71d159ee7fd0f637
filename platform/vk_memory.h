/* vk_memory.h — device memory (vk_memory.c). Buffers are sub-allocated from a few large
 * allocations owned by an arena; an arena frees everything at once. A span may be larger
 * than max_storage_range (it is then bound in parts by the caller, see
 * ember_vk_span_sub). */
#ifndef EMBER_VK_MEMORY_H
#define EMBER_VK_MEMORY_H

#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "common/error.h"
#include "vk_types.h"


typedef enum ember_vk_mem {
    EMBER_VK_MEM_DEVICE = 0, /* device-local; uploads go through staging if needed */
    EMBER_VK_MEM_HOST = 1,   /* host-visible and coherent, always mapped (step inputs,
                                read-back outputs) */
} ember_vk_mem;

typedef struct ember_vk_span {
    VkBuffer buffer;
    VkDeviceSize offset, size;
    void *host;              /* mapped pointer to the span's first byte, or NULL */
    VkBufferView view;       /* a uniform texel buffer view starting at the span's first
                                byte (ember_vk_texel_view), or VK_NULL_HANDLE */
} ember_vk_span;

typedef struct ember_vk_arena ember_vk_arena;

ember_status ember_vk_arena_create(ember_vk *vk, ember_vk_arena **out, ember_err *err);
void ember_vk_arena_destroy(ember_vk_arena *a);
/* Offsets are aligned to min_storage_align (and 256). Size 0 is invalid. */
ember_status ember_vk_alloc(ember_vk_arena *a, VkDeviceSize size, ember_vk_mem kind,
                            ember_vk_span *out, ember_err *err);
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

#endif
