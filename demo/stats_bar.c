/* stats_bar.c — the stats bar's fields, their fitting and drawing (stats_bar.h). */
#include "stats_bar.h"

#include <stdio.h>
#include <string.h>

#include "app.h"

static const SDL_Color BAR_BG = {30, 33, 42, 255};
static const SDL_Color LIGHT = {215, 220, 230, 255};
static const SDL_Color ALERT = {255, 128, 110, 255};
static const SDL_Color GAUGE_FG = {90, 190, 120, 255};
static const SDL_Color GAUGE_BG = {50, 55, 66, 255};

static const char *const BAR = "  |  ";

/* ---- fitting ---------------------------------------------------------------------------- */

static int field_width(const bar_field *f, int first, text_width_fn width, void *ctx)
{
    int w = width(ctx, f->text) + (first ? 0 : width(ctx, f->sep));
    return w + (f->gauge ? BAR_GAUGE_GAP + BAR_GAUGE_W : 0);
}

static int shown_width(const bar_field *f, int n, const int *shown, text_width_fn width, void *ctx)
{
    int w = 0, first = 1;
    for (int i = 0; i < n; i++)
        if (shown[i]) w += field_width(&f[i], first, width, ctx), first = 0;
    return w;
}

int stats_bar_fit(const bar_field *f, int n, int max_w, text_width_fn width, void *ctx, int *shown)
{
    int left = n;
    for (int i = 0; i < n; i++) shown[i] = 1;
    int w = shown_width(f, n, shown, width, ctx);
    while (w > max_w && left > 1) {
        int worst = -1;
        for (int i = 0; i < n; i++)
            if (shown[i] && f[i].drop > 0 && (worst < 0 || f[i].drop >= f[worst].drop)) worst = i;
        if (worst < 0) break; /* only what never goes is left: the bar clips it */
        shown[worst] = 0, left--;
        w = shown_width(f, n, shown, width, ctx);
    }
    return w;
}

/* ---- what it says ----------------------------------------------------------------------- */

static bar_field *add(stats_bar *s, const char *sep, int drop)
{
    bar_field *f = &s->field[s->n++];
    *f = (bar_field){.sep = sep, .drop = drop};
    return f;
}

/* "(12 / 10 / 11)": each panel's rate; the sum goes to *total. */
static void panel_rates(const app *a, char *buf, size_t cap, double *total)
{
    size_t off = snprintf(buf, cap, "(");
    *total = 0;
    for (int i = 0; i < a->n_panels && off < cap; i++) {
        *total += a->panels[i].meter.rate;
        off += (size_t)snprintf(buf + off, cap - off, "%s%.0f", i ? " / " : "", a->panels[i].meter.rate);
    }
    if (off < cap) snprintf(buf + off, cap - off, ")");
}

/* Speculation's acceptance: accepted of drafted tokens, over the replies so far. */
static void spec_text(const app *a, bar_field *f)
{
    const gen_stats *g = &a->gen;
    if (!a->opt.ngram && !a->opt.draft) {
        snprintf(f->text, sizeof f->text, "spec off");
        return;
    }
    f->drop = 5; /* asked for: worth more than the rates per panel */
    snprintf(f->text, sizeof f->text, "spec %s %.0f%% (%llu/%llu)", a->opt.ngram ? "n-gram" : "draft",
             g->drafted ? 100.0 * (double)g->accepted / (double)g->drafted : 0.0, (unsigned long long)g->accepted,
             (unsigned long long)g->drafted);
}

/* The rates first (now, per panel, over the session's generating time), then the KV
 * pool, the prefix cache, speculation, and the frame times. */
