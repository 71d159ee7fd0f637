/* vk.h — Ember's thin Vulkan layer: device choice, capabilities, memory, pipelines and
 * command recording. It knows nothing about transformers.
 *
 * Every Vulkan result is checked; failures become an ember_status with a message in the
 * caller's ember_err. Recording calls (ember_vk_cmd_*) do not return a status: the first
 * failure while recording is kept in the command object and returned by
 * ember_vk_cmd_submit, so recording code stays a straight list of dispatches. */
#ifndef EMBER_VK_H
#define EMBER_VK_H

#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "../engine/error.h"

typedef struct ember_vk ember_vk;

typedef struct ember_vk_caps {
    char device_name[256];
    uint32_t vendor_id, device_id;
    VkPhysicalDeviceType device_type;
    uint32_t api_version, driver_version;
    bool is_cpu;                        /* lavapipe / llvmpipe / SwiftShader */
    /* features */
    bool fp16_arith;                    /* shaderFloat16 */
    bool int8_arith;                    /* shaderInt8 */
    bool storage8, storage16;           /* 8/16-bit storage buffer access */
    bool int_dot;                       /* shaderIntegerDotProduct */
    bool coop_matrix;                   /* VK_KHR_cooperative_matrix present */
    uint32_t subgroup_size;             /* default subgroup size */
    bool subgroup_arith;                /* subgroupAdd etc. in compute */
    bool subgroup_shuffle;
    bool subgroup_size_control;         /* can require a full subgroup size */
    /* limits */
    uint64_t max_storage_range;         /* maxStorageBufferRange */
    uint64_t max_alloc;                 /* maxMemoryAllocationSize */
    uint32_t max_shared;                /* maxComputeSharedMemorySize */
    uint32_t max_push;                  /* maxPushConstantsSize */
    uint32_t max_wg_invocations;
    uint32_t max_wg_count[3];
    uint32_t max_texel_elements;        /* maxTexelBufferElements */
    uint64_t min_texel_align;           /* minTexelBufferOffsetAlignment */
    uint32_t max_uniform_range;         /* maxUniformBufferRange */
    uint64_t min_uniform_align;         /* minUniformBufferOffsetAlignment */
    uint64_t min_storage_align;         /* minStorageBufferOffsetAlignment */
    /* formats usable as uniform texel buffers (VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) */
    bool texel_rgba32f, texel_rgba32ui, texel_r16f, texel_r32ui;
    uint64_t device_local_bytes;        /* largest device-local heap */
    bool unified_memory;                /* device-local memory is also host-visible */
    float timestamp_period_ns;          /* 0 when timestamps are unsupported */
} ember_vk_caps;

typedef struct ember_vk_opts {
    int device_index;        /* 0 = automatic (discrete > integrated > virtual > cpu);
                                N > 0 = the N-th device in enumeration order */
    bool validation;         /* enable VK_LAYER_KHRONOS_validation when installed */
} ember_vk_opts;

/* One line per physical device for `ember info` (caps of every device). Writes up to cap
 * entries, returns the count in *n. Needs no logical device. */
ember_status ember_vk_list_devices(ember_vk_caps *out, uint32_t cap, uint32_t *n, ember_err *err);

ember_status ember_vk_create(const ember_vk_opts *opts, ember_vk **out, ember_err *err);
void ember_vk_destroy(ember_vk *vk);
const ember_vk_caps *ember_vk_get_caps(const ember_vk *vk);
/* Validation-layer errors and warnings seen so far (0 when the layer is off). The text of
 * the first one is copied into first (if not NULL). */
uint32_t ember_vk_validation_count(const ember_vk *vk, char *first, size_t cap);

/* ---- memory ---------------------------------------------------------------
 * Buffers are sub-allocated from a few large allocations owned by an arena; an arena
 * frees everything at once. A span may be larger than max_storage_range (it is then
 * bound in parts by the caller, see ember_vk_span_sub). */

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

/* A sub-range of a span (no checks beyond an assert-free clamp to the span). The texel
 * view is kept when offset is 0 (texel indices then mean the same thing), else dropped. */
ember_vk_span ember_vk_span_sub(ember_vk_span s, VkDeviceSize offset, VkDeviceSize size);

/* Gives s a uniform texel buffer view of the given format over its bytes (the range is
 * rounded down to whole texels), owned by arena a and destroyed with it. Fails with
 * EMBER_ERR_UNSUPPORTED when the format cannot be a uniform texel buffer, the span's
 * offset is not a multiple of minTexelBufferOffsetAlignment, or the span holds no texel
 * or more than maxTexelBufferElements. s may come from any arena of the same device. */
