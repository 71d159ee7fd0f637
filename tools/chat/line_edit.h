/* line_edit.h — the line editor of `ember chat` on a terminal: Left/Right (and Ctrl-B,
 * Ctrl-F), Home/End (and Ctrl-A, Ctrl-E), Backspace, Delete, Ctrl-U, and Up/Down through
 * the lines entered before, as readline's defaults do. The keys come as bytes
 * (line_edit_key), so the editing is testable without a terminal; line_edit_read takes
 * them from the terminal in raw mode (platform/os_term.h). */
#ifndef EMBER_LINE_EDIT_H
#define EMBER_LINE_EDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The line being edited, its cursor, the history and a half-read escape sequence. Zero
 * is empty; line_edit_free releases it. */
typedef struct line_edit {
    char *buf;                  /* the line, NUL-terminated */
    size_t len, cap, cur;       /* cur: the cursor, a byte offset at a character's start */
    char **hist;                /* lines entered, oldest first */
    size_t n_hist, cap_hist, at;/* at: the history line shown (n_hist: the one being typed) */
    char *draft;                /* the line being typed while the history is browsed */
    char esc[8];                /* an escape sequence read so far */
    size_t n_esc;
} line_edit;

typedef enum line_key {
    LINE_KEY_MORE,              /* the line goes on */
    LINE_KEY_ENTER,             /* the line is done: buf holds it */
    LINE_KEY_EOF,               /* Ctrl-D on an empty line */
    LINE_KEY_OOM,
} line_key;

/* Applies one byte of input to the line. */
line_key line_edit_key(line_edit *e, unsigned char c);
/* Writes prompt and the line over the terminal's line, the cursor where it is (VT100 codes). */
void line_edit_draw(const line_edit *e, const char *prompt, FILE *out);
/* Reads a line from the terminal: its length (buf holds it, and the history keeps it),
 * -1 at the end of input (Ctrl-D on an empty line, or the input closed), -2 when a
 * signal interrupted the read (Ctrl-C), -3 when the terminal cannot be put in raw mode
 * (read a plain line instead) or memory ran out. */
long line_edit_read(line_edit *e, const char *prompt, FILE *out);
void line_edit_free(line_edit *e);

#endif
