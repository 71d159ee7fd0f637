/* chat_ui.c — layout and drawing (chat_ui.h). Text is drawn from cached textures: a
 * message keeps one texture per wrapped line and re-renders only the lines that changed,
 * so a streamed token costs one line and a frame is mostly texture copies. */
#include "chat_ui.h"
#include "stats_bar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARGIN 10     /* between the panel's edge and the bubbles */
#define PAD 8         /* inside a bubble */
#define GAP 8         /* between bubbles */
#define INDENT 48     /* user bubbles are right-aligned, assistant ones left: the other side keeps this free */

static const SDL_Color BG = {22, 24, 30, 255};          /* panel background */
static const SDL_Color BAR_BG = {30, 33, 42, 255};
static const SDL_Color TITLE_BG = {32, 35, 44, 255};
static const SDL_Color DIVIDER = {48, 52, 64, 255};
static const SDL_Color ACCENT = {96, 150, 255, 255};
static const SDL_Color DIM = {125, 132, 150, 255};
static const SDL_Color LIGHT = {215, 220, 230, 255};
static const SDL_Color USER_BG = {38, 52, 82, 255};
static const SDL_Color USER_FG = {175, 205, 255, 255};      /* bluish: the test tells user text by it */
static const SDL_Color REPLY_BG = {34, 37, 46, 255};
static const SDL_Color REPLY_FG = {244, 222, 180, 255};     /* warm: the test tells replies by it */
static const SDL_Color SYSTEM_FG = {130, 138, 155, 255};
static const SDL_Color NOTE_FG = {255, 128, 110, 255};
static const SDL_Color INFO_FG = {150, 160, 178, 255};     /* grey-blue, not warm nor blue enough to count as text */
static const SDL_Color FLASH_BG = {60, 92, 60, 255};
static const SDL_Color STOP_BG = {150, 50, 50, 255};
static const SDL_Color KV_BG = {50, 55, 66, 255};

static void fill(SDL_Renderer *r, SDL_Rect rc, SDL_Color c)
{
    SDL_SetRenderDrawColor(r, c.r, c.g, c.b, c.a);
    SDL_RenderFillRect(r, &rc);
}

static void text_at(app *a, font *f, text_tex *t, const char *s, SDL_Color c, int x, int y)
{
    text_tex_set(a->renderer, f, t, s, strlen(s), c);
    text_tex_draw(a->renderer, t, x, y);
}

void ui_layout(int w, int h, int n, layout *l)
{
    memset(l, 0, sizeof *l);
    l->n = n;
    l->stats = (SDL_Rect){0, 0, w, UI_STATS_H};
    l->input = (SDL_Rect){0, h - UI_INPUT_H, w, UI_INPUT_H};
    int top = UI_STATS_H, ph = h - UI_STATS_H - UI_INPUT_H;
    for (int i = 0; i < n; i++) {
        int x0 = i * w / n, x1 = (i + 1) * w / n;
        l->panel[i] = (SDL_Rect){x0, top, x1 - x0, ph};
        l->title[i] = (SDL_Rect){x0, top, x1 - x0, UI_TITLE_H};
        l->messages[i] = (SDL_Rect){x0, top + UI_TITLE_H, x1 - x0, ph - UI_TITLE_H};
        l->stop[i] = (SDL_Rect){x1 - 64, top + 5, 56, UI_TITLE_H - 10};
    }
}

/* ---- messages ----------------------------------------------------------------------- */

static SDL_Color fg_of(msg_role r)
{
    switch (r) {
    case MSG_USER: return USER_FG;
    case MSG_ASSISTANT: return REPLY_FG;
    case MSG_NOTE: return NOTE_FG;
    case MSG_INFO: return INFO_FG;
    default: return SYSTEM_FG;
    }
}

/* The widest a role's text may be in a panel of width w. */
static int wrap_width(msg_role r, int w)
{
    int bubble = r == MSG_USER || r == MSG_ASSISTANT;
    int max = w - 2 * MARGIN - (bubble ? 2 * PAD + INDENT : 0);
    return max > 40 ? max : 40;
}

/* Re-wraps a message whose text or panel width changed; textures of unchanged lines stay
 * (text_tex_set compares). */
