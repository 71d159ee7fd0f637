/* stats.h — the figures the demo measures: frame times (every frame after the model
 * loaded), tokens and replies, and the JSON line printed at exit. */
#ifndef STATS_H
#define STATS_H

#include <stddef.h>
#include <stdint.h>

typedef struct frame_stats {
    float *ms;                 /* every frame's time, for the percentiles at exit */
    size_t n, cap;
    double sum_ms;
    /* The current second and the last finished one, for the stats bar. */
    double second_start_ms;
    int second_frames;
    float second_worst;
    int shown_fps;
    float shown_worst_ms;
} frame_stats;

/* Records one frame that ended at now_ms and took frame_ms (start to start). */
void frame_stats_add(frame_stats *s, double now_ms, double frame_ms);
/* Frames per second and the worst frame of the last full second (of the running one
 * before a second has passed), for the stats bar. */
void frame_stats_live(const frame_stats *s, double now_ms, int *fps, float *worst_ms);
/* p in [0, 100]; 0 when no frame was recorded. Sorts s->ms. */
double frame_stats_percentile(frame_stats *s, double p);
void frame_stats_free(frame_stats *s);

typedef struct gen_stats {
    uint64_t tokens;           /* generated tokens, all panels */
    int replies;               /* replies that ended (cancelled ones too; not errors) */
    /* The time some reply was in flight, summed: the idle time between replies (a user
     * typing, reading) is no time spent generating. */
    int in_flight;             /* replies on their way */
    double busy_since_ms;      /* when in_flight last rose from 0 */
    double busy_ms;            /* the spans of in_flight > 0 that ended */
    double last_ttft_ms;       /* of the last reply that produced a token */
    uint64_t drafted, accepted; /* speculative decoding, summed over replies */
} gen_stats;

/* A reply was submitted / ended (any way, errors too) at now_ms. */
void gen_stats_begin(gen_stats *g, double now_ms);
void gen_stats_end(gen_stats *g, double now_ms);
/* Tokens per second of generating time: over the time some reply was in flight, up to
 * now_ms (what is in flight counts to now_ms); 0 before any reply. */
double gen_stats_rate(const gen_stats *g, double now_ms);

/* Counts a panel's tokens and turns them into a rate twice a second, so the number on
 * screen is steady enough to read. */
typedef struct rate_meter {
    double window_start_ms;
    uint32_t window_tokens;
    double rate;
} rate_meter;

void rate_meter_add(rate_meter *m, uint32_t tokens);
void rate_meter_tick(rate_meter *m, double now_ms);

/* The line printed on stdout at exit:
 * {"panels":N,"replies":R,"tokens":T,"tok_s":X,"fps_mean":F,"frame_ms_p50":A,"frame_ms_p99":B} */
void stats_print_json(int panels, const gen_stats *g, frame_stats *f, double now_ms);

#endif