static void make_fields(app *a, stats_bar *s)
{
    static const char *const modes[] = {"frame budget", "threaded", "blocking"};
    const ember_engine_stats *e = &a->engine_stats;
    const char *model = strrchr(a->opt.model, '/');
    char rates[sizeof s->field[0].text];
    double total;
    panel_rates(a, rates, sizeof rates, &total);
    s->n = 0;
    snprintf(add(s, BAR, 3)->text, sizeof s->field[0].text, "%s", model ? model + 1 : a->opt.model);
    snprintf(add(s, BAR, 6)->text, sizeof s->field[0].text, "%s", modes[a->opt.mode]);
    snprintf(add(s, BAR, 0)->text, sizeof s->field[0].text, "%.0f tok/s now", total);
    snprintf(add(s, " ", 9)->text, sizeof s->field[0].text, "%s", rates);
    snprintf(add(s, ", ", 4)->text, sizeof s->field[0].text, "%.0f overall", gen_stats_rate(&a->gen, a->now_ms));
    snprintf(add(s, BAR, 5)->text, sizeof s->field[0].text, "TTFT %.0f ms", a->gen.last_ttft_ms);
    bar_field *kv = add(s, BAR, 1);
    kv->gauge = 1;
    snprintf(kv->text, sizeof kv->text, "KV %u/%u, peak %u", e->kv_blocks_used, e->kv_blocks_total,
             e->kv_peak_blocks_used);
    if (a->engine_error[0]) {
        bar_field *f = add(s, BAR, 0);
        f->alert = 1;
        snprintf(f->text, sizeof f->text, "%s", a->engine_error);
        return;
    }
    snprintf(add(s, BAR, 7)->text, sizeof s->field[0].text, "prefix hits %llu tok",
             (unsigned long long)e->prefix_hit_tokens);
    spec_text(a, add(s, BAR, 8));
    int fps;
    float worst;
    frame_stats_live(&a->frames, a->now_ms, &fps, &worst);
    snprintf(add(s, BAR, 0)->text, sizeof s->field[0].text, "%d fps, worst %.0f ms", fps, worst);
}

/* ---- drawing ------------------------------------------------------------------------------ */

static int bar_text_width(void *f, const char *s) { return font_width(f, s, strlen(s)); }

static void draw_gauge(app *a, const stats_bar *s, int x, SDL_Rect b)
{
    SDL_Rect g = {x, b.y + 10, BAR_GAUGE_W, b.h - 20};
    SDL_SetRenderDrawColor(a->renderer, GAUGE_BG.r, GAUGE_BG.g, GAUGE_BG.b, 255);
    SDL_RenderFillRect(a->renderer, &g);
    if (!s->kv_total) return;
    g.w = (int)((long long)g.w * s->kv_used / s->kv_total);
    SDL_SetRenderDrawColor(a->renderer, GAUGE_FG.r, GAUGE_FG.g, GAUGE_FG.b, 255);
    SDL_RenderFillRect(a->renderer, &g);
}

/* One shown field, its separator included, at x; the x after it. */
static int draw_field(app *a, stats_bar *s, int i, int first, int x, SDL_Rect b)
{
    const bar_field *f = &s->field[i];
    char buf[sizeof f->text + 8];
    snprintf(buf, sizeof buf, "%s%s", first ? "" : f->sep, f->text);
    size_t len = strlen(buf);
    text_tex_set(a->renderer, &a->small, &s->tex[i], buf, len, f->alert ? ALERT : LIGHT);
    text_tex_draw(a->renderer, &s->tex[i], x, b.y + (b.h - a->small.height) / 2);
    int w = font_width(&a->small, buf, len);
    if (s->tex[i].w > w) w = s->tex[i].w; /* what was drawn, overhangs included */
    if (f->gauge) draw_gauge(a, s, x + w + BAR_GAUGE_GAP, b), w += BAR_GAUGE_GAP + BAR_GAUGE_W;
    return x + w;
}

void stats_bar_draw(app *a, SDL_Rect b)
{
    stats_bar *s = &a->ui.bar;
    SDL_SetRenderDrawColor(a->renderer, BAR_BG.r, BAR_BG.g, BAR_BG.b, 255);
    SDL_RenderFillRect(a->renderer, &b);
    if (a->now_ms - s->updated_ms >= 250.0 || s->n == 0) {
        make_fields(a, s);
        s->updated_ms = a->now_ms;
        s->kv_used = a->engine_stats.kv_blocks_used; /* the gauge shows what the text says */
        s->kv_total = a->engine_stats.kv_blocks_total;
    }
    stats_bar_fit(s->field, s->n, b.w - 2 * BAR_MARGIN, bar_text_width, &a->small, s->shown);
    SDL_Rect clip = {b.x + BAR_MARGIN, b.y, b.w - 2 * BAR_MARGIN, b.h};
    SDL_RenderSetClipRect(a->renderer, &clip); /* a window too narrow for one field */
    int x = clip.x, first = 1;
    s->n_shown = 0;
    for (int i = 0; i < s->n; i++) {
        if (!s->shown[i]) continue;
        x = draw_field(a, s, i, first, x, b);
        first = 0, s->n_shown++;
    }
    SDL_RenderSetClipRect(a->renderer, NULL);
    s->right_px = x;
}

void stats_bar_refresh_soon(stats_bar *s) { s->updated_ms = 0; }

void stats_bar_free(stats_bar *s)
{
    for (int i = 0; i < BAR_FIELDS; i++) text_tex_free(&s->tex[i]);
    *s = (stats_bar){0};
}
