/* vk_pipeline_cache.c — the VkPipelineCache on disk: read and checked at open, written
 * back atomically when its data changed. The driver's data is opaque and some drivers
 * trust it blindly, so nothing reaches vkCreatePipelineCache before Ember's header (the
 * version, the driver, a checksum over every byte) and Vulkan's own (the device and its
 * pipelineCacheUUID) match this device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "os_file.h"
#include "vk_internal.h"
#include "vk_pipeline_cache.h"
#include "vk_result.h"

#define MAGIC "EMBERPC\1"
#define VERSION_BYTES 16
#define VK_HEADER_BYTES 32               /* VkPipelineCacheHeaderVersionOne */
#define MAX_FILE_BYTES (256ull << 20)    /* larger is not a cache Ember wrote */
#define PATH_CAP 1024

struct ember_vk_pipeline_cache {
    ember_vk *vk;
    VkPipelineCache cache;
    char path[PATH_CAP];        /* "" = memory only */
    char dir[PATH_CAP];
    ember_vk_cache_key key;
    bool have_last;             /* the data last read from or written to the file */
    uint64_t last_bytes, last_sum;
    ember_vk_pipeline_cache_stats stats;
};

static uint32_t get32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

uint64_t ember_vk_pipeline_cache_sum(const uint8_t *data, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ data[i]) * 0x100000001b3ull;
    return h;
}

static void version_field(uint8_t out[VERSION_BYTES])
{
    memset(out, 0, VERSION_BYTES);
    memcpy(out, EMBER_VERSION_STRING, strlen(EMBER_VERSION_STRING) < VERSION_BYTES ? strlen(EMBER_VERSION_STRING)
                                                                                   : VERSION_BYTES - 1);
}

/* Vulkan's header, at the start of the driver's data (the spec fixes it, least
 * significant byte first). */
static ember_vk_cache_file check_vulkan_header(const uint8_t *d, uint64_t n, const ember_vk_cache_key *key)
{
    if (n < VK_HEADER_BYTES || get32(d) < VK_HEADER_BYTES || get32(d) > n ||
        get32(d + 4) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
        return EMBER_VK_CACHE_CORRUPT;
    if (get32(d + 8) != key->vendor || get32(d + 12) != key->device || memcmp(d + 16, key->uuid, VK_UUID_SIZE) != 0)
        return EMBER_VK_CACHE_FOREIGN;
    return EMBER_VK_CACHE_USED;
}

ember_vk_cache_file ember_vk_pipeline_cache_check(const uint8_t *f, size_t n, const ember_vk_cache_key *key)
{
    uint8_t version[VERSION_BYTES];
    version_field(version);
    if (n < EMBER_VK_CACHE_HEADER_BYTES || memcmp(f, MAGIC, 8) != 0) return EMBER_VK_CACHE_CORRUPT;
    if (memcmp(f + 8, version, VERSION_BYTES) != 0) return EMBER_VK_CACHE_OLD;
    if (get32(f + 24) != key->driver) return EMBER_VK_CACHE_FOREIGN;
    uint64_t bytes = get64(f + 32);
    const uint8_t *data = f + EMBER_VK_CACHE_HEADER_BYTES;
    if (bytes != n - EMBER_VK_CACHE_HEADER_BYTES || get64(f + 40) != ember_vk_pipeline_cache_sum(data, bytes))
        return EMBER_VK_CACHE_CORRUPT;
    return check_vulkan_header(data, bytes, key);
}


static void make_key(ember_vk *vk, ember_vk_cache_key *key)
{
    VkPhysicalDeviceProperties p;
    vk->fn.GetPhysicalDeviceProperties(vk->phys, &p);
    *key = (ember_vk_cache_key){.vendor = p.vendorID, .device = p.deviceID, .driver = p.driverVersion};
    memcpy(key->uuid, p.pipelineCacheUUID, VK_UUID_SIZE);
}

static bool make_path(ember_vk_pipeline_cache *c, const char *dir)
{
    char uuid[2 * VK_UUID_SIZE + 1];
    for (unsigned i = 0; i < VK_UUID_SIZE; i++) snprintf(uuid + 2 * i, 3, "%02x", c->key.uuid[i]);
    int n = snprintf(c->path, sizeof c->path, "%s/vk-%04x-%04x-%08x-%s.bin", dir, c->key.vendor, c->key.device,
                     c->key.driver, uuid);
    int m = snprintf(c->dir, sizeof c->dir, "%s", dir);
    if (n > 0 && (size_t)n < sizeof c->path && m > 0 && (size_t)m < sizeof c->dir) return true;
    c->path[0] = c->dir[0] = 0; /* too long a folder: memory only */
    return false;
}

/* Reads the file; its data seeds the cache only when it checks out. */
static ember_status create_seeded(ember_vk_pipeline_cache *c, ember_err *err)
{
    const ember_vk *vk = c->vk;
    size_t n = 0;
    uint8_t *f = NULL;
    bool exists = false;
    if (c->path[0] && ember_file_read(c->path, MAX_FILE_BYTES, &f, &n, &exists))
        c->stats.file = ember_vk_pipeline_cache_check(f, n, &c->key);
    else if (exists) /* there, but not one of ours whole */
        c->stats.file = EMBER_VK_CACHE_CORRUPT;
    bool use = c->stats.file == EMBER_VK_CACHE_USED;
    VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                    .initialDataSize = use ? n - EMBER_VK_CACHE_HEADER_BYTES : 0,
                                    .pInitialData = use ? f + EMBER_VK_CACHE_HEADER_BYTES : NULL};
    ember_status s = ember_vk_check(vk->fn.CreatePipelineCache(c->vk->device, &ci, NULL, &c->cache), err,
                                    "vkCreatePipelineCache");
    if (s == EMBER_OK && use) {
        c->have_last = true;
        c->last_bytes = ci.initialDataSize;
        c->last_sum = get64(f + 40);
        c->stats.read_bytes = ci.initialDataSize;
    }
    ember_free(f);
    return s;
}

