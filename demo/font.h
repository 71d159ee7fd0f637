/* font.h — the font the demo draws with: where it is found, glyph advances for word
 * wrapping, and text rendered once into textures that are kept while the text stays. */
#ifndef FONT_H
#define FONT_H

#include <SDL.h>
#include <SDL_ttf.h>
#include <stdint.h>

/* Finds a TrueType font: `given` when not NULL (it must open), else what fc-match
 * answers for DejaVu Sans, else common paths. Writes the path to buf and returns buf,
 * or returns NULL with the reason in buf. TTF_Init must have run. */
const char *font_find(const char *given, char *buf, size_t cap);

/* Fonts that draw what the main one lacks, tried in this order (font_fallback.c). */
enum { FALLBACK_CJK, FALLBACK_EMOJI, FALLBACKS };

typedef struct font {
    TTF_Font *ttf;
    TTF_Font *fallback[FALLBACKS]; /* NULL where none was found */
    float scale[FALLBACKS];        /* a bitmap font (emoji) drawn down to the line's height */
    int px, height, ascent;
    int16_t *advance;   /* per code point of the Basic Multilingual Plane; 0 = not asked yet */
    uint8_t *source;    /* per BMP code point: 1 + the font that draws it (0 main); 0 = not asked */
} font;

/* 0 on success; -1 with the reason in err. */
int font_open(font *f, const char *path, int px, char *err, size_t err_cap);
void font_close(font *f);

/* ---- fallbacks (font_fallback.c) ---- */

/* Finds the fallback font of kind k (FALLBACK_CJK: Droid Sans Fallback, Noto Sans CJK, ...;
 * FALLBACK_EMOJI: Noto Color Emoji) by path: writes it to buf and returns buf, or returns
 * NULL with a message saying what to install in buf. TTF_Init must have run. */
const char *font_find_fallback(int k, char *buf, size_t cap);
/* Adds fallback k to f from path; 0 on success. */
int font_add_fallback(font *f, int k, const char *path);
/* The font that draws cp: the emoji font for a pictograph it has (U+1F000..U+1FAFF),
 * else f->ttf when it has the glyph (or no fallback has it), else the first fallback
 * that has it; *k gets its index (-1 for the main font). */
TTF_Font *font_source(font *f, uint32_t cp, int *k);
/* Renders s (NUL-terminated), its characters each in the font that has them, into a new
 * surface; NULL on failure. */
SDL_Surface *font_render(font *f, const char *s, size_t len, SDL_Color c);
/* The pen advance of one code point in pixels (kerning is off, so widths add up). */
int font_advance(font *f, uint32_t cp);
/* font_advance with a void * for wrap_text. */
int font_advance_cb(void *f, uint32_t cp);
int font_width(font *f, const char *s, size_t len);
/* How many bytes of s[0..len) fit max_w px, whole code points only. */
size_t font_fit(font *f, const char *s, size_t len, int max_w);

/* A piece of text kept as a texture: text_tex_set renders only when the text or colour
 * changed, so a frame mostly copies textures. */
typedef struct text_tex {
    char *str;
    size_t len;
    SDL_Color color;
    SDL_Texture *tex;   /* NULL for empty text */
    int w, h;
} text_tex;

/* 0 on success (also for empty text), -1 when rendering failed. */
int text_tex_set(SDL_Renderer *r, font *f, text_tex *t, const char *s, size_t len, SDL_Color c);
void text_tex_draw(SDL_Renderer *r, const text_tex *t, int x, int y);
void text_tex_free(text_tex *t);

#endif
