/* vk_cmd.h — recording dispatches into a command buffer and submitting it (vk_cmd.c). */
#ifndef EMBER_VK_CMD_H
#define EMBER_VK_CMD_H

#include "vk_memory.h"
#include "vk_pipeline.h"

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
/* As ember_vk_cmd_dispatch, with the workgroup counts read on the device from three uint32
 * at args (a span of 12 bytes, 4-aligned, written by an earlier dispatch behind a barrier):
 * a count the host cannot know when it records, such as how many experts a step chose. */
void ember_vk_cmd_dispatch_indirect(ember_vk_cmd *c, const ember_vk_pipeline *p, const ember_vk_span *bindings,
                                    const void *push, ember_vk_span args);
/* Compute-to-compute (and transfer) memory barrier: later dispatches, and the workgroup
 * counts of indirect ones, see earlier writes. */
void ember_vk_cmd_barrier(ember_vk_cmd *c);
void ember_vk_cmd_copy(ember_vk_cmd *c, const ember_vk_span *src, const ember_vk_span *dst,
                       VkDeviceSize bytes);
void ember_vk_cmd_fill(ember_vk_cmd *c, const ember_vk_span *dst, uint32_t value);
/* Writes a GPU timestamp into slot i (0..63); read after completion. No-op without
 * timestamp support. */
void ember_vk_cmd_timestamp(ember_vk_cmd *c, uint32_t i);
/* Ends, submits and waits. Returns the first recording error if any. */
ember_status ember_vk_cmd_submit(ember_vk_cmd *c, ember_err *err);
/* Ends and submits without waiting; ember_vk_cmd_wait (or the next begin) waits. */
ember_status ember_vk_cmd_submit_nowait(ember_vk_cmd *c, ember_err *err);
/* Waits at most timeout_ns for the submission (UINT64_MAX: until done, up to a 600 s
 * limit that becomes EMBER_ERR_DEVICE_LOST): EMBER_OK when done or nothing was
 * submitted, EMBER_NOT_READY when the time ran out first. */
ember_status ember_vk_cmd_wait(ember_vk_cmd *c, uint64_t timeout_ns, ember_err *err);
/* Nanoseconds between timestamp slots a and b of the last completed submission
 * (negative when unavailable). */
double ember_vk_cmd_elapsed_ns(ember_vk_cmd *c, uint32_t a, uint32_t b);
/* The next submission waits until the timeline semaphore reaches wait_value (0 = does
 * not wait) and sets it to signal_value when done (0 = does not signal); NULL clears.
 * EMBER_ERR_UNSUPPORTED without the timelineSemaphore feature. */
ember_status ember_vk_cmd_sync_next(ember_vk_cmd *c, VkSemaphore timeline, uint64_t wait_value,
                                    uint64_t signal_value, ember_err *err);
/* Dispatches recorded in the last recording. */
uint32_t ember_vk_cmd_dispatch_count(const ember_vk_cmd *c);

/* Profiling (off by default). With it on, every recording writes a timestamp before its
 * first dispatch and after each dispatch, so that a dispatch's time is the time between
 * the previous dispatch's end and its own (dispatches without a barrier between them may
 * overlap on a GPU: their times then split what they took together). EMBER_ERR_UNSUPPORTED
 * when the device has no timestamps on its compute queue. */
ember_status ember_vk_cmd_set_profiling(ember_vk_cmd *c, bool on, ember_err *err);
/* Adds bytes of weights to what the last recorded dispatch reads (its bandwidth). */
void ember_vk_cmd_note_bytes(ember_vk_cmd *c, uint64_t bytes);

typedef struct ember_vk_dispatch_time {
    const char *name;  /* the pipeline's; valid while the pipeline lives */
    double ns;         /* GPU time */
    uint64_t bytes;    /* ember_vk_cmd_note_bytes */
} ember_vk_dispatch_time;
#define EMBER_VK_PROFILE_MAX 4096

/* The last completed submission's dispatches in recording order, the first
 * EMBER_VK_PROFILE_MAX of them (NULL and 0 when it was not profiled), its barriers, and
 * its GPU time from the recording's start to the last timed dispatch's end (*gpu_ns).
 * The array is the command buffer's: valid until the next begin. */
uint32_t ember_vk_cmd_profile(const ember_vk_cmd *c, const ember_vk_dispatch_time **out, uint32_t *n_barriers,
                              double *gpu_ns);

#endif