ember_status ember_vk_pipeline_cache_open(ember_vk *vk, const char *dir, ember_vk_pipeline_cache **out,
                                          ember_err *err)
{
    *out = NULL;
    ember_vk_pipeline_cache *c = ember_calloc(1, sizeof *c);
    if (!c) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    c->vk = vk;
    make_key(vk, &c->key);
    if (dir && dir[0]) make_path(c, dir);
    ember_status s = create_seeded(c, err);
    if (s != EMBER_OK) {
        ember_vk_pipeline_cache_close(c);
        return s;
    }
    *out = c;
    return EMBER_OK;
}

VkPipelineCache ember_vk_pipeline_cache_handle(const ember_vk_pipeline_cache *c)
{
    return c ? c->cache : VK_NULL_HANDLE;
}

/* The new file appears whole or not at all (ember_file_replace); the folder is made
 * private to the user, as XDG asks of a cache folder one creates. */
static ember_status write_atomic(const ember_vk_pipeline_cache *c, const uint8_t *b, size_t n, ember_err *err)
{
    if (!ember_dir_make(c->dir)) return ember_fail(err, EMBER_ERR_IO, "%s: cannot create the folder", c->dir);
    if (!ember_file_replace(c->path, b, n))
        return ember_fail(err, EMBER_ERR_IO, "%s: cannot write the pipeline cache", c->path);
    return EMBER_OK;
}

/* The driver's data, in *out behind room for Ember's header (*n bytes of it). */
static ember_status get_data(const ember_vk_pipeline_cache *c, uint8_t **out, size_t *n, ember_err *err)
{
    const ember_vk *vk = c->vk;
    VkDevice dev = c->vk->device;
    for (int attempt = 0; attempt < 4; attempt++) {
        size_t size = 0;
        ember_status s = ember_vk_check(vk->fn.GetPipelineCacheData(dev, c->cache, &size, NULL), err,
                                        "vkGetPipelineCacheData");
        if (s != EMBER_OK) return s;
        uint8_t *b = ember_malloc(EMBER_VK_CACHE_HEADER_BYTES + size);
        if (!b) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
        VkResult r = vk->fn.GetPipelineCacheData(dev, c->cache, &size, b + EMBER_VK_CACHE_HEADER_BYTES);
        if (r == VK_SUCCESS) {
            *out = b;
            *n = size;
            return EMBER_OK;
        }
        ember_free(b);
        if (r != VK_INCOMPLETE) return ember_vk_check(r, err, "vkGetPipelineCacheData");
    }
    return ember_fail(err, EMBER_ERR_VULKAN, "vkGetPipelineCacheData: the data kept growing");
}

