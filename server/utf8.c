/* utf8.c — see utf8.h. The decoding follows Unicode's "maximal subpart" practice (chapter
 * 3.9), so that one bad byte costs one U+FFFD and a cut character one too. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

#define REPLACEMENT "\xef\xbf\xbd"

/* The length of the valid character at s[0..n), or 0 when it is not one; then *part is
 * the length of its ill-formed subpart (at least 1) and *cut says the bytes ran out
 * before the character was ill-formed. */
static size_t char_len(const unsigned char *s, size_t n, size_t *part, bool *cut)
{
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t need;
    *part = 1, *cut = false;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c >= 0xE0 && c <= 0xEF) need = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) need = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else return 0;
    for (size_t i = 1; i < need; i++) {
        if (i >= n) return *cut = true, 0;
        if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xBF)) return 0;
        *part = i + 1;
    }
    return need;
}

/* Whether s[0..n) is valid; *bad counts the replacements it needs. */
static bool valid(const unsigned char *s, size_t n, size_t *bad)
{
    size_t part;
    bool cut;
    *bad = 0;
    for (size_t i = 0; i < n;) {
        size_t k = char_len(s + i, n - i, &part, &cut);
        if (!k) (*bad)++;
        i += k ? k : part;
    }
    return *bad == 0;
}

char *srv_utf8_valid(char *s)
{
    if (!s) return NULL;
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s), bad, part, at = 0;
    bool cut;
    if (valid(u, n, &bad)) return s;
    char *out = malloc(n + 3 * bad + 1);
    for (size_t i = 0; out && i < n;) {
        size_t k = char_len(u + i, n - i, &part, &cut);
        if (k) memcpy(out + at, s + i, k), at += k, i += k;
        else memcpy(out + at, REPLACEMENT, 3), at += 3, i += part;
    }
    if (out) out[at] = 0;
    free(s);
    return out;
}

size_t srv_utf8_whole(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = n > 3 ? n - 3 : 0, part;
    bool cut;
    /* Only a character's first byte can begin a held-back tail: find the last one within
     * the final three bytes and see whether the bytes ran out inside it. */
    for (size_t k = n; k > i; k--)
        if ((u[k - 1] & 0xC0) != 0x80) {
            return !char_len(u + k - 1, n - (k - 1), &part, &cut) && cut ? k - 1 : n;
        }
    return n;
}
