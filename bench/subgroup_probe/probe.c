/* probe.c — what a Vulkan device's subgroups really do, against what it reports
 * (bench/subgroup-probe.sh builds and runs it; docs/portability.md, "lavapipe").
 *
 * One dispatch of 4 workgroups of 128 invocations (probe.comp). Each invocation writes
 * the sum of 8 neighbours by subgroupShuffleXor, subgroupAdd over its subgroup,
 * gl_SubgroupSize, a shared-memory sum of its workgroup, gl_SubgroupInvocationID and
 * gl_SubgroupID. Checked here against what a device with subgroups of the reported size,
 * laid out in invocation order, must give; the count of wrong invocations is printed for
 * each. A right device prints zeros everywhere (the shuffle within 8 aside, at subgroups
 * under 8, where it reaches past the subgroup). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernel_fixture.h"
#include "platform/vk_cmd.h"
#include "platform/vk_memory.h"
#include "platform/vk_pipeline.h"

enum { WG = 128, GROUPS = 4, N = WG * GROUPS, OUTS = 6 };

static float x_of(uint32_t g) { return (float)((g * 7u) % 13u) - 6.0f; } /* as probe.comp */

static float sum(uint32_t from, uint32_t n)
{
    float s = 0;
    for (uint32_t k = 0; k < n; k++) s += x_of(from + k);
    return s;
}

int main(int argc, char **argv)
{
    static uint32_t spv[16384];
    FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
    if (!f) return fprintf(stderr, "usage: %s PROBE.spv\n", argv[0]), 2;
    size_t bytes = fread(spv, 1, sizeof spv, f);
    fclose(f);
    kt_ctx t = {0};
    if (!kt_open(&t)) return tu_skip("no Vulkan device");
    ember_vk_pipeline *p = NULL;
    if (ember_vk_pipeline_create(t.vk, "probe", spv, bytes, 1, 0, NULL, 0, &p, &t.err) != EMBER_OK) kt_die(&t, "pipeline");
    kt_case_begin(&t);
    ember_vk_span out = kt_buf(&t, NULL, sizeof(float) * OUTS * N);
    ember_vk_cmd_dispatch(t.cmd, p, &out, NULL, GROUPS, 1, 1);
    if (!kt_submit(&t, "probe")) return 1;
    const float *o = out.host;
    uint32_t S = (uint32_t)o[2], wrong[OUTS] = {0};
    for (uint32_t g = 0; g < N; g++) {
        const float *r = o + OUTS * g;
        uint32_t i = g % WG, first = g - i;
        wrong[0] += fabsf(r[0] - sum(first + (i & ~7u), 8)) > 1e-3f;
        wrong[1] += fabsf(r[1] - sum(first + i / S * S, S)) > 1e-3f;
        wrong[2] += (uint32_t)r[2] != S;
        wrong[3] += fabsf(r[3] - sum(first, WG)) > 1e-3f;
        wrong[4] += (uint32_t)r[4] != i % S;
        wrong[5] += (uint32_t)r[5] != i / S;
    }
    printf("subgroup size %u reported; wrong of %d invocations: shuffleXor within 8 %u, subgroupAdd %u, "
           "gl_SubgroupSize %u, shared-memory sum %u, gl_SubgroupInvocationID %u, gl_SubgroupID %u\n",
           S, N, wrong[0], wrong[1], wrong[2], wrong[3], wrong[4], wrong[5]);
    printf("first 32 invocations, lane/subgroup:");
    for (uint32_t g = 0; g < 32; g++) printf(" %g/%g", o[OUTS * g + 4], o[OUTS * g + 5]);
    printf("\n");
    ember_vk_pipeline_destroy(t.vk, p);
    kt_close(&t);
    return 0;
}
