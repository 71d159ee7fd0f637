/* vk.h — Ember's thin Vulkan layer: device choice, capabilities, memory, pipelines and
 * command recording. It knows nothing about transformers.
 *
 * Every Vulkan result is checked; failures become an ember_status with a message in the
 * caller's ember_err. Recording calls (ember_vk_cmd_*) do not return a status: the first
 * failure while recording is kept in the command object and returned by
 * ember_vk_cmd_submit, so recording code stays a straight list of dispatches. */
#ifndef EMBER_VK_H
#define EMBER_VK_H

/* Each part has its own header; engine/ code includes this one. */
#include "vk_caps.h"
#include "vk_cmd.h"
#include "vk_device.h"
#include "vk_fault.h"
#include "vk_memory.h"
#include "vk_queue.h"
#include "vk_pipeline.h"
#include "vk_texel.h"
#include "vk_transfer.h"

#endif
