/* profile.c — an engine's profile: each step's dispatches summed by kernel name into the
 * step's phase (decode or prefill), beside its counts and host time. A mutex keeps the
 * stepping thread and readers apart; a step costs a pass over its dispatches, each matched
 * to its kernel by the name's pointer (pipelines keep theirs) before its text. */
#include "platform/os_thread.h"
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "profile.h"

struct ember_profiler {
    ember_mutex mu;
    ember_profile p;
    const char *keys[2][EMBER_PROFILE_MAX_KERNELS]; /* per phase: the name pointers seen */
};

ember_status ember_profiler_create(bool gpu_timed, ember_profiler **out, ember_err *err)
{
    ember_profiler *p = ember_calloc(1, sizeof *p);
    *out = p;
    if (!p) return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    ember_mutex_init(&p->mu);
    p->p.gpu_timed = gpu_timed;
    return EMBER_OK;
}

void ember_profiler_free(ember_profiler *p)
{
    if (!p) return;
    ember_mutex_destroy(&p->mu);
    ember_free(p);
}

/* The phase's entry for name: found, new, or "(other)" once the table is full. */
static ember_profile_kernel *kernel_of(ember_profile_phase *ph, const char **keys, const char *name)
{
    for (uint32_t i = 0; i < ph->n_kernels; i++)
        if (keys[i] == name || strcmp(ph->kernels[i].name, name) == 0) return &ph->kernels[i];
    uint32_t last = EMBER_PROFILE_MAX_KERNELS - 1;
    if (ph->n_kernels == last) name = "(other)";
    if (ph->n_kernels > last) return &ph->kernels[last];
    ember_profile_kernel *k = &ph->kernels[ph->n_kernels];
    keys[ph->n_kernels++] = name;
    k->name = name; /* a pipeline's, which lives as long as the model, or the literal */
    return k;
}

void ember_profiler_add(ember_profiler *p, const ember_profiler_step *s)
{
    ember_mutex_lock(&p->mu);
    ember_profile_phase *ph = s->decode ? &p->p.decode : &p->p.prefill;
    const char **keys = p->keys[s->decode ? 0 : 1];
    ph->steps++;
    ph->tokens += s->tokens;
    ph->submissions += s->submissions;
    ph->readback_bytes += s->readback_bytes;
    ph->host_ms += s->host_ms;
    ph->dispatches += s->n;
    ph->barriers += s->barriers;
    ph->gpu_ms += s->gpu_ns / 1e6;
    for (uint32_t i = 0; i < s->n; i++) {
        ember_profile_kernel *k = kernel_of(ph, keys, s->d[i].name);
        k->dispatches++;
        k->gpu_ms += s->d[i].ns / 1e6;
        k->weight_bytes += s->d[i].bytes;
        ph->weight_bytes += s->d[i].bytes;
    }
    ember_mutex_unlock(&p->mu);
}

static int by_time(const void *a, const void *b)
{
    double x = ((const ember_profile_kernel *)a)->gpu_ms, y = ((const ember_profile_kernel *)b)->gpu_ms;
    return x < y ? 1 : x > y ? -1 : strcmp(((const ember_profile_kernel *)a)->name,
                                            ((const ember_profile_kernel *)b)->name);
}

void ember_profiler_get(ember_profiler *p, ember_profile *out)
{
    ember_mutex_lock(&p->mu);
    *out = p->p;
    ember_mutex_unlock(&p->mu);
    qsort(out->decode.kernels, out->decode.n_kernels, sizeof out->decode.kernels[0], by_time);
    qsort(out->prefill.kernels, out->prefill.n_kernels, sizeof out->prefill.kernels[0], by_time);
}

void ember_profiler_reset(ember_profiler *p)
{
    ember_mutex_lock(&p->mu);
    int timed = p->p.gpu_timed;
    memset(&p->p, 0, sizeof p->p);
    memset(p->keys, 0, sizeof p->keys);
    p->p.gpu_timed = timed;
    ember_mutex_unlock(&p->mu);
}
