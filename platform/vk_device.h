/* vk_device.h — the instance, the chosen device and its compute queue (vk_device.c). */
#ifndef EMBER_VK_DEVICE_H
#define EMBER_VK_DEVICE_H

#include "vk_caps.h"
#include "vk_types.h"

typedef struct ember_vk_opts {
    int device_index;        /* 0 = automatic (discrete > integrated > virtual > cpu);
                                N > 0 = the N-th device in enumeration order */
    bool validation;         /* enable VK_LAYER_KHRONOS_validation when installed */
    /* The application's instance and device to run on (borrowed: never destroyed);
     * NULL = create our own. */
    const ember_vulkan_device *host;
    /* Treat the device as a discrete GPU whatever it is: device-local memory is never
     * mapped (uploads and read-backs go through staging copies) and mapped host memory is
     * flushed and invalidated as if it were not coherent. Tests that path on any device. */
    bool discrete_memory;
} ember_vk_opts;

/* Devices beyond this many are not listed. */
#define EMBER_VK_MAX_DEVICES 16

/* The caps of every physical device, in enumeration order. Writes up to cap entries,
 * returns the count in *n. Needs no logical device. */
ember_status ember_vk_list_devices(ember_vk_caps *out, uint32_t cap, uint32_t *n, ember_err *err);

ember_status ember_vk_create(const ember_vk_opts *opts, ember_vk **out, ember_err *err);
void ember_vk_destroy(ember_vk *vk);
const ember_vk_caps *ember_vk_get_caps(const ember_vk *vk);
/* Validation-layer errors and warnings seen so far (0 when the layer is off). The text of
 * the first one is copied into first (if not NULL). */
uint32_t ember_vk_validation_count(const ember_vk *vk, char *first, size_t cap);

#endif