static void wrap_message(app *a, message *m, int panel_w)
{
    int ww = wrap_width(m->role, panel_w);
    if (m->wrapped_version == m->version && m->wrapped_width == ww && m->lines) return;
    int n = wrap_text(m->text ? m->text : "", m->len, ww, font_advance_cb, &a->body, &m->lines, &m->cap_lines);
    if (n < 0) return;
    if (n > m->cap_tex) {
        text_tex *t = realloc(m->line_tex, (size_t)n * sizeof *t);
        if (!t) return;
        memset(t + m->cap_tex, 0, (size_t)(n - m->cap_tex) * sizeof *t);
        m->line_tex = t, m->cap_tex = n;
    }
    for (int i = n; i < m->n_lines; i++) text_tex_free(&m->line_tex[i]);
    m->n_lines = n;
    int widest = 0;
    for (int i = 0; i < n; i++)
        if (m->lines[i].width > widest) widest = m->lines[i].width;
    int bubble = m->role == MSG_USER || m->role == MSG_ASSISTANT;
    m->width = widest + (bubble ? 2 * PAD : 0) + 10;   /* + room for the streaming cursor */
    m->height = n * a->body.height + (bubble ? 2 * PAD : 0);
    m->wrapped_version = m->version;
    m->wrapped_width = ww;
}

/* Lays out a panel's messages top to bottom and applies the scroll rules: a panel that
 * follows stays at the bottom as replies grow; one scrolled up stays where it is. */
static void layout_messages(app *a, panel *p, const SDL_Rect *area)
{
    int y = GAP;
    for (int i = 0; i < p->n_msgs; i++) {
        message *m = &p->msgs[i];
        wrap_message(a, m, area->w);
        m->y = y;
        y += m->height + GAP;
    }
    p->content_h = y;
    int max = p->content_h > area->h ? p->content_h - area->h : 0;
    if (p->follow || p->scroll > max) p->scroll = max;
}

static void draw_message(app *a, int scroll, message *m, const SDL_Rect *area, int streaming)
{
    int bubble = m->role == MSG_USER || m->role == MSG_ASSISTANT;
    int top = area->y + m->y - scroll;
    if (top > area->y + area->h || top + m->height < area->y) return;
    int x = area->x + MARGIN;
    if (m->role == MSG_USER) x = area->x + area->w - MARGIN - m->width;
    int flash = m->flash_until_ms > a->now_ms;
    if (bubble || flash) {
        SDL_Color bg = flash ? FLASH_BG : m->role == MSG_USER ? USER_BG : REPLY_BG;
        fill(a->renderer, (SDL_Rect){x, top, m->width, m->height}, bg);
    }
    int tx = x + (bubble ? PAD : 0), ty = top + (bubble ? PAD : 0), lh = a->body.height;
    for (int i = 0; i < m->n_lines; i++, ty += lh) {
        if (ty + lh < area->y || ty > area->y + area->h) continue;
        const wrap_line *ln = &m->lines[i];
        text_tex_set(a->renderer, &a->body, &m->line_tex[i], m->text + ln->start, ln->len, fg_of(m->role));
        text_tex_draw(a->renderer, &m->line_tex[i], tx, ty);
    }
    if (streaming) { /* a block cursor after the last character */
        int cx = tx + (m->n_lines ? m->lines[m->n_lines - 1].width : 0) + 2;
        int on = ((int)(a->now_ms / 500) & 1) == 0; /* blinks on the redraw tick */
        if (on) fill(a->renderer, (SDL_Rect){cx, ty - lh + 3, 7, lh - 5}, REPLY_FG);
    }
    if (flash) { /* beside the bubble, on the side left free, so it hides no text */
        text_tex_set(a->renderer, &a->small, &a->ui.copied, "copied", 6, LIGHT);
        int lx = m->role == MSG_USER ? x - a->ui.copied.w - 6 : x + m->width + 6;
        if (lx < area->x || lx + a->ui.copied.w > area->x + area->w) lx = x + m->width - a->ui.copied.w - 4;
        text_tex_draw(a->renderer, &a->ui.copied, lx, top + 2);
    }
}

static void draw_scrollbar(app *a, const panel *p, const SDL_Rect *area)
{
    if (p->content_h <= area->h) return;
    int h = area->h * area->h / p->content_h;
    if (h < 20) h = 20;
    int y = area->y + (area->h - h) * p->scroll / (p->content_h - area->h);
    fill(a->renderer, (SDL_Rect){area->x + area->w - 5, y, 3, h}, DIVIDER);
}

/* ---- panels ------------------------------------------------------------------------------ */

/* The name as far as it fits max_w px, ending in an ellipsis when cut: a long name in a
 * narrow panel must not run into the next panel or under the Stop button. */
