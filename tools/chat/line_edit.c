/* line_edit.c — see line_edit.h. Characters are UTF-8: the cursor moves over a whole
 * character, and one character is taken to fill one column (wide CJK characters
 * misplace the cursor, as in many small editors). */
#include "line_edit.h"

#include <stdlib.h>
#include <string.h>

#include "platform/os_term.h"

static bool is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

static bool reserve(line_edit *e, size_t need)
{
    if (need < e->cap) return true;
    size_t cap = e->cap ? e->cap : 64;
    while (cap <= need) cap *= 2;
    char *b = realloc(e->buf, cap);
    if (!b) return false;
    e->buf = b, e->cap = cap;
    return true;
}

/* Replaces the line with s, the cursor at its end. */
static bool set_line(line_edit *e, const char *s)
{
    size_t n = strlen(s);
    if (!reserve(e, n + 1)) return false;
    memmove(e->buf, s, n + 1);
    e->len = e->cur = n;
    return true;
}

static bool insert(line_edit *e, unsigned char c)
{
    if (!reserve(e, e->len + 2)) return false;
    memmove(e->buf + e->cur + 1, e->buf + e->cur, e->len - e->cur + 1);
    e->buf[e->cur++] = (char)c;
    e->len++;
    return true;
}

static size_t prev_char(const line_edit *e, size_t i)
{
    while (i > 0 && is_cont((unsigned char)e->buf[--i])) {}
    return i;
}

static size_t next_char(const line_edit *e, size_t i)
{
    if (i < e->len) i++;
    while (i < e->len && is_cont((unsigned char)e->buf[i])) i++;
    return i;
}

/* Removes the bytes [from, to). */
static void cut(line_edit *e, size_t from, size_t to)
{
    memmove(e->buf + from, e->buf + to, e->len - to + 1);
    e->len -= to - from;
    e->cur = from;
}

/* Up (-1) or Down (+1) through the history; the line being typed is kept aside. */
static bool browse(line_edit *e, int dir)
{
    if ((dir < 0 && e->at == 0) || (dir > 0 && e->at >= e->n_hist)) return true;
    if (e->at == e->n_hist) {
        free(e->draft);
        if (!(e->draft = strdup(e->buf))) return false;
    }
    e->at = dir < 0 ? e->at - 1 : e->at + 1;
    return set_line(e, e->at == e->n_hist ? e->draft : e->hist[e->at]);
}

/* A complete escape sequence's action: arrows, Home, End, Delete (ESC [ x, ESC O x,
 * ESC [ n ~); others are ignored. */
static bool escape(line_edit *e)
{
    const char *s = e->esc + 1;
    if (!strcmp(s, "[D") || !strcmp(s, "OD")) e->cur = prev_char(e, e->cur);
    else if (!strcmp(s, "[C") || !strcmp(s, "OC")) e->cur = next_char(e, e->cur);
    else if (!strcmp(s, "[A") || !strcmp(s, "OA")) return browse(e, -1);
    else if (!strcmp(s, "[B") || !strcmp(s, "OB")) return browse(e, +1);
    else if (!strcmp(s, "[H") || !strcmp(s, "OH") || !strcmp(s, "[1~") || !strcmp(s, "[7~")) e->cur = 0;
    else if (!strcmp(s, "[F") || !strcmp(s, "OF") || !strcmp(s, "[4~") || !strcmp(s, "[8~")) e->cur = e->len;
    else if (!strcmp(s, "[3~") && e->cur < e->len) cut(e, e->cur, next_char(e, e->cur));
    return true;
}

/* Collects an escape sequence's bytes; runs it once its final byte came. */
static bool escape_byte(line_edit *e, unsigned char c)
{
    e->esc[e->n_esc++] = (char)c;
    e->esc[e->n_esc] = 0;
    bool csi = e->n_esc >= 2 && e->esc[1] == '[';
    bool done = e->n_esc == 1   ? false
                : e->n_esc == 2 ? c != '[' && c != 'O'
                                : !csi || (c >= 0x40 && c <= 0x7E);
    if (!done && e->n_esc < sizeof e->esc - 1) return true;
    bool ok = !done || escape(e);
    e->n_esc = 0;
    return ok;
}

