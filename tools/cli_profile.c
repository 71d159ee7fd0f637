/* cli_profile.c — `--profile` of ember generate and ember bench: an engine's profile
 * (ember_engine_get_profile) per phase, per step and per kernel, with the weights read and
 * the bandwidth that implies. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static double per(double x, uint64_t n) { return n ? x / (double)n : 0; }

/* Bytes over milliseconds, in GB/s (1e9 bytes); 0 without time. */
static double gb_s(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e6) : 0; }

static void phase_text(FILE *f, const char *name, const ember_profile_phase *ph, int timed)
{
    if (!ph->steps) return;
    fprintf(f, "profile: %s, %llu steps, %llu tokens (%.2f a step)\n", name, (unsigned long long)ph->steps,
            (unsigned long long)ph->tokens, per((double)ph->tokens, ph->steps));
    fprintf(f, "  per step   %.1f dispatches, %.1f barriers, %.2f submissions; GPU %.3f ms; host %.3f ms\n",
            per((double)ph->dispatches, ph->steps), per((double)ph->barriers, ph->steps),
            per((double)ph->submissions, ph->steps), per(ph->gpu_ms, ph->steps), per(ph->host_ms, ph->steps));
    fprintf(f, "  read back  %.0f bytes a step (argmax ids, candidates, whole rows of logits)\n",
            per((double)ph->readback_bytes, ph->steps));
    if (!timed) {
        fprintf(f, "  (no GPU timestamps on this backend: counts and host time only)\n");
        return;
    }
    fprintf(f, "  weights    %.2f MB a step, %.2f MB a token; %.2f GB/s over the steps' GPU time\n",
            per(ph->weight_bytes / 1e6, ph->steps), per(ph->weight_bytes / 1e6, ph->tokens),
            gb_s((double)ph->weight_bytes, ph->gpu_ms));
    fprintf(f, "  %-40s %10s %10s %7s %10s %8s\n", "kernel", "calls/step", "ms/step", "share", "MB/step", "GB/s");
    for (uint32_t i = 0; i < ph->n_kernels; i++) {
        const ember_profile_kernel *k = &ph->kernels[i];
        fprintf(f, "  %-40s %10.2f %10.4f %6.1f%% ", k->name, per((double)k->dispatches, ph->steps),
                per(k->gpu_ms, ph->steps), ph->gpu_ms > 0 ? 100.0 * k->gpu_ms / ph->gpu_ms : 0.0);
        if (k->weight_bytes) fprintf(f, "%10.3f %8.2f\n", per(k->weight_bytes / 1e6, ph->steps),
                                     gb_s((double)k->weight_bytes, k->gpu_ms));
        else fprintf(f, "%10s %8s\n", "-", "-");
    }
}

void cli_profile_text(FILE *f, const ember_profile *p)
{
    phase_text(f, "prefill", &p->prefill, p->gpu_timed);
    phase_text(f, "decode", &p->decode, p->gpu_timed);
    if (!p->prefill.steps && !p->decode.steps) fprintf(f, "profile: no steps\n");
}

static void phase_json(FILE *f, const ember_profile_phase *ph)
{
    fprintf(f, "{\"steps\": %llu, \"tokens\": %llu, \"dispatches_per_step\": %.3f, \"barriers_per_step\": %.3f, "
               "\"submissions_per_step\": %.3f, \"gpu_ms_per_step\": %.4f, \"host_ms_per_step\": %.4f, "
               "\"weight_bytes_per_step\": %.0f, \"weight_bytes_per_token\": %.0f, \"bandwidth_gb_s\": %.3f, "
               "\"readback_bytes_per_step\": %.0f, \"kernels\": [",
            (unsigned long long)ph->steps, (unsigned long long)ph->tokens, per((double)ph->dispatches, ph->steps),
            per((double)ph->barriers, ph->steps), per((double)ph->submissions, ph->steps), per(ph->gpu_ms, ph->steps),
            per(ph->host_ms, ph->steps), per((double)ph->weight_bytes, ph->steps),
            per((double)ph->weight_bytes, ph->tokens), gb_s((double)ph->weight_bytes, ph->gpu_ms),
            per((double)ph->readback_bytes, ph->steps));
    for (uint32_t i = 0; i < ph->n_kernels; i++) {
        const ember_profile_kernel *k = &ph->kernels[i];
        fprintf(f, "%s{\"name\": ", i ? ", " : "");
        cli_json_string(f, k->name, strlen(k->name));
        fprintf(f, ", \"dispatches\": %llu, \"gpu_ms\": %.4f, \"weight_bytes\": %llu}",
                (unsigned long long)k->dispatches, k->gpu_ms, (unsigned long long)k->weight_bytes);
    }
    fprintf(f, "]}");
}

void cli_profile_json(FILE *f, const ember_profile *p)
{
    fprintf(f, "{\"gpu_timed\": %s, \"prefill\": ", p->gpu_timed ? "true" : "false");
    phase_json(f, &p->prefill);
    fprintf(f, ", \"decode\": ");
    phase_json(f, &p->decode);
    fprintf(f, "}");
}
