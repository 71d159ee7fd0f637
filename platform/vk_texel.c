/* vk_texel.c — uniform texel buffer views over spans. On lavapipe a texelFetch is a
 * vector gather while a storage-buffer load is a per-lane loop with bounds checks, so the
 * kernels read weights and activations through views where the device allows. */
#include "vk_internal.h"
#include "vk_result.h"
#include "vk_texel.h"

/* Bytes per texel of the formats the kernels use; 0 for any other. */
static uint32_t texel_bytes(VkFormat f)
{
    switch (f) {
    case VK_FORMAT_R32G32B32A32_SFLOAT:
    case VK_FORMAT_R32G32B32A32_UINT: return 16;
    case VK_FORMAT_R32_SFLOAT:
    case VK_FORMAT_R32_UINT: return 4;
    case VK_FORMAT_R16_SFLOAT: return 2;
    default: return 0;
    }
}

static bool format_usable(const ember_vk *vk, VkPhysicalDevice phys, VkFormat f)
{
    VkFormatProperties p;
    vk->fn.GetPhysicalDeviceFormatProperties(phys, f, &p);
    return (p.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0;
}

ember_status ember_vk_texel_view(ember_vk_arena *a, ember_vk_span *s, VkFormat format, ember_err *err)
{
    ember_vk *vk = ember_vk_arena_device(a);
    const ember_vk_caps *c = &vk->caps;
    uint32_t tb = texel_bytes(format);
    if (tb == 0 || !format_usable(vk, vk->phys, format))
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "format %d cannot be a uniform texel buffer", (int)format);
    uint64_t texels = s->size / tb;
    if (s->buffer == VK_NULL_HANDLE || texels == 0 || texels > c->max_texel_elements)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "a texel view of %llu texels (limit %u)",
                          (unsigned long long)texels, c->max_texel_elements);
    if (c->min_texel_align && s->offset % c->min_texel_align != 0)
        return ember_fail(err, EMBER_ERR_UNSUPPORTED, "texel view at offset %llu (alignment %llu)",
                          (unsigned long long)s->offset, (unsigned long long)c->min_texel_align);
    VkBufferViewCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO, .buffer = s->buffer,
                                 .format = format, .offset = s->offset, .range = texels * tb};
    VkBufferView view;
    ember_status st = ember_vk_check(vk->fn.CreateBufferView(vk->device, &ci, NULL, &view), err, "vkCreateBufferView");
    if (st == EMBER_OK) st = ember_vk_arena_own_view(a, view, err);
    if (st == EMBER_OK) s->view = view;
    return st;
}