static void fill_header(uint8_t *h, uint32_t driver, uint64_t bytes, uint64_t sum)
{
    memset(h, 0, EMBER_VK_CACHE_HEADER_BYTES);
    memcpy(h, MAGIC, 8);
    version_field(h + 8);
    put32(h + 24, driver);
    put64(h + 32, bytes);
    put64(h + 40, sum);
}

/* What a valid file holds: its data's size and checksum. */
typedef struct on_disk {
    bool valid;
    uint64_t bytes, sum;
} on_disk;

static void merge(ember_vk_pipeline_cache *c, const uint8_t *data, size_t n)
{
    const ember_vk *vk = c->vk;
    VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                    .initialDataSize = n, .pInitialData = data};
    VkPipelineCache other;
    if (vk->fn.CreatePipelineCache(c->vk->device, &ci, NULL, &other) != VK_SUCCESS) return;
    vk->fn.MergePipelineCaches(c->vk->device, c->cache, 1, &other); /* a failure only loses the merge */
    vk->fn.DestroyPipelineCache(c->vk->device, other, NULL);
}

/* The file as it is now: another model of this process, or another process, may have
 * rewritten it since this cache read it. Its pipelines are merged in first (unless it is
 * the very data this cache read or wrote), so that the last writer keeps everyone's. */
static on_disk merge_file(ember_vk_pipeline_cache *c)
{
    size_t n = 0;
    uint8_t *f = NULL;
    bool exists;
    on_disk d = {false, 0, 0};
    if (ember_file_read(c->path, MAX_FILE_BYTES, &f, &n, &exists) && ember_vk_pipeline_cache_check(f, n, &c->key) == EMBER_VK_CACHE_USED) {
        d = (on_disk){true, n - EMBER_VK_CACHE_HEADER_BYTES, get64(f + 40)};
        if (!c->have_last || d.bytes != c->last_bytes || d.sum != c->last_sum)
            merge(c, f + EMBER_VK_CACHE_HEADER_BYTES, d.bytes);
    }
    ember_free(f);
    return d;
}

ember_status ember_vk_pipeline_cache_save(ember_vk_pipeline_cache *c, ember_err *err)
{
    if (!c || !c->path[0]) return EMBER_OK;
    on_disk disk = merge_file(c);
    size_t n = 0;
    uint8_t *b = NULL;
    ember_status s = get_data(c, &b, &n, err);
    if (s != EMBER_OK) return s;
    uint64_t sum = ember_vk_pipeline_cache_sum(b + EMBER_VK_CACHE_HEADER_BYTES, n);
    if (!disk.valid || disk.bytes != n || disk.sum != sum) {
        fill_header(b, c->key.driver, n, sum);
        s = write_atomic(c, b, EMBER_VK_CACHE_HEADER_BYTES + n, err);
        if (s == EMBER_OK) c->stats.writes++;
    }
    if (s == EMBER_OK) {
        c->have_last = true; /* the file holds this cache's data */
        c->last_bytes = n;
        c->last_sum = sum;
    }
    ember_free(b);
    return s;
}

void ember_vk_pipeline_cache_get_stats(const ember_vk_pipeline_cache *c, ember_vk_pipeline_cache_stats *out)
{
    *out = c ? c->stats : (ember_vk_pipeline_cache_stats){0};
}

const char *ember_vk_pipeline_cache_path(const ember_vk_pipeline_cache *c) { return c ? c->path : ""; }

void ember_vk_pipeline_cache_close(ember_vk_pipeline_cache *c)
{
    if (!c) return;
    const ember_vk *vk = c->vk;
    if (c->cache) vk->fn.DestroyPipelineCache(c->vk->device, c->cache, NULL);
    ember_free(c);
}