static void title_text(font *f, const char *name, int max_w, char *buf, size_t cap)
{
    static const char ellipsis[] = "\xE2\x80\xA6";
    size_t len = strlen(name);
    if (font_width(f, name, len) <= max_w) {
        snprintf(buf, cap, "%s", name);
        return;
    }
    int room = max_w - font_width(f, ellipsis, sizeof ellipsis - 1);
    size_t keep = room > 0 ? font_fit(f, name, len, room) : 0;
    while (keep > 0 && name[keep - 1] == ' ') keep--;
    snprintf(buf, cap, "%.*s%s", (int)keep, name, ellipsis);
}

static void draw_title(app *a, panel *p, const layout *l, int i)
{
    SDL_Rect t = l->title[i];
    int focused = i == a->focus;
    fill(a->renderer, t, TITLE_BG);
    if (focused) fill(a->renderer, (SDL_Rect){t.x, t.y + t.h - 2, t.w, 2}, ACCENT);
    int x0 = t.x + MARGIN, right = p->busy ? l->stop[i].x - 8 : t.x + t.w - MARGIN;
    char name[160], buf[160];
    title_text(&a->body, p->who->name, right - x0, name, sizeof name);
    text_at(a, &a->body, &p->title, name, focused ? ACCENT : LIGHT, x0, t.y + (t.h - a->body.height) / 2);
    p->title_x1 = x0 + font_width(&a->body, name, strlen(name));
    if (p->busy) snprintf(buf, sizeof buf, "%.1f tok/s", p->meter.rate);
    else if (p->last_tok_s > 0)
        snprintf(buf, sizeof buf, "last %.0f tok/s, TTFT %.0f ms", p->last_tok_s, p->last_ttft_ms);
    else buf[0] = 0;
    text_tex_set(a->renderer, &a->small, &p->status, buf, strlen(buf), DIM);
    p->status_x0 = p->status_x1 = 0;
    if (buf[0] && right - p->status.w >= p->title_x1 + 8) { /* only beside the whole name */
        p->status_x0 = right - p->status.w, p->status_x1 = right;
        text_tex_draw(a->renderer, &p->status, p->status_x0, t.y + (t.h - a->small.height) / 2);
    }
    if (p->busy) {
        SDL_Rect s = l->stop[i];
        fill(a->renderer, s, STOP_BG);
        text_tex_set(a->renderer, &a->small, &p->stop, "Stop", 4, LIGHT);
        text_tex_draw(a->renderer, &p->stop, s.x + (s.w - p->stop.w) / 2, s.y + (s.h - p->stop.h) / 2);
    }
}

static void draw_panel(app *a, const layout *l, int i)
{
    panel *p = &a->panels[i];
    SDL_Rect area = l->messages[i];
    fill(a->renderer, l->panel[i], BG);
    draw_title(a, p, l, i);
    layout_messages(a, p, &area);
    SDL_RenderSetClipRect(a->renderer, &area);
    for (int k = 0; k < p->n_msgs; k++)
        draw_message(a, p->scroll, &p->msgs[k], &area, p->busy && k == p->reply_msg);
    draw_scrollbar(a, p, &area);
    SDL_RenderSetClipRect(a->renderer, NULL);
    if (i > 0) fill(a->renderer, (SDL_Rect){l->panel[i].x, l->panel[i].y, 1, l->panel[i].h}, DIVIDER);
}

/* ---- the input line ------------------------------------------------------------------------- */

/* The characters of s that show between pixels scroll and scroll + width: only they are
 * rendered, so that a pasted page does not make a texture wider than the renderer allows.
 * Returns the x of the first, which may start left of scroll. */
static int visible_range(font *f, const char *s, size_t len, int scroll, int width, size_t *from, size_t *to)
{
    int x = 0, x0;
    size_t i = 0, next;
    for (; i < len; i = next) {
        int adv = font_advance(f, utf8_decode(s, len, i, &next));
        if (x + adv > scroll) break;
        x += adv;
    }
    *from = i, x0 = x;
    for (; i < len && x < scroll + width; i = next) x += font_advance(f, utf8_decode(s, len, i, &next));
    *to = i;
    return x0;
}

