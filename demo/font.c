/* font.c — finding, measuring and rendering text (font.h). */
#include "font.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_text.h"

/* Whether SDL_ttf can open path as a font. */
static int usable(const char *path)
{
    TTF_Font *f = TTF_OpenFont(path, 12);
    if (!f) return 0;
    TTF_CloseFont(f);
    return 1;
}

/* Asks fontconfig; fc-match always answers something, so the answer is checked. */
static int from_fc_match(const char *pattern, char *buf, size_t cap)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "fc-match -f '%%{file}' '%s' 2>/dev/null", pattern);
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    size_t n = fread(buf, 1, cap - 1, p);
    pclose(p);
    buf[n] = 0;
    return n > 0 && usable(buf);
}

const char *font_find(const char *given, char *buf, size_t cap)
{
    if (given) {
        if (usable(given)) {
            snprintf(buf, cap, "%s", given);
            return buf;
        }
        snprintf(buf, cap, "cannot open the font '%s': %s", given, TTF_GetError());
        return NULL;
    }
    static const char *const patterns[] = {"DejaVu Sans", "sans-serif"};
    for (size_t i = 0; i < sizeof patterns / sizeof *patterns; i++)
        if (from_fc_match(patterns[i], buf, cap)) return buf;
    static const char *const paths[] = {
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
        "/usr/share/fonts/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
        "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
        "/System/Library/Fonts/Helvetica.ttc",
        "C:/Windows/Fonts/arial.ttf",
    };
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
        if (usable(paths[i])) {
            snprintf(buf, cap, "%s", paths[i]);
            return buf;
        }
    snprintf(buf, cap, "no TrueType font found (fc-match, /usr/share/fonts/truetype/dejavu/...); "
                       "install fonts-dejavu-core or pass --font FILE.ttf");
    return NULL;
}

int font_open(font *f, const char *path, int px, char *err, size_t err_cap)
{
    *f = (font){0};
    f->ttf = TTF_OpenFont(path, px);
    f->advance = calloc(0x10000, sizeof *f->advance);
    f->source = calloc(0x10000, sizeof *f->source);
    if (!f->ttf || !f->advance || !f->source) {
        snprintf(err, err_cap, "cannot open the font '%s': %s", path, f->ttf ? "out of memory" : TTF_GetError());
        font_close(f);
        return -1;
    }
    /* Wrapping adds up advances; without kerning the rendered line is exactly that wide. */
    TTF_SetFontKerning(f->ttf, 0);
    f->px = px;
    f->height = TTF_FontHeight(f->ttf);
    f->ascent = TTF_FontAscent(f->ttf);
    return 0;
}

void font_close(font *f)
{
    if (f->ttf) TTF_CloseFont(f->ttf);
    for (int k = 0; k < FALLBACKS; k++)
        if (f->fallback[k]) TTF_CloseFont(f->fallback[k]);
    free(f->advance);
    free(f->source);
    *f = (font){0};
}

int font_advance(font *f, uint32_t cp)
{
    if (cp < 0x10000 && f->advance[cp]) return f->advance[cp] - 1;
    int adv = 0, k;
    TTF_Font *src = font_source(f, cp, &k);
    if (TTF_GlyphMetrics32(src, cp, NULL, NULL, NULL, NULL, &adv) != 0) adv = 0;
    if (k >= 0) adv = (int)((float)adv * f->scale[k] + 0.5f);
    if (cp < 0x10000) f->advance[cp] = (int16_t)(adv + 1);
    return adv;
}

int font_advance_cb(void *f, uint32_t cp) { return font_advance(f, cp); }

int font_width(font *f, const char *s, size_t len)
{
    int w = 0;
    for (size_t i = 0, next; i < len; i = next) w += font_advance(f, utf8_decode(s, len, i, &next));
    return w;
}

size_t font_fit(font *f, const char *s, size_t len, int max_w)
{
    int w = 0;
    size_t i = 0, next;
    for (; i < len; i = next) {
        int adv = font_advance(f, utf8_decode(s, len, i, &next));
        if (w + adv > max_w) break;
        w += adv;
    }
    return i;
}

static int same(const text_tex *t, const char *s, size_t len, SDL_Color c)
{
    return t->len == len && (len == 0 || (t->str && memcmp(t->str, s, len) == 0)) && t->color.r == c.r &&
           t->color.g == c.g && t->color.b == c.b && t->color.a == c.a;
}

int text_tex_set(SDL_Renderer *r, font *f, text_tex *t, const char *s, size_t len, SDL_Color c)
{
    if (same(t, s, len, c) && (t->tex || len == 0)) return 0;
    text_tex_free(t);
    t->color = c;
    if (len == 0) return 0;
    t->str = malloc(len + 1);
    if (!t->str) return -1;
    memcpy(t->str, s, len);
    t->str[len] = 0;
    t->len = len;
    SDL_Surface *surf = font_render(f, t->str, len, c);
    if (!surf) return -1;
    t->tex = SDL_CreateTextureFromSurface(r, surf);
    t->w = surf->w, t->h = surf->h;
    SDL_FreeSurface(surf);
    return t->tex ? 0 : -1;
}

void text_tex_draw(SDL_Renderer *r, const text_tex *t, int x, int y)
{
    if (!t->tex) return;
    SDL_Rect dst = {x, y, t->w, t->h};
    SDL_RenderCopy(r, t->tex, NULL, &dst);
}

void text_tex_free(text_tex *t)
{
    if (t->tex) SDL_DestroyTexture(t->tex);
    free(t->str);
    *t = (text_tex){0};
}
