/* kernel_fixture.h — what the kernel test programs (test_kernels, test_kernel_attention)
 * share: a device with kernels, an arena reset per case, one command buffer, host-visible
 * buffers, and checks and timing helpers. A failed set-up step ends the program. */
#ifndef EMBER_KERNEL_FIXTURE_H
#define EMBER_KERNEL_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/kernels.h"
#include "testutil.h"

typedef struct kt_ctx {
    ember_vk *vk;
    ember_kernels *k;
    ember_vk_arena *arena;  /* per case: reset by kt_case_begin */
    ember_vk_cmd *cmd;
    ember_err err;
    const char *variant;
    int variant_index;      /* test_kernels: 0 is the reference of the cross-variant checks */
    float *alone[64];       /* test_kernels: per invariance case, outputs of tokens run alone
                               in variant 0 */
} kt_ctx;

/* Prints what failed with the last error and exits. */
void kt_die(kt_ctx *t, const char *what);
/* A fresh arena and a command buffer begun for the next case. */
void kt_case_begin(kt_ctx *t);
/* A host-visible buffer holding a copy of data (zeros when NULL). */
ember_vk_span kt_buf(kt_ctx *t, const void *data, size_t bytes);
/* Submits the case's commands and waits; a failure is a check failure. */
bool kt_submit(kt_ctx *t, const char *what);
/* Checks max |got - want| / max |want| < tol. */
void kt_check_close(const char *what, const float *got, const double *want, size_t n, double tol);
/* n uniform floats in [lo, hi), none of magnitude under 1e-3 (malloc'ed). */
float *kt_rand_floats(tu_rng *r, size_t n, float lo, float hi);
float kt_half_to_float(uint16_t h);
double kt_now_s(void);
/* qsort comparator for doubles. */
int kt_cmp_double(const void *a, const void *b);

#endif