static void draw_input(app *a, const layout *l)
{
    SDL_Rect b = l->input;
    fill(a->renderer, b, BAR_BG);
    fill(a->renderer, (SDL_Rect){b.x, b.y, b.w, 1}, DIVIDER);
    char label[96];
    snprintf(label, sizeof label, "to %s >", a->panels[a->focus].who->name);
    int ty = b.y + (b.h - a->body.height) / 2;
    text_at(a, &a->body, &a->ui.input_label, label, ACCENT, b.x + MARGIN, ty);
    SDL_Rect field = {b.x + MARGIN + a->ui.input_label.w + 10, b.y + 6, 0, b.h - 12};
    field.w = b.x + b.w - MARGIN - field.x;
    fill(a->renderer, field, BG);
    int fx = field.x + 6, fw = field.w - 12;
    input_line *in = &a->input;
    if (in->len == 0)
        text_at(a, &a->body, &a->ui.placeholder,
                "Type a message: Enter sends, Tab switches panel, Esc stops a reply, Up/Down recall", DIM, fx, ty);
    /* Keep the cursor in view: scroll the text left or right as it moves. */
    int cx = font_width(&a->body, in->buf, in->cursor);
    if (cx - a->ui.input_scroll > fw - 4) a->ui.input_scroll = cx - fw + 4;
    if (cx < a->ui.input_scroll) a->ui.input_scroll = cx;
    SDL_Rect clip = {fx, field.y, fw, field.h};
    SDL_RenderSetClipRect(a->renderer, &clip);
    if (in->len) {
        size_t from, to;
        int x0 = visible_range(&a->body, in->buf, in->len, a->ui.input_scroll, fw, &from, &to);
        text_tex_set(a->renderer, &a->body, &a->ui.input_text, in->buf + from, to - from, LIGHT);
        text_tex_draw(a->renderer, &a->ui.input_text, fx + x0 - a->ui.input_scroll, ty);
    }
    if (((int)(a->now_ms / 500) & 1) == 0)
        fill(a->renderer, (SDL_Rect){fx + cx - a->ui.input_scroll, ty + 1, 2, a->body.height - 2}, LIGHT);
    SDL_RenderSetClipRect(a->renderer, NULL);
}

/* ---- loading -------------------------------------------------------------------------------- */

static void draw_loading(app *a)
{
    int w = 0, h = 0;
    SDL_GetRendererOutputSize(a->renderer, &w, &h);
    SDL_Rect box = {w / 2 - 260, h / 2 - 50, 520, 100};
    if (a->state == LOAD_FAILED) {
        message *m = &a->ui.banner; /* the box grows with the text */
        wrap_message(a, m, box.w);
        box.h = m->height + 20;
        fill(a->renderer, box, TITLE_BG);
        SDL_Rect area = {box.x, box.y + 10, box.w, box.h - 10};
        m->y = 0;
        draw_message(a, 0, m, &area, 0);
        return;
    }
    fill(a->renderer, box, TITLE_BG);
    char buf[160];
    const char *base = strrchr(a->opt.model, '/');
    snprintf(buf, sizeof buf, "Loading %s ... %.0f%%", base ? base + 1 : a->opt.model,
             100.0f * loader_progress(&a->load));
    text_at(a, &a->body, &a->ui.loading, buf, LIGHT, box.x + 20, box.y + 18);
    SDL_Rect bar = {box.x + 20, box.y + 58, box.w - 40, 16};
    fill(a->renderer, bar, KV_BG);
    bar.w = (int)((float)bar.w * loader_progress(&a->load));
    fill(a->renderer, bar, ACCENT);
}

void ui_draw(app *a, const layout *l)
{
    SDL_SetRenderDrawColor(a->renderer, BG.r, BG.g, BG.b, 255);
    SDL_RenderClear(a->renderer);
    stats_bar_draw(a, l->stats);
    for (int i = 0; i < l->n; i++) draw_panel(a, l, i);
    draw_input(a, l);
    if (a->state != LOAD_READY) draw_loading(a);
}

int ui_message_at(const app *a, const layout *l, int i, int y)
{
    const panel *p = &a->panels[i];
    int cy = y - l->messages[i].y + p->scroll;
    for (int k = 0; k < p->n_msgs; k++)
        if (cy >= p->msgs[k].y && cy < p->msgs[k].y + p->msgs[k].height) return k;
    return -1;
}

void ui_scroll(app *a, const layout *l, int i, int dy)
{
    panel *p = &a->panels[i];
    int max = p->content_h > l->messages[i].h ? p->content_h - l->messages[i].h : 0;
    p->scroll += dy;
    if (p->scroll < 0) p->scroll = 0;
    if (p->scroll > max) p->scroll = max;
    p->follow = p->scroll >= max;
}

void ui_free(app *a)
{
    ui_cache *u = &a->ui;
    text_tex *all[] = {&u->input_label, &u->input_text, &u->placeholder, &u->loading, &u->copied};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) text_tex_free(all[i]);
    message_free(&u->banner);
    stats_bar_free(&u->bar);
}