ember_status ember_vk_texel_view(ember_vk_arena *a, ember_vk_span *s, VkFormat format, ember_err *err);

/* Copies host bytes into a span at offset (memcpy when mapped, else a staging copy and
 * a wait), and back. */
ember_status ember_vk_upload(ember_vk *vk, const ember_vk_span *dst, VkDeviceSize offset,
                             const void *src, size_t n, ember_err *err);
ember_status ember_vk_download(ember_vk *vk, const ember_vk_span *src, VkDeviceSize offset,
                               void *dst, size_t n, ember_err *err);

/* ---- pipelines ------------------------------------------------------------
 * A compute pipeline with bindings 0..n_bindings-1 in set 0, push constants of push_size
 * bytes and specialization constants (id, uint32). ember_vk_pipeline_create makes every
 * binding a storage buffer; ember_vk_pipeline_create_ex takes a kind per binding. */

typedef struct ember_vk_pipeline ember_vk_pipeline;

typedef struct ember_vk_spec {
    uint32_t id;
    uint32_t value;
} ember_vk_spec;

typedef enum ember_vk_binding_kind {
    EMBER_VK_BIND_STORAGE = 0,       /* storage buffer: the span's buffer range */
    EMBER_VK_BIND_TEXEL = 1,         /* uniform texel buffer: the span's view */
    EMBER_VK_BIND_UNIFORM = 2,       /* uniform buffer: the span's buffer range
                                        (<= max_uniform_range, offset aligned) */
} ember_vk_binding_kind;

ember_status ember_vk_pipeline_create(ember_vk *vk, const char *name, const uint32_t *spirv,
                                      size_t spirv_bytes, uint32_t n_bindings, uint32_t push_size,
                                      const ember_vk_spec *specs, uint32_t n_specs,
                                      ember_vk_pipeline **out, ember_err *err);
/* kinds[i] is the kind of binding i; kinds NULL = all storage buffers. */
ember_status ember_vk_pipeline_create_ex(ember_vk *vk, const char *name, const uint32_t *spirv,
                                         size_t spirv_bytes, uint32_t n_bindings,
                                         const ember_vk_binding_kind *kinds, uint32_t push_size,
                                         const ember_vk_spec *specs, uint32_t n_specs,
                                         ember_vk_pipeline **out, ember_err *err);
void ember_vk_pipeline_destroy(ember_vk *vk, ember_vk_pipeline *p);

/* ---- recording and submission -------------------------------------------- */

typedef struct ember_vk_cmd ember_vk_cmd;

ember_status ember_vk_cmd_create(ember_vk *vk, ember_vk_cmd **out, ember_err *err);
void ember_vk_cmd_destroy(ember_vk_cmd *c);
/* Starts a new recording (waits for the previous submission if still running). */
ember_status ember_vk_cmd_begin(ember_vk_cmd *c, ember_err *err);
/* Binds bindings[0..n_bindings-1] as the pipeline declares them (storage: span <=
 * max_storage_range and aligned; texel: the span's view, which must exist; uniform: span
 * <= max_uniform_range and aligned), pushes push (push_size bytes as declared) and
 * dispatches groups. */
void ember_vk_cmd_dispatch(ember_vk_cmd *c, const ember_vk_pipeline *p,
                           const ember_vk_span *bindings, const void *push,
                           uint32_t gx, uint32_t gy, uint32_t gz);
/* Compute-to-compute (and transfer) memory barrier: later dispatches see earlier writes. */
void ember_vk_cmd_barrier(ember_vk_cmd *c);
void ember_vk_cmd_copy(ember_vk_cmd *c, const ember_vk_span *src, const ember_vk_span *dst,
                       VkDeviceSize bytes);
void ember_vk_cmd_fill(ember_vk_cmd *c, const ember_vk_span *dst, uint32_t value);
/* Writes a GPU timestamp into slot i (0..63); read after completion. No-op without
 * timestamp support. */
void ember_vk_cmd_timestamp(ember_vk_cmd *c, uint32_t i);
/* Ends, submits and waits. Returns the first recording error if any. */
ember_status ember_vk_cmd_submit(ember_vk_cmd *c, ember_err *err);
/* Nanoseconds between timestamp slots a and b of the last completed submission
 * (negative when unavailable). */
double ember_vk_cmd_elapsed_ns(ember_vk_cmd *c, uint32_t a, uint32_t b);
/* Dispatches recorded in the last recording. */
uint32_t ember_vk_cmd_dispatch_count(const ember_vk_cmd *c);

#endif
