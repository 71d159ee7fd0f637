/* vk_pipeline_cache.h — the VkPipelineCache kept on disk (vk_pipeline_cache.c): one file
 * per device and driver, so that a later start finds the pipelines this one compiled,
 * where the driver keeps them (lavapipe 22.3 keeps nothing: its cache data is a bare
 * header). A file is trusted only after its header checks out; anything else is ignored
 * and replaced at the next save.
 *
 * The file: a header of EMBER_VK_CACHE_HEADER_BYTES, little-endian —
 *   0  "EMBERPC" and a format byte 1     24  the driver's driverVersion (u32)
 *   8  Ember's version, NUL-padded (16)  28  zero (u32)
 *   32 bytes of Vulkan data (u64)         40  ember_vk_pipeline_cache_sum of the data (u64)
 * — then the data vkGetPipelineCacheData gave, which opens with Vulkan's own header
 * (length, version, vendorID, deviceID, pipelineCacheUUID). Its name is
 * vk-VENDOR-DEVICE-DRIVER-UUID.bin (hex), in the folder the caller gives. */
#ifndef EMBER_VK_PIPELINE_CACHE_H
#define EMBER_VK_PIPELINE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "common/error.h"
#include "vk_types.h"

#define EMBER_VK_CACHE_HEADER_BYTES 48

typedef struct ember_vk_pipeline_cache ember_vk_pipeline_cache;

/* What a cache file turned out to be. */
typedef enum ember_vk_cache_file {
    EMBER_VK_CACHE_NONE = 0,   /* no file (or no folder: a cache in memory only) */
    EMBER_VK_CACHE_USED,       /* valid: its data seeded the VkPipelineCache */
    EMBER_VK_CACHE_CORRUPT,    /* unreadable, truncated, a bad checksum or Vulkan header */
    EMBER_VK_CACHE_FOREIGN,    /* another device, driver version or pipelineCacheUUID */
    EMBER_VK_CACHE_OLD,        /* written by another version of Ember */
} ember_vk_cache_file;

/* Who may read a file's data: the device's identity as the file name and headers say it. */
typedef struct ember_vk_cache_key {
    uint32_t vendor, device, driver;
    uint8_t uuid[VK_UUID_SIZE];
} ember_vk_cache_key;

typedef struct ember_vk_pipeline_cache_stats {
    ember_vk_cache_file file;  /* what open found */
    uint64_t read_bytes;       /* Vulkan data handed to vkCreatePipelineCache */
    uint32_t writes;           /* files written by ember_vk_pipeline_cache_save */
} ember_vk_pipeline_cache_stats;

/* Creates the device's VkPipelineCache, seeded from its file in dir when that file checks
 * out (dir NULL: memory only, nothing read or written). A missing, unreadable or invalid
 * file is not an error (stats say which); the folder is created at the first save. */
ember_status ember_vk_pipeline_cache_open(ember_vk *vk, const char *dir, ember_vk_pipeline_cache **out,
                                          ember_err *err);
VkPipelineCache ember_vk_pipeline_cache_handle(const ember_vk_pipeline_cache *c);
/* Writes the cache's data to its file when it differs from what the file holds: a
 * temporary file in the same folder, fsync, rename, so that a reader sees the old file or
 * the new one, never a mix. A valid file that another model or process wrote since this
 * cache read it is merged in first, so that the last writer keeps both's pipelines. A
 * failure (EMBER_ERR_IO) leaves the old file; the cache keeps working. One caller at a
 * time (the cache must not be in use by another thread meanwhile). */
ember_status ember_vk_pipeline_cache_save(ember_vk_pipeline_cache *c, ember_err *err);
void ember_vk_pipeline_cache_get_stats(const ember_vk_pipeline_cache *c, ember_vk_pipeline_cache_stats *out);
/* The file's path ("" when memory only). */
const char *ember_vk_pipeline_cache_path(const ember_vk_pipeline_cache *c);
void ember_vk_pipeline_cache_close(ember_vk_pipeline_cache *c);

/* What open decides about a file's bytes for a device of this key; on
 * EMBER_VK_CACHE_USED the Vulkan data is file[EMBER_VK_CACHE_HEADER_BYTES .. n). */
ember_vk_cache_file ember_vk_pipeline_cache_check(const uint8_t *file, size_t n, const ember_vk_cache_key *key);
/* The checksum in the header (64-bit FNV-1a): tests forge files with it. */
uint64_t ember_vk_pipeline_cache_sum(const uint8_t *data, size_t n);

#endif
