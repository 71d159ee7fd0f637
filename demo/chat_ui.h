/* chat_ui.h — where things are on screen and how they are drawn: the stats bar at the
 * top, the panels side by side (title, messages), the input line at the bottom, and the
 * loading progress or error over the panels. */
#ifndef CHAT_UI_H
#define CHAT_UI_H

#include "app.h"

/* Fixed heights, in px: the test computes the message areas from them too (and the demo
 * prints the areas on stderr when it writes a screenshot). */
#define UI_STATS_H 30
#define UI_TITLE_H 32
#define UI_INPUT_H 44

typedef struct layout {
    SDL_Rect stats, input;
    SDL_Rect panel[MAX_PANELS], title[MAX_PANELS], messages[MAX_PANELS], stop[MAX_PANELS];
    int n;
} layout;

/* Panel i spans [i * w / n, (i + 1) * w / n) horizontally. */
void ui_layout(int w, int h, int n_panels, layout *l);
/* Draws a whole frame into the renderer (not presented). */
void ui_draw(app *a, const layout *l);
/* The message of panel i under window point y, or -1 (positions of the last frame). */
int ui_message_at(const app *a, const layout *l, int i, int y);
/* Scrolls panel i by dy px (positive = down, towards the newest). */
void ui_scroll(app *a, const layout *l, int i, int dy);
void ui_free(app *a);

#endif
