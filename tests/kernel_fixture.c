/* kernel_fixture.c — see kernel_fixture.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernel_fixture.h"

void kt_die(kt_ctx *t, const char *what)
{
    fprintf(stderr, "%s failed: %s\n", what, t->err.msg);
    exit(1);
}

void kt_case_begin(kt_ctx *t)
{
    ember_vk_arena_destroy(t->arena);
    if (ember_vk_arena_create(t->vk, &t->arena, &t->err) != EMBER_OK) kt_die(t, "arena");
    if (ember_vk_cmd_begin(t->cmd, &t->err) != EMBER_OK) kt_die(t, "cmd_begin");
}

ember_vk_span kt_buf(kt_ctx *t, const void *data, size_t bytes)
{
    ember_vk_span s;
    if (ember_vk_alloc(t->arena, bytes ? bytes : 4, EMBER_VK_MEM_HOST, &s, &t->err) != EMBER_OK) kt_die(t, "alloc");
    if (data) memcpy(s.host, data, bytes);
    else memset(s.host, 0, bytes);
    return s;
}

bool kt_submit(kt_ctx *t, const char *what)
{
    ember_status s = ember_vk_cmd_submit(t->cmd, &t->err);
    CHECKF(s == EMBER_OK, "%s: submit: %s", what, t->err.msg);
    return s == EMBER_OK;
}

void kt_check_close(const char *what, const float *got, const double *want, size_t n, double tol)
{
    double num = 0, den = 1e-30;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= num)) num = d, worst = i;
        if (fabs(want[i]) > den) den = fabs(want[i]);
    }
    CHECKF(num / den < tol, "%s: rel err %.3g at %zu (got %g want %g)", what, num / den, worst, got[worst],
           want[worst]);
}

float *kt_rand_floats(tu_rng *r, size_t n, float lo, float hi)
{
    float *x = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        x[i] = tu_uniform(r, lo, hi);
        if (fabsf(x[i]) < 1e-3f) x[i] = 0.5f;
    }
    return x;
}

float kt_half_to_float(uint16_t h)
{
    uint32_t e = h >> 10 & 31, m = h & 1023;
    float v = e ? ldexpf((float)(m | 1024), (int)e - 25) : ldexpf((float)m, -24);
    return h >> 15 ? -v : v;
}

double kt_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int kt_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
