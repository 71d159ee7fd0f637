/* stats.c — frame times, token rates and the exit line (stats.h). */
#include "stats.h"

#include <stdio.h>
#include <stdlib.h>

void frame_stats_add(frame_stats *s, double now_ms, double frame_ms)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 4096;
        float *p = realloc(s->ms, cap * sizeof *p);
        if (p) s->ms = p, s->cap = cap;
    }
    if (s->n < s->cap) s->ms[s->n++] = (float)frame_ms;
    s->sum_ms += frame_ms;
    if (s->second_start_ms == 0) s->second_start_ms = now_ms;
    s->second_frames++;
    if (frame_ms > s->second_worst) s->second_worst = (float)frame_ms;
    if (now_ms - s->second_start_ms >= 1000.0) {
        s->shown_fps = (int)(s->second_frames * 1000.0 / (now_ms - s->second_start_ms) + 0.5);
        s->shown_worst_ms = s->second_worst;
        s->second_start_ms = now_ms;
        s->second_frames = 0;
        s->second_worst = 0;
    }
}

void frame_stats_live(const frame_stats *s, double now_ms, int *fps, float *worst_ms)
{
    *fps = s->shown_fps;
    *worst_ms = s->shown_worst_ms;
    double dt = now_ms - s->second_start_ms;
    if (s->shown_fps == 0 && s->second_frames > 0 && dt > 0) {
        *fps = (int)(s->second_frames * 1000.0 / dt + 0.5);
        *worst_ms = s->second_worst;
    }
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

double frame_stats_percentile(frame_stats *s, double p)
{
    if (s->n == 0) return 0;
    qsort(s->ms, s->n, sizeof *s->ms, cmp_float);
    /* nearest rank */
    size_t k = (size_t)(p / 100.0 * (double)s->n + 0.999999);
    if (k < 1) k = 1;
    if (k > s->n) k = s->n;
    return s->ms[k - 1];
}

void frame_stats_free(frame_stats *s)
{
    free(s->ms);
    *s = (frame_stats){0};
}

void gen_stats_begin(gen_stats *g, double now_ms)
{
    if (g->in_flight++ == 0) g->busy_since_ms = now_ms;
}

void gen_stats_end(gen_stats *g, double now_ms)
{
    if (g->in_flight == 0) return;
    if (--g->in_flight == 0) g->busy_ms += now_ms - g->busy_since_ms;
}

double gen_stats_rate(const gen_stats *g, double now_ms)
{
    double ms = g->busy_ms + (g->in_flight ? now_ms - g->busy_since_ms : 0.0);
    return ms > 0 ? (double)g->tokens * 1000.0 / ms : 0.0;
}

void rate_meter_add(rate_meter *m, uint32_t tokens) { m->window_tokens += tokens; }

void rate_meter_tick(rate_meter *m, double now_ms)
{
    if (m->window_start_ms == 0) m->window_start_ms = now_ms;
    double dt = now_ms - m->window_start_ms;
    if (dt < 500.0) return;
    m->rate = m->window_tokens * 1000.0 / dt;
    m->window_tokens = 0;
    m->window_start_ms = now_ms;
}

void stats_print_json(int panels, const gen_stats *g, frame_stats *f, double now_ms)
{
    double fps = f->sum_ms > 0 ? (double)f->n * 1000.0 / f->sum_ms : 0.0;
    double p50 = frame_stats_percentile(f, 50), p99 = frame_stats_percentile(f, 99);
    printf("{\"panels\":%d,\"replies\":%d,\"tokens\":%llu,\"tok_s\":%.2f,\"fps_mean\":%.2f,"
           "\"frame_ms_p50\":%.2f,\"frame_ms_p99\":%.2f}\n",
           panels, g->replies, (unsigned long long)g->tokens, gen_stats_rate(g, now_ms), fps, p50, p99);
    fflush(stdout);
}
