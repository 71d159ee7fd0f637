/* devices.c — ember_list_devices: the platform layer's device capabilities, as the
 * public API describes them (so that tools and applications need no Vulkan header), and
 * the kernel variants Ember would choose on each device, with the reasons. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/strbuf.h"
#include "engine/gpu/kernels.h"
#include "engine/gpu/kernels_attention.h"
#include "engine/gpu/kernels_internal.h"
#include "platform/vk.h"

static ember_device_type type_of(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return EMBER_DEVICE_DISCRETE;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return EMBER_DEVICE_INTEGRATED;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return EMBER_DEVICE_VIRTUAL;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return EMBER_DEVICE_CPU;
    default: return EMBER_DEVICE_OTHER;
    }
}

#define FALSE_SIZE "lavapipe runs 16 of the lanes it reports (LP_NATIVE_VECTOR_WIDTH over 512)"

/* Why the linear shader cannot use its subgroup variant here. */
static const char *lin_baseline_reason(const ember_vk_caps *c)
{
    return c->subgroup_false_size ? FALSE_SIZE : c->subgroup_shuffle ? "not a multiple of 8" : "no subgroup shuffle";
}

/* Why attention and the row kernels cannot use their subgroup variants here. */
static const char *arith_reason(const ember_vk_caps *c)
{
    return c->subgroup_false_size ? FALSE_SIZE : "no subgroup arithmetic";
}

/* The choices of ember_kernels_describe (the selection ember_kernels_create runs), in
 * words, one line per part, each with the capability behind it. */
static void describe(const ember_vk_caps *c, ember_sbuf *out)
{
    if (c->api_version < VK_API_VERSION_1_2) {
        ember_sbuf_printf(out, "none: Ember needs Vulkan 1.2 (this device has %u.%u)\n", VK_API_VERSION_MAJOR(c->api_version),
            VK_API_VERSION_MINOR(c->api_version));
        return;
    }
    ember_kernel_choice k;
    ember_kernels_describe(c, NULL, &k);
    uint32_t sg = k.subgroup_size;

    if (k.lin_subgroup)
        ember_sbuf_printf(out, "linear: subgroup lane groups of %u, partials by subgroupShuffleXor (subgroup %u, shuffle)",
            k.lin_lanes, sg);
    else
        ember_sbuf_printf(out, "linear: shared-memory partials, groups of %u invocations (subgroup %u: %s)", k.lin_lanes,
            sg, lin_baseline_reason(c));
    ember_sbuf_printf(out, "; %s device, %u lanes: %s", k.device_class, k.lin_lanes, k.lanes_why);
    if (k.lin_int_dot) ember_sbuf_printf(out, "; Q8_0 and the block types but BF16 by integer dot products (accelerated)");
    if (k.lin_fp16_dot) ember_sbuf_printf(out, "; F16 and Q8_0 units in fp16 arithmetic");
    ember_sbuf_printf(out, "; %u group%s/workgroup, tiles %u rows x 1-4 tokens, %u x %u", k.lin_groups,
        k.lin_groups == 1 ? "" : "s", k.lin_rows_decode, k.lin_rows_prefill, k.lin_prefill_tokens);
    if (k.lin_prefill_min_tok) ember_sbuf_printf(out, " from %u tokens (CPU device: spills)", k.lin_prefill_min_tok);
    if (k.lin_staged) {
        ember_sbuf_printf(out, "; x staged in shared memory for tiles of");
        for (unsigned tm = 1; tm < 32; tm++)
            if (k.lin_staged >> tm & 1) ember_sbuf_printf(out, " %u", tm);
        ember_sbuf_printf(out, " tokens");
    }
    ember_kernels_opts mo = {.matrix = EMBER_MATRIX_ON};
    ember_kernel_choice m;
    ember_kernels_describe(c, &mo, &m);
    if (m.lin_matrix)
        ember_sbuf_printf(out, "; matrix family (fp16 w and x, fp32 sums) %s %s", k.lin_matrix ? "on," : "if asked for,",
            m.lin_matrix_units == EMBER_MM_KHR  ? "through cooperative matrices (VK_KHR_cooperative_matrix, 16x16x16)"
            : m.lin_matrix_units == EMBER_MM_NV ? "through cooperative matrices (VK_NV_cooperative_matrix, 16x16x16)"
                                                : "by FMA");
    ember_sbuf_printf(out, "; RMSNorm %s\n", k.lin_norm_fused ? "fused into the product after it (6 dispatches a layer)"
                                                         : "its own dispatch (CPU device: 8 dispatches a layer)");

    if (k.attn_subgroup)
        ember_sbuf_printf(out,
            "attention: subgroup per tile, %u lanes split head_dim, subgroupAdd per position (subgroup arithmetic); "
            "%u tile%s/workgroup, %u%s%.0u vec4/lane, %u (decode) or %u (prefill) pairs per tile; head_dim <= %u",
            k.attn_lanes, k.attn_tiles_per_wg, k.attn_tiles_per_wg == 1 ? "" : "s", k.attn_cpl_min,
            k.attn_cpl_max > k.attn_cpl_min ? "-" : "", k.attn_cpl_max > k.attn_cpl_min ? k.attn_cpl_max : 0,
            k.attn_decode_pairs, k.attn_prefill_pairs, k.attn_max_head);
    else
        ember_sbuf_printf(out, "attention: invocation per (token, head) pair, %u/workgroup (%s); head_dim <= %u",
            k.attn_tiles_per_wg, arith_reason(c), k.attn_max_head);
    if (k.attn_split)
        ember_sbuf_printf(out, "; split-K: positions in chunks of %u merged in order, a few decode rows' chunks over "
            "workgroups\n", k.attn_chunk);
    else
        ember_sbuf_printf(out, "; no split-K (CPU device: the tiles fill its cores)\n");

    if (k.row_subgroup)
        ember_sbuf_printf(out, "rmsnorm/argmax: subgroupAdd/Max, workgroup of %u per row (%u subgroup%s of %u)\n", k.row_wg,
            k.row_wg / sg, k.row_wg / sg == 1 ? "" : "s", sg);
    else
        ember_sbuf_printf(out, "rmsnorm/argmax: shared-memory tree, workgroup of %u per row (%s)\n", k.row_wg,
            arith_reason(c));

    if (k.texel)
        ember_sbuf_printf(out, "reads: weights, x, K/V through texel views (RGBA32F/RGBA32UI%s uniform texel buffers); "
            "storage buffers past %u texels\n", c->texel_r32ui ? ", Q8_0 K/V R32UI" : "", c->max_texel_elements);
    else
        ember_sbuf_printf(out, "reads: storage buffers (no RGBA32F/RGBA32UI uniform texel buffers)\n");

    if (c->unified_memory)
        ember_sbuf_printf(out, "memory: unified (device-local memory host-visible, coherent): weights, KV written in "
            "place; %.1f GiB\n", c->device_local_bytes / 1073741824.0);
    else
        ember_sbuf_printf(out, "memory: discrete (device-local memory not host-visible): weights, KV through a staging "
            "buffer; %.1f GiB\n", c->device_local_bytes / 1073741824.0);

    /* ember_kernels_max_positions reads the caps only: a kernels object without
     * pipelines, holding these caps, answers for this device. */
    ember_kernels probe = {.caps = *c};
    uint32_t max_pos = ember_kernels_max_positions(&probe);
    if (max_pos != UINT32_MAX)
        ember_sbuf_printf(out, "context: <= %u positions per sequence (CPU device: a shader ends after 65535 loop "
            "iterations)", max_pos);
    else
        ember_sbuf_printf(out, "context: no shader limit");
    ember_sbuf_printf(out, "; a layer's K or V pool <= %llu MiB (maxStorageBufferRange)\n",
        (unsigned long long)(c->max_storage_range >> 20));
}

