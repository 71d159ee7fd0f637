/* strbuf.c — ember_sbuf: doubling growth through the library's allocator. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "strbuf.h"

static bool room(ember_sbuf *b, size_t n)
{
    if (b->oom) return false;
    if (b->len + n + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *s = ember_realloc(b->s, cap);
    if (!s) return !(b->oom = true);
    b->s = s, b->cap = cap;
    return true;
}

void ember_sbuf_add(ember_sbuf *b, const char *s, size_t n)
{
    if (!room(b, n)) return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void ember_sbuf_puts(ember_sbuf *b, const char *s) { ember_sbuf_add(b, s, strlen(s)); }

void ember_sbuf_printf(ember_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !room(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void ember_sbuf_clear(ember_sbuf *b)
{
    b->len = 0;
    if (b->s) b->s[0] = 0;
}

char *ember_sbuf_take(ember_sbuf *b)
{
    char *s = b->oom ? NULL : b->s ? b->s : ember_strdup("");
    if (b->oom) ember_free(b->s);
    *b = (ember_sbuf){0};
    return s;
}
