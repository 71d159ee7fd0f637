/* chat_text.h — UTF-8 stepping and word wrapping: pure text work, no SDL, so that the
 * rules (where a line breaks, what a cursor step skips) can be read in one place. */
#ifndef CHAT_TEXT_H
#define CHAT_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* The byte index of the code point after / before the one at i (clamped to [0, len]). */
size_t utf8_next(const char *s, size_t len, size_t i);
size_t utf8_prev(const char *s, size_t i);
/* Decodes the code point at s[i]; *next gets the index after it. Malformed bytes decode
 * as U+FFFD one byte at a time, so that wrapping never stalls on bad input. */
uint32_t utf8_decode(const char *s, size_t len, size_t i, size_t *next);

/* Copies src[0..len) to dst, dropping control characters except '\n' and turning tabs
 * into spaces (a font has no glyph for them). dst needs len bytes; returns bytes written. */
size_t text_sanitize(char *dst, const char *src, size_t len);

/* One wrapped line: a byte range of the text (without its break) and its width in px. */
typedef struct wrap_line {
    uint32_t start, len;
    int width;
} wrap_line;

/* The width of one code point in pixels (the font's advance). */
typedef int (*advance_fn)(void *ctx, uint32_t cp);

/* Word-wraps s[0..len) to lines of at most max_w pixels: breaks at '\n', else after the
 * last space that fits, else (a word longer than the line) inside the word. Grows
 * *lines / *cap with realloc; returns the number of lines (at least 1), or -1 when
 * memory ran out. */
int wrap_text(const char *s, size_t len, int max_w, advance_fn adv, void *ctx, wrap_line **lines, int *cap);

#endif
