/* vk_texel.h — uniform texel buffer views over spans (vk_texel.c). */
#ifndef EMBER_VK_TEXEL_H
#define EMBER_VK_TEXEL_H

#include "vk_memory.h"

/* Gives s a uniform texel buffer view of the given format over its bytes (the range is
 * rounded down to whole texels), owned by arena a and destroyed with it. Fails with
 * EMBER_ERR_UNSUPPORTED when the format cannot be a uniform texel buffer, the span's
 * offset is not a multiple of minTexelBufferOffsetAlignment, or the span holds no texel
 * or more than maxTexelBufferElements. s may come from any arena of the same device. */
ember_status ember_vk_texel_view(ember_vk_arena *a, ember_vk_span *s, VkFormat format, ember_err *err);

#endif