/* The line is entered: it joins the history (unless empty or the same as the last). */
static line_key enter(line_edit *e)
{
    e->n_esc = 0;
    if (!reserve(e, 1)) return LINE_KEY_OOM;
    e->buf[e->len] = 0;
    bool same = e->n_hist && !strcmp(e->hist[e->n_hist - 1], e->buf);
    if (e->len && !same) {
        if (e->n_hist == e->cap_hist) {
            size_t cap = e->cap_hist ? 2 * e->cap_hist : 16;
            char **h = realloc(e->hist, cap * sizeof *h);
            if (!h) return LINE_KEY_OOM;
            e->hist = h, e->cap_hist = cap;
        }
        if (!(e->hist[e->n_hist] = strdup(e->buf))) return LINE_KEY_OOM;
        e->n_hist++;
    }
    e->at = e->n_hist;
    return LINE_KEY_ENTER;
}

line_key line_edit_key(line_edit *e, unsigned char c)
{
    if (!reserve(e, 1)) return LINE_KEY_OOM;
    bool ok = true;
    if (e->n_esc) ok = escape_byte(e, c);
    else if (c == '\r' || c == '\n') return enter(e);
    else if (c == 0x1B) ok = escape_byte(e, c);
    else if (c == 0x04 && e->len == 0) return LINE_KEY_EOF;               /* Ctrl-D */
    else if (c == 0x04 && e->cur < e->len) cut(e, e->cur, next_char(e, e->cur));
    else if ((c == 0x7F || c == 0x08) && e->cur) cut(e, prev_char(e, e->cur), e->cur); /* Backspace */
    else if (c == 0x01) e->cur = 0;                                       /* Ctrl-A */
    else if (c == 0x05) e->cur = e->len;                                  /* Ctrl-E */
    else if (c == 0x02) e->cur = prev_char(e, e->cur);                    /* Ctrl-B */
    else if (c == 0x06) e->cur = next_char(e, e->cur);                    /* Ctrl-F */
    else if (c == 0x15) cut(e, 0, e->cur);                                /* Ctrl-U */
    else if (c >= 0x20 && c != 0x7F) ok = insert(e, c);                   /* text, UTF-8 bytes included */
    return ok ? LINE_KEY_MORE : LINE_KEY_OOM;
}

static size_t columns(const char *s, size_t n)
{
    size_t cols = 0;
    for (size_t i = 0; i < n; i++) cols += !is_cont((unsigned char)s[i]);
    return cols;
}

void line_edit_draw(const line_edit *e, const char *prompt, FILE *out)
{
    fprintf(out, "\r\033[K%s%.*s", prompt, (int)e->len, e->buf ? e->buf : "");
    size_t back = columns(e->buf + e->cur, e->len - e->cur);
    if (back) fprintf(out, "\033[%zuD", back);
    fflush(out);
}

/* A new line to edit: empty, the history's end shown. */
static void start_line(line_edit *e)
{
    e->len = e->cur = e->n_esc = 0;
    if (e->buf) e->buf[0] = 0;
    e->at = e->n_hist;
}

long line_edit_read(line_edit *e, const char *prompt, FILE *out)
{
    ember_term *t = ember_term_raw();
    if (!t) return -3;
    start_line(e);
    line_edit_draw(e, prompt, out);
    long r = -4;
    while (r == -4) {
        unsigned char c;
        size_t len = e->len, cur = e->cur;
        int got = ember_term_read(&c);
        line_key k = got == 1 ? line_edit_key(e, c) : LINE_KEY_EOF;
        bool typed_at_end = cur == len && e->len == len + 1 && e->cur == e->len; /* echoed as a terminal does */
        if (got < 0) r = -2;
        else if (k == LINE_KEY_ENTER) r = (long)e->len;
        else if (k == LINE_KEY_EOF) r = -1;
        else if (k == LINE_KEY_OOM) r = -3;
        else if (typed_at_end) fputc(c, out), fflush(out);
        else line_edit_draw(e, prompt, out);
    }
    ember_term_restore(t);
    if (r != -2) fputc('\n', out); /* Enter or Ctrl-D: the next output starts below the line */
    fflush(out);
    return r;
}

void line_edit_free(line_edit *e)
{
    for (size_t i = 0; i < e->n_hist; i++) free(e->hist[i]);
    free(e->hist);
    free(e->buf);
    free(e->draft);
    *e = (line_edit){0};
}
