/* vk_transfer.h — copies between host memory and spans (vk_transfer.c): a memcpy when
 * the span is mapped, else through a staging buffer with a copy command and a wait (the
 * discrete-GPU path). */
#ifndef EMBER_VK_TRANSFER_H
#define EMBER_VK_TRANSFER_H

#include "vk_memory.h"

/* The staging buffer, command buffer and fence of one device, made on first use. */
typedef struct ember_vk_transfer ember_vk_transfer;

/* Copies host bytes into a span at offset (memcpy when mapped, flushed where the memory
 * is not coherent; else a staging copy and a wait), and back (invalidated, then memcpy;
 * or a staging copy). ember_vk_memory_stats counts the staged ones. */
ember_status ember_vk_upload(ember_vk *vk, const ember_vk_span *dst, VkDeviceSize offset,
                             const void *src, size_t n, ember_err *err);
ember_status ember_vk_download(ember_vk *vk, const ember_vk_span *src, VkDeviceSize offset,
                               void *dst, size_t n, ember_err *err);
/* Frees what the device's transfers made (called by ember_vk_destroy); NULL is fine. */
void ember_vk_transfer_free(ember_vk_transfer *x);

#endif
