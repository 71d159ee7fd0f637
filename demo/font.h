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

typedef struct font {
    TTF_Font *ttf;
    int height, ascent;
    int16_t *advance;   /* per code point of the Basic Multilingual Plane; 0 = not asked yet */
} font;

/* 0 on success; -1 with the reason in err. */
int font_open(font *f, const char *path, int px, char *err, size_t err_cap);
void font_close(font *f);
/* The pen advance of one code point in pixels (kerning is off, so widths add up). */
int font_advance(font *f, uint32_t cp);
/* font_advance with a void * for wrap_text. */
int font_advance_cb(void *f, uint32_t cp);
int font_width(font *f, const char *s, size_t len);

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
