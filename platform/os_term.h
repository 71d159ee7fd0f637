/* os_term.h — a terminal's raw mode, for the line editor of `ember chat`
 * (tools/chat/line_edit.c): keys arrive one byte at a time, unechoed, so that arrows and
 * Backspace can edit the line. POSIX only (termios); on Windows the calls say no and the
 * chat reads plain lines. Ctrl-C still raises SIGINT in raw mode (ISIG stays on), so that
 * os_signal.h's handling of it holds at an edited prompt too. */
#ifndef EMBER_OS_TERM_H
#define EMBER_OS_TERM_H

#include <stdbool.h>

/* The terminal's mode before raw mode, to put back. */
typedef struct ember_term ember_term;

/* Puts the terminal on standard input into raw mode; the saved mode, to hand to
 * ember_term_restore, or NULL when standard input is not a terminal, the mode cannot be
 * changed, memory runs out, or the system has no termios (Windows). */
ember_term *ember_term_raw(void);
/* Puts the saved mode back and frees it; NULL does nothing. */
void ember_term_restore(ember_term *t);
/* Reads one byte of standard input, unbuffered: 1 read, 0 at the end of input, -1 on an
 * error or when a signal (Ctrl-C) interrupted the read. */
int ember_term_read(unsigned char *byte);

#endif
