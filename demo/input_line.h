/* input_line.h — the line the user types into: UTF-8 aware editing and a history that
 * Up/Down walk through. No SDL here: the controls map keys to these calls. */
#ifndef INPUT_LINE_H
#define INPUT_LINE_H

#include <stddef.h>

typedef enum input_edit {
    EDIT_LEFT,
    EDIT_RIGHT,
    EDIT_HOME,
    EDIT_END,
    EDIT_BACKSPACE, /* the code point before the cursor */
    EDIT_DELETE,    /* the code point at the cursor */
    EDIT_HISTORY_UP,
    EDIT_HISTORY_DOWN,
} input_edit;

typedef struct input_line {
    char *buf;          /* NUL-terminated UTF-8 */
    size_t len, cap;
    size_t cursor;      /* byte index, always at a code point boundary */
    char **history;     /* sent lines, oldest first */
    int n_history, cap_history;
    int history_pos;    /* n_history = the line being typed; less = a history entry */
    char *draft;        /* what was being typed when Up was first pressed */
    unsigned version;   /* bumped on every change, so the view knows to re-render */
} input_line;

/* 0 on success, -1 when memory ran out. */
int input_init(input_line *in);
void input_free(input_line *in);
/* Inserts UTF-8 text (an SDL_TEXTINPUT event, a paste) at the cursor; control
 * characters are dropped. -1 when memory ran out. */
int input_insert(input_line *in, const char *text);
void input_apply(input_line *in, input_edit e);
/* The typed line, moved to the history and cleared from the input: a malloc'd copy the
 * caller frees; NULL when the line is empty (only spaces) or memory ran out. */
char *input_take(input_line *in);

#endif
