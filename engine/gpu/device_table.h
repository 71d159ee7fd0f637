/* device_table.h — what Ember assumes of a class of device (a vendor's GPUs, a CPU
 * driver) where the caps alone do not say which kernel variant runs fastest: one table,
 * asked by kernels.c when it chooses variants and by `ember info` when it explains them.
 * Library-internal. */
#ifndef EMBER_DEVICE_TABLE_H
#define EMBER_DEVICE_TABLE_H

#include <stdint.h>

#include "platform/vk_caps.h"

typedef struct ember_device_class {
    const char *name;    /* "NVIDIA", "AMD", "Intel", "CPU", "other" */
    uint32_t lin_lanes;  /* lanes per linear tile (shaders/linear.glsl NPART): 8, 16, 32
                            or 64, never more than the subgroup the linear's subgroup
                            kernels run in (wider groups would combine through shared
                            memory) */
    const char *why;     /* the reason for lin_lanes, for `ember info` */
} ember_device_class;

/* The class of the device these caps describe and its choices. */
ember_device_class ember_device_class_of(const ember_vk_caps *c);

#endif
