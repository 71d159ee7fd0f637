/* strbuf.h — a growing NUL-terminated string for text the library writes (grammars made
 * from JSON Schemas). Appends never fail visibly: out of memory sets oom and later
 * appends do nothing, so a writer checks once at the end. Zero-initialised is empty. */
#ifndef EMBER_STRBUF_H
#define EMBER_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h" /* EMBER_PRINTF */

typedef struct ember_sbuf {
    char *s;     /* NULL until the first append; the caller frees it (ember_free) */
    size_t len, cap;
    bool oom;
} ember_sbuf;

void ember_sbuf_add(ember_sbuf *b, const char *s, size_t n);
void ember_sbuf_puts(ember_sbuf *b, const char *s);
void ember_sbuf_printf(ember_sbuf *b, const char *fmt, ...) EMBER_PRINTF(2, 3);
/* Empties b, keeping its memory. */
void ember_sbuf_clear(ember_sbuf *b);
/* Hands the text over (NULL when out of memory; "" when empty) and empties b. */
char *ember_sbuf_take(ember_sbuf *b);

#endif
