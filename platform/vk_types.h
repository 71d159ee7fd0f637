/* vk_types.h — the device handle every part of the platform layer names: declared here,
 * defined by vk_device.c (vk_internal.h), so that memory, pipelines and recording can
 * take an ember_vk without depending on the code that creates one. */
#ifndef EMBER_VK_TYPES_H
#define EMBER_VK_TYPES_H

typedef struct ember_vk ember_vk;

#endif
