/* profile.h — gathering an engine's profile step by step (profile.c; the public side is
 * ember_profile in ember.h). Library-internal. */
#ifndef EMBER_PROFILE_H
#define EMBER_PROFILE_H

#include "ember.h"
#include "platform/vk_cmd.h"

typedef struct ember_profiler ember_profiler;

/* What one step reports: its kind, rows and host time, and its dispatches as the command
 * buffer timed them (d NULL and n 0 on the CPU backend or when the step was not timed). */
typedef struct ember_profiler_step {
    bool decode;                     /* every row gave logits */
    uint32_t tokens, submissions;
    uint64_t readback_bytes;         /* outputs read back to the host */
    double host_ms;
    const ember_vk_dispatch_time *d;
    uint32_t n, barriers;
    double gpu_ns;
} ember_profiler_step;

/* gpu_timed: the steps' dispatches will be timed (ember_profile.gpu_timed). */
ember_status ember_profiler_create(bool gpu_timed, ember_profiler **out, ember_err *err);
void ember_profiler_free(ember_profiler *p);
/* Adds a step (the stepping thread). Thread-safe against get and reset. */
void ember_profiler_add(ember_profiler *p, const ember_profiler_step *s);
/* The profile so far, each phase's kernels sorted by GPU time. Thread-safe. */
void ember_profiler_get(ember_profiler *p, ember_profile *out);
void ember_profiler_reset(ember_profiler *p);

#endif
