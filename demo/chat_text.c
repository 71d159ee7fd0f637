/* chat_text.c — UTF-8 stepping and word wrapping (chat_text.h). */
#include "chat_text.h"

#include <stdlib.h>

static int is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

size_t utf8_next(const char *s, size_t len, size_t i)
{
    if (i >= len) return len;
    i++;
    while (i < len && is_cont((unsigned char)s[i])) i++;
    return i;
}

size_t utf8_prev(const char *s, size_t i)
{
    if (i == 0) return 0;
    i--;
    while (i > 0 && is_cont((unsigned char)s[i])) i--;
    return i;
}

uint32_t utf8_decode(const char *s, size_t len, size_t i, size_t *next)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned char c = u[i];
    int n = c < 0x80 ? 0 : c < 0xC0 ? -1 : c < 0xE0 ? 1 : c < 0xF0 ? 2 : c < 0xF8 ? 3 : -1;
    if (n < 0 || i + (size_t)n >= len + (n == 0)) {
        *next = i + 1;
        return n == 0 ? c : 0xFFFD;
    }
    uint32_t cp = n == 0 ? c : c & (0x3F >> n);
    for (int k = 1; k <= n; k++) {
        if (!is_cont(u[i + k])) {
            *next = i + 1;
            return 0xFFFD;
        }
        cp = cp << 6 | (u[i + k] & 0x3F);
    }
    *next = i + 1 + n;
    return cp;
}

size_t text_sanitize(char *dst, const char *src, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)src[i];
        if (c == '\t') dst[o++] = ' ';
        else if (c >= 0x20 || c == '\n') dst[o++] = (char)c;
    }
    return o;
}

/* Appends one line to the growing array; false when memory ran out. */
static int push_line(wrap_line **lines, int *cap, int n, size_t start, size_t end, int width)
{
    if (n == *cap) {
        int c = *cap ? 2 * *cap : 16;
        wrap_line *p = realloc(*lines, (size_t)c * sizeof *p);
        if (!p) return 0;
        *lines = p, *cap = c;
    }
    (*lines)[n] = (wrap_line){(uint32_t)start, (uint32_t)(end - start), width};
    return 1;
}

int wrap_text(const char *s, size_t len, int max_w, advance_fn adv, void *ctx, wrap_line **lines, int *cap)
{
    int n = 0;
    size_t start = 0, i = 0;
    size_t brk = 0; /* a space after which the line may break; 0 = none yet */
    int w = 0, w_brk = 0;
    while (i < len) {
        size_t next;
        uint32_t cp = utf8_decode(s, len, i, &next);
        if (cp == '\n') {
            if (!push_line(lines, cap, n++, start, i, w)) return -1;
            start = i = next, brk = 0, w = 0;
            continue;
        }
        int a = adv(ctx, cp);
        if (w + a > max_w && i > start && cp != ' ') {
            /* Break after the last space when there is one, else inside the word. */
            size_t end = brk > start ? brk : i;
            int ew = brk > start ? w_brk : w;
            if (!push_line(lines, cap, n++, start, end, ew)) return -1;
            start = brk > start ? brk + 1 : i;
            /* Re-measure what moves to the new line (the start of the long word). */
            w = 0;
            for (size_t k = start; k < i;) {
                size_t kn;
                w += adv(ctx, utf8_decode(s, len, k, &kn));
                k = kn;
            }
            brk = 0;
        }
        if (cp == ' ') brk = i, w_brk = w;
        w += a;
        i = next;
    }
    if (!push_line(lines, cap, n++, start, len, w)) return -1;
    return n;
}