/* The device's fields and its two texts (allocated: ember_free_devices frees them). */
static ember_status info_of(const ember_vk_caps *c, ember_device_info *out)
{
    ember_device_info d = {
        .type = type_of(c->device_type), .vendor_id = c->vendor_id, .device_id = c->device_id,
        .driver_version = c->driver_version, .api_major = VK_API_VERSION_MAJOR(c->api_version),
        .api_minor = VK_API_VERSION_MINOR(c->api_version), .api_patch = VK_API_VERSION_PATCH(c->api_version),
        .fp16 = c->fp16_arith, .int8 = c->int8_arith, .storage8 = c->storage8, .storage16 = c->storage16,
        .int_dot = c->int_dot, .coop_matrix = c->coop_khr || c->coop_nv, .subgroup_size = c->subgroup_size,
        .subgroup_arith = c->subgroup_arith, .subgroup_shuffle = c->subgroup_shuffle,
        .subgroup_size_control = c->subgroup_pin, .max_storage_range = c->max_storage_range,
        .max_alloc = c->max_alloc, .max_shared = c->max_shared, .max_push = c->max_push,
        .max_workgroup_invocations = c->max_wg_invocations, .device_local_bytes = c->device_local_bytes,
        .unified_memory = c->unified_memory, .timestamps = c->timestamp_period_ns > 0};
    ember_sbuf text = {0};
    describe(c, &text);
    char *name = ember_strdup(c->device_name), *variants = ember_sbuf_take(&text);
    if (!name || !variants) {
        ember_free(name);
        ember_free(variants);
        return EMBER_ERR_OUT_OF_MEMORY;
    }
    d.name = name;
    d.variants = variants;
    *out = d;
    return EMBER_OK;
}

void ember_free_devices(ember_device_info *devs, size_t n)
{
    for (size_t i = 0; devs && i < n; i++) {
        ember_free((char *)devs[i].name);
        ember_free((char *)devs[i].variants);
        devs[i].name = devs[i].variants = NULL;
    }
}

ember_status ember_list_devices(ember_device_info *out, size_t cap, size_t *n, char *msg, size_t msg_cap)
{
    *n = 0;
    if (msg && msg_cap) msg[0] = 0;
    uint32_t count = 0, filled = 0;
    ember_err err = {{0}};
    ember_vk_caps *caps = ember_calloc(EMBER_VK_MAX_DEVICES, sizeof *caps);
    ember_status s = caps ? ember_vk_list_devices(caps, EMBER_VK_MAX_DEVICES, &count, &err)
                          : ember_fail(&err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    while (s == EMBER_OK && filled < count && filled < cap) {
        if (info_of(&caps[filled], &out[filled]) == EMBER_OK) filled++;
        else s = ember_fail(&err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (s == EMBER_OK) *n = count;
    else {
        ember_free_devices(out, filled); /* a failure hands back nothing to free */
        if (msg && msg_cap) snprintf(msg, msg_cap, "%s", err.msg);
    }
    ember_free(caps);
    return s;
}
