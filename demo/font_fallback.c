/* font_fallback.c — the fonts that draw what the main font lacks (font.h): CJK from Droid
 * Sans Fallback or Noto Sans CJK, emoji from Noto Color Emoji (SDL_ttf renders its colour
 * bitmaps since 2.0.18; they come at one fixed size, so they are drawn down to the line's
 * height). Found by path, as the main font's last resort is: fontconfig would answer with
 * some font for any pattern, and only a font that has the glyph helps. A line that mixes
 * fonts is rendered run by run into one surface. */
#include "font.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_text.h"

/* A glyph each kind must have: 中 and 😀. */
static const uint32_t PROBE[FALLBACKS] = {0x4E2D, 0x1F600};

static const char *const CJK_PATHS[] = {
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",       /* Debian: fonts-droid-fallback */
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",          /* Debian: fonts-noto-cjk */
    "/usr/share/fonts/google-droid-sans-fonts/DroidSansFallbackFull.ttf", /* Fedora */
    "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",               /* Arch */
    "/System/Library/Fonts/PingFang.ttc",
    "C:/Windows/Fonts/msyh.ttc",
    NULL,
};
static const char *const EMOJI_PATHS[] = {
    "/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf", /* Debian: fonts-noto-color-emoji */
    "/usr/share/fonts/noto/NotoColorEmoji.ttf",
    "/usr/share/fonts/google-noto-emoji/NotoColorEmoji.ttf",
    NULL,
};

static int provides(const char *path, uint32_t cp)
{
    TTF_Font *f = TTF_OpenFont(path, 12);
    if (!f) return 0;
    int ok = TTF_GlyphIsProvided32(f, cp) != 0;
    TTF_CloseFont(f);
    return ok;
}

const char *font_find_fallback(int k, char *buf, size_t cap)
{
    const char *const *paths = k == FALLBACK_CJK ? CJK_PATHS : EMOJI_PATHS;
    for (size_t i = 0; paths[i]; i++)
        if (provides(paths[i], PROBE[k])) {
            snprintf(buf, cap, "%s", paths[i]);
            return buf;
        }
    if (k == FALLBACK_CJK)
        snprintf(buf, cap, "no fallback font for Chinese, Japanese and Korean: they show as boxes "
                           "(install fonts-droid-fallback or fonts-noto-cjk)");
    else
        snprintf(buf, cap, "no emoji font: emoji show as boxes (install fonts-noto-color-emoji)");
    return NULL;
}

int font_add_fallback(font *f, int k, const char *path)
{
    TTF_Font *fb = TTF_OpenFont(path, f->px);
    if (!fb) return -1;
    TTF_SetFontKerning(fb, 0);
    if (f->fallback[k]) TTF_CloseFont(f->fallback[k]);
    f->fallback[k] = fb;
    /* A bitmap font (emoji) opens at its one size whatever was asked: draw it down. */
    int h = TTF_FontHeight(fb);
    f->scale[k] = h > f->height * 3 / 2 ? (float)f->height / (float)h : 1.0f;
    memset(f->advance, 0, 0x10000 * sizeof *f->advance); /* what was measured may change */
    memset(f->source, 0, 0x10000 * sizeof *f->source);
    return 0;
}

/* The pictographs that people expect in colour even where the main font has a
 * monochrome glyph of them (DejaVu Sans has the emoticons). */
static int is_emoji(uint32_t cp) { return cp >= 0x1F000 && cp <= 0x1FAFF; }

TTF_Font *font_source(font *f, uint32_t cp, int *k)
{
    int s = cp < 0x10000 ? f->source[cp] : 0;
    if (s == 0) {
        s = 1;
        if (is_emoji(cp) && f->fallback[FALLBACK_EMOJI] && TTF_GlyphIsProvided32(f->fallback[FALLBACK_EMOJI], cp))
            s = 2 + FALLBACK_EMOJI;
        else if (!TTF_GlyphIsProvided32(f->ttf, cp))
            for (int i = 0; i < FALLBACKS; i++)
                if (f->fallback[i] && TTF_GlyphIsProvided32(f->fallback[i], cp)) {
                    s = 2 + i;
                    break;
                }
        if (cp < 0x10000) f->source[cp] = (uint8_t)s;
    }
    *k = s - 2;
    return s == 1 ? f->ttf : f->fallback[s - 2];
}

/* The end of the run at s[i] drawn by one font; *k gets that font. */
static size_t run_end(font *f, const char *s, size_t len, size_t i, int *k)
{
    size_t next;
    font_source(f, utf8_decode(s, len, i, &next), k);
    while (next < len) {
        size_t after;
        int k2;
        font_source(f, utf8_decode(s, len, next, &after), &k2);
        if (k2 != *k) break;
        next = after;
    }
    return next;
}

/* Draws s[0..n) in font k at x of dst (the main font's baseline); its width by the
 * layout's advances, so the line is exactly as wide as wrapping measured it. */
static int draw_run(font *f, SDL_Surface *dst, const char *s, size_t n, int k, SDL_Color c, int x)
{
    TTF_Font *ttf = k < 0 ? f->ttf : f->fallback[k];
    float scale = k < 0 ? 1.0f : f->scale[k];
    char *z = malloc(n + 1);
    if (!z) return 0;
    memcpy(z, s, n);
    z[n] = 0;
    SDL_Surface *run = TTF_RenderUTF8_Blended(ttf, z, c);
    free(z);
    if (run) {
        SDL_Rect at = {x, f->ascent - (int)((float)TTF_FontAscent(ttf) * scale + 0.5f),
                       (int)((float)run->w * scale + 0.5f), (int)((float)run->h * scale + 0.5f)};
        SDL_SetSurfaceBlendMode(run, SDL_BLENDMODE_BLEND);
        if (scale == 1.0f) SDL_BlitSurface(run, NULL, dst, &at);
        else SDL_BlitScaled(run, NULL, dst, &at);
        SDL_FreeSurface(run);
    }
    return font_width(f, s, n);
}

static int one_font(font *f, const char *s, size_t len)
{
    int k;
    for (size_t i = 0, next; i < len; i = next) {
        font_source(f, utf8_decode(s, len, i, &next), &k);
        if (k >= 0) return 0;
    }
    return 1;
}

SDL_Surface *font_render(font *f, const char *s, size_t len, SDL_Color c)
{
    if (one_font(f, s, len)) return TTF_RenderUTF8_Blended(f->ttf, s, c);
    SDL_Surface *dst = SDL_CreateRGBSurfaceWithFormat(0, font_width(f, s, len) + 4, f->height, 32,
                                                      SDL_PIXELFORMAT_ARGB8888);
    if (!dst) return NULL;
    /* Transparent in the text's colour: blending a glyph's edge over it keeps the colour. */
    SDL_FillRect(dst, NULL, SDL_MapRGBA(dst->format, c.r, c.g, c.b, 0));
    int x = 0, k;
    for (size_t i = 0, end; i < len; i = end) {
        end = run_end(f, s, len, i, &k);
        x += draw_run(f, dst, s + i, end - i, k, c, x);
    }
    return dst;
}
