/* stats_bar.h — the stats bar at the top of the window: what it says, as fields in a
 * row, and which of them fit the window's width. A window too narrow for all of them
 * loses the least important first (the per-panel rates, prefix hits, speculation, the
 * drive mode, ...) and keeps the rate now, the KV pool and the frame times last. */
#ifndef STATS_BAR_H
#define STATS_BAR_H

#include <SDL.h>
#include <stdint.h>

#include "font.h"

#define BAR_FIELDS 10
#define BAR_MARGIN 10   /* between the window's edges and the text */
#define BAR_GAUGE_W 90  /* the KV gauge drawn after its field's text */
#define BAR_GAUGE_GAP 6

typedef struct bar_field {
    const char *sep;    /* drawn before it unless it is the first shown: "  |  ", " ", ", " */
    char text[512];
    int drop;           /* the order of dropping: the highest goes first; 0 never goes */
    int gauge;          /* the KV gauge follows the text */
    int alert;          /* drawn in the error colour */
} bar_field;

typedef struct stats_bar {
    bar_field field[BAR_FIELDS];
    int n, shown[BAR_FIELDS];
    text_tex tex[BAR_FIELDS];
    double updated_ms;          /* the texts are refreshed four times a second, to be read */
    uint32_t kv_used, kv_total; /* as the texts last said */
    int right_px, n_shown;      /* the last drawn bar: where its text ends, fields shown */
} stats_bar;

/* The width one text takes, in px (font_width for the bar's font). */
typedef int (*text_width_fn)(void *ctx, const char *s);

/* Marks in shown[] the fields that fit max_w px, dropping the highest `drop` first (the
 * later of equals) until they fit or one is left; returns their width. */
int stats_bar_fit(const bar_field *f, int n, int max_w, text_width_fn width, void *ctx, int *shown);

struct app;
/* Draws the bar into rectangle b of the window: refreshes the texts when due, fits
 * them to b's width, records right_px and n_shown. */
void stats_bar_draw(struct app *a, SDL_Rect b);
/* Texts the figures of a reply that just ended at once, not at the next refresh. */
void stats_bar_refresh_soon(stats_bar *s);
void stats_bar_free(stats_bar *s);

#endif
