/* vk_internal.h — the structure behind the ember_vk handle (made by vk_device.c), which
 * the .c files of platform/ read. Platform-internal. */
#ifndef EMBER_VK_INTERNAL_H
#define EMBER_VK_INTERNAL_H

#include "os_thread.h"
#include <stdatomic.h>
#include <vulkan/vulkan.h>

#include "vk_caps.h"
#include "vk_loader.h"
#include "vk_types.h"

struct ember_vk {
    ember_vk_fn fn;             /* the Vulkan functions (vk_loader.h): vk->fn.CreateBuffer(...) */
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    ember_vk_caps caps;
    VkPhysicalDeviceMemoryProperties mem_props;
    /* Validation messages, counted by the debug callback (called on the thread that made
     * the offending Vulkan call). */
    uint32_t n_validation;
    char first_validation[1024];
    /* Transfers for memory that the host cannot map: made on first use (vk_transfer.c),
     * one at a time (xfer_mu): engines on one model may upload from different threads. */
    struct ember_vk_transfer *xfer;
    ember_mutex xfer_mu;
    /* Submissions to the one queue are serialised (Vulkan requires it): queue_mu between
     * Ember's threads, and the application's lock when the device is the application's. */
    ember_mutex queue_mu;
    void (*lock_queue)(void *user);
    void (*unlock_queue)(void *user);
    void *queue_user;
    bool borrowed;              /* the instance and device are the application's */
    /* Device memory held by every arena of this device, and the most it may hold (0 = no
     * limit): the model's memory budget. */
    _Atomic uint64_t mem_bytes;
    _Atomic uint64_t mem_budget;
    /* The memory mode (vk_memory.c): discrete = treat the device as a discrete GPU (no
     * device-local span mapped; mapped host spans flushed and invalidated as if not
     * coherent), from ember_vk_opts; nonCoherentAtomSize; and what the two paths did,
     * counted for tests (ember_vk_memory_stats). */
    bool discrete;
    VkDeviceSize atom;
    struct {
        _Atomic uint64_t staged_uploads, staged_downloads, flushes, invalidates;
    } counts;
    /* Faults armed by tests (vk_fault.c): countdowns, 0 = off; and whether the device was
     * lost (for real or by a fault): once lost, it stays lost. */
    struct {
        _Atomic uint32_t alloc, submit, wait;
        _Atomic bool lost;
    } fault;
};

#endif
