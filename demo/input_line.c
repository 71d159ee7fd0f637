/* input_line.c — editing and history of the input line (input_line.h). */
#include "input_line.h"

#include <stdlib.h>
#include <string.h>

#include "chat_text.h"

static int reserve(input_line *in, size_t need)
{
    if (need + 1 <= in->cap) return 0;
    size_t cap = in->cap ? in->cap : 64;
    while (cap < need + 1) cap *= 2;
    char *p = realloc(in->buf, cap);
    if (!p) return -1;
    in->buf = p, in->cap = cap;
    return 0;
}

int input_init(input_line *in)
{
    *in = (input_line){0};
    if (reserve(in, 0) < 0) return -1;
    in->buf[0] = 0;
    return 0;
}

void input_free(input_line *in)
{
    for (int i = 0; i < in->n_history; i++) free(in->history[i]);
    free(in->history);
    free(in->draft);
    free(in->buf);
    *in = (input_line){0};
}

/* Replaces the whole line (a history entry recalled), cursor at the end. */
static int set_text(input_line *in, const char *s)
{
    size_t n = strlen(s);
    if (reserve(in, n) < 0) return -1;
    memcpy(in->buf, s, n + 1);
    in->len = in->cursor = n;
    in->version++;
    return 0;
}

int input_insert(input_line *in, const char *text)
{
    size_t n = strlen(text);
    char *clean = malloc(n + 1);
    if (!clean) return -1;
    /* A pasted newline would split the message; it becomes a space instead. */
    for (size_t i = 0; i < n; i++) clean[i] = text[i] == '\n' ? ' ' : text[i];
    n = text_sanitize(clean, clean, n);
    int rc = reserve(in, in->len + n);
    if (rc == 0) {
        memmove(in->buf + in->cursor + n, in->buf + in->cursor, in->len - in->cursor + 1);
        memcpy(in->buf + in->cursor, clean, n);
        in->len += n, in->cursor += n;
        in->version++;
    }
    free(clean);
    return rc;
}

static void erase(input_line *in, size_t from, size_t to)
{
    if (to <= from) return;
    memmove(in->buf + from, in->buf + to, in->len - to + 1);
    in->len -= to - from;
    in->cursor = from;
    in->version++;
}

/* Up: back through the history, keeping what was being typed as the draft. */
static void history_up(input_line *in)
{
    if (in->history_pos == 0) return;
    if (in->history_pos == in->n_history) {
        free(in->draft);
        in->draft = strdup(in->buf);
    }
    in->history_pos--;
    set_text(in, in->history[in->history_pos]);
}

static void history_down(input_line *in)
{
    if (in->history_pos >= in->n_history) return;
    in->history_pos++;
    set_text(in, in->history_pos == in->n_history ? (in->draft ? in->draft : "") : in->history[in->history_pos]);
}

void input_apply(input_line *in, input_edit e)
{
    size_t before = in->cursor;
    switch (e) {
    case EDIT_LEFT: in->cursor = utf8_prev(in->buf, in->cursor); break;
    case EDIT_RIGHT: in->cursor = utf8_next(in->buf, in->len, in->cursor); break;
    case EDIT_HOME: in->cursor = 0; break;
    case EDIT_END: in->cursor = in->len; break;
    case EDIT_BACKSPACE: erase(in, utf8_prev(in->buf, in->cursor), in->cursor); break;
    case EDIT_DELETE: erase(in, in->cursor, utf8_next(in->buf, in->len, in->cursor)); break;
    case EDIT_HISTORY_UP: history_up(in); break;
    case EDIT_HISTORY_DOWN: history_down(in); break;
    }
    if (in->cursor != before) in->version++;
}

/* Remembers a sent line (not twice in a row). */
static void push_history(input_line *in, const char *line)
{
    if (in->n_history && strcmp(in->history[in->n_history - 1], line) == 0) return;
    if (in->n_history == in->cap_history) {
        int cap = in->cap_history ? 2 * in->cap_history : 16;
        char **p = realloc(in->history, (size_t)cap * sizeof *p);
        if (!p) return;
        in->history = p, in->cap_history = cap;
    }
    char *copy = strdup(line);
    if (copy) in->history[in->n_history++] = copy;
}

char *input_take(input_line *in)
{
    size_t i = 0;
    while (in->buf[i] == ' ') i++;
    if (!in->buf[i]) return NULL;
    char *line = strdup(in->buf);
    if (!line) return NULL;
    push_history(in, line);
    in->history_pos = in->n_history;
    free(in->draft);
    in->draft = NULL;
    set_text(in, "");
    return line;
}
