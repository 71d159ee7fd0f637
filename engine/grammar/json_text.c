/* json_text.c — JSON's string escapes and value syntax, written as GBNF. */
#include <stdbool.h>
#include <string.h>

#include "json_text.h"

/* A code point inside a GBNF character class. */
static void class_char(ember_sbuf *out, uint32_t cp)
{
    bool alnum = (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    if (alnum) ember_sbuf_printf(out, "%c", (char)cp);
    else if (cp < 0x10000) ember_sbuf_printf(out, "\\u%04X", cp);
    else ember_sbuf_printf(out, "\\U%08X", cp);
}

static bool has(const uint32_t *r, uint32_t n, uint32_t cp)
{
    for (uint32_t i = 0; i < n; i++)
        if (cp >= r[2 * i] && cp <= r[2 * i + 1]) return true;
    return false;
}

/* The set's characters that JSON writes as themselves, as a class; false when none. */
static bool plain_class(ember_sbuf *out, const uint32_t *r, uint32_t n)
{
    size_t mark = out->len;
    bool any = false;
    ember_sbuf_puts(out, "[");
    for (uint32_t i = 0; i < n; i++) {
        uint32_t lo = r[2 * i] < 0x20 ? 0x20 : r[2 * i], hi = r[2 * i + 1];
        /* cut '"' (0x22) and '\' (0x5C) out of lo..hi */
        uint32_t cuts[3][2] = {{lo, hi < 0x21 ? hi : 0x21}, {lo < 0x23 ? 0x23 : lo, hi < 0x5B ? hi : 0x5B},
                               {lo < 0x5D ? 0x5D : lo, hi}};
        for (int k = 0; k < 3; k++) {
            if (cuts[k][0] > cuts[k][1] || cuts[k][0] < lo || cuts[k][1] > hi) continue;
            class_char(out, cuts[k][0]);
            if (cuts[k][1] > cuts[k][0]) ember_sbuf_puts(out, "-"), class_char(out, cuts[k][1]);
            any = true;
        }
    }
    ember_sbuf_puts(out, "]");
    if (!any) out->len = mark, out->s[mark] = 0;
    return any;
}

static const char HEX[] = "0123456789abcdef";

/* Control character c as JSON may escape it: its short form if it has one, and \u00XX. */
static void control(ember_sbuf *out, uint32_t c)
{
    static const char shorts[] = {['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};
    char s = c < sizeof shorts ? shorts[c] : 0;
    char hi = HEX[c >> 4], lo = HEX[c & 15];
    if (s) ember_sbuf_printf(out, "\"\\\\%c\" | ", s);
    if (lo >= 'a') ember_sbuf_printf(out, "\"\\\\u00%c\" [%c%c]", hi, lo, lo - 'a' + 'A');
    else ember_sbuf_printf(out, "\"\\\\u00%c%c\"", hi, lo);
}

void ember_jtext_chars(ember_sbuf *out, const uint32_t *r, uint32_t n)
{
    ember_sbuf_puts(out, "(");
    const char *sep = "";
    if (plain_class(out, r, n)) sep = " | ";
    if (has(r, n, '"')) ember_sbuf_printf(out, "%s\"\\\\\\\"\"", sep), sep = " | ";
    if (has(r, n, '\\')) ember_sbuf_printf(out, "%s\"\\\\\\\\\"", sep), sep = " | ";
    if (has(r, n, '/')) ember_sbuf_printf(out, "%s\"\\\\/\"", sep), sep = " | ";
    bool all = true;
    for (uint32_t c = 0; c < 0x20; c++) all &= has(r, n, c);
    if (all) ember_sbuf_printf(out, "%s\"\\\\\" ([bfnrt] | \"u00\" [01] [0-9a-fA-F])", sep);
    for (uint32_t c = 0; !all && c < 0x20; c++)
        if (has(r, n, c)) ember_sbuf_puts(out, sep), control(out, c), sep = " | ";
    ember_sbuf_puts(out, ")");
}

/* One character of JSON string text (already JSON-escaped) inside a GBNF literal. */
static void literal_byte(ember_sbuf *out, unsigned char c)
{
    if (c == '"' || c == '\\') ember_sbuf_printf(out, "\\%c", c);
    else if (c < 0x20 || c == 0x7F) ember_sbuf_printf(out, "\\x%02X", c);
    else ember_sbuf_add(out, (const char *)&c, 1);
}

void ember_jtext_string_content(ember_sbuf *out, const char *s, size_t n)
{
    static const char shorts[] = {['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') literal_byte(out, '\\'), literal_byte(out, c);
        else if (c < 0x20 && c < sizeof shorts && shorts[c]) literal_byte(out, '\\'), literal_byte(out, (unsigned char)shorts[c]);
        else if (c < 0x20) ember_sbuf_printf(out, "\\\\u00%c%c", HEX[c >> 4], HEX[c & 15]);
        else literal_byte(out, c);
    }
}

void ember_jtext_value(ember_sbuf *out, const ember_json *v)
{
    switch (v->kind) {
    case EJ_NULL: ember_sbuf_puts(out, "\"null\""); break;
    case EJ_TRUE: ember_sbuf_puts(out, "\"true\""); break;
    case EJ_FALSE: ember_sbuf_puts(out, "\"false\""); break;
    case EJ_NUMBER: ember_sbuf_printf(out, "\"%s\"", v->str); break;
    case EJ_STRING:
        ember_sbuf_puts(out, "\"\\\"");
        ember_jtext_string_content(out, v->str, v->len);
        ember_sbuf_puts(out, "\\\"\"");
        break;
    case EJ_ARRAY:
        ember_sbuf_puts(out, "\"[\" " EMBER_JSON_WS);
        for (uint32_t i = 0; i < v->n; i++) {
            if (i) ember_sbuf_puts(out, " \",\" " EMBER_JSON_WS);
            ember_sbuf_puts(out, " ");
            ember_jtext_value(out, &v->items[i]);
            ember_sbuf_puts(out, " " EMBER_JSON_WS);
        }
        ember_sbuf_puts(out, " \"]\"");
        break;
    case EJ_OBJECT:
        ember_sbuf_puts(out, "\"{\" " EMBER_JSON_WS);
        for (uint32_t i = 0; i < v->n; i++) {
            if (i) ember_sbuf_puts(out, " \",\" " EMBER_JSON_WS);
            ember_sbuf_puts(out, " \"\\\"");
            ember_jtext_string_content(out, v->keys[i], strlen(v->keys[i]));
            ember_sbuf_puts(out, "\\\"\" " EMBER_JSON_WS " \":\" " EMBER_JSON_WS " ");
            ember_jtext_value(out, &v->items[i]);
            ember_sbuf_puts(out, " " EMBER_JSON_WS);
        }
        ember_sbuf_puts(out, " \"}\"");
        break;
    }
}
