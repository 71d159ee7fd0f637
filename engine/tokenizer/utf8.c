/* utf8.c — UTF-8 helpers for the tokenizers and the streaming detokenizer. */
#include "utf8.h"

size_t ember_utf8_len(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
               : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0 || len > n)
        return 1;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 1;
    return len;
}

/* Table 3-7 of the Unicode standard: how many continuation bytes a lead byte takes and
 * the range its first continuation byte must fall in (which rules out overlong forms,
 * surrogates and code points above U+10FFFF). Returns 0 for a byte that cannot lead. */
static int lead_info(unsigned char b, unsigned char *lo, unsigned char *hi)
{
    *lo = 0x80, *hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf)
        return 1;
    if (b >= 0xe0 && b <= 0xef) {
        if (b == 0xe0) *lo = 0xa0;
        if (b == 0xed) *hi = 0x9f;
        return 2;
    }
    if (b >= 0xf0 && b <= 0xf4) {
        if (b == 0xf0) *lo = 0x90;
        if (b == 0xf4) *hi = 0x8f;
        return 3;
    }
    return 0;
}

ember_utf8_result ember_utf8_decode(const unsigned char *s, size_t n, size_t *len, uint32_t *cp)
{
    if (s[0] < 0x80) {
        *len = 1, *cp = s[0];
        return EMBER_UTF8_OK;
    }
    unsigned char lo, hi;
    int need = lead_info(s[0], &lo, &hi);
    if (need == 0) {
        *len = 1;
        return EMBER_UTF8_INVALID;
    }
    uint32_t c = s[0] & (0x3f >> need);
    for (int i = 1; i <= need; i++) {
        if ((size_t)i >= n) {
            *len = n;
            return EMBER_UTF8_TRUNCATED;
        }
        if (s[i] < lo || s[i] > hi) {
            *len = (size_t)i;
            return EMBER_UTF8_INVALID;
        }
        c = (c << 6) | (s[i] & 0x3f);
        lo = 0x80, hi = 0xbf;
    }
    *len = (size_t)need + 1, *cp = c;
    return EMBER_UTF8_OK;
}

size_t ember_utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}
