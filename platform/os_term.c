/* os_term.c — a terminal's raw mode (os_term.h). */
#include "os_term.h"

#include "os_signal.h"

#include <stdlib.h>

#ifdef _WIN32

/* The Windows console gets plain line reads: its editing keys already work there. */
ember_term *ember_term_raw(void) { return NULL; }
void ember_term_restore(ember_term *t) { (void)t; }
int ember_term_read(unsigned char *byte)
{
    (void)byte;
    return -1;
}

#else /* POSIX */

#include <termios.h>
#include <unistd.h>

struct ember_term {
    struct termios saved;
};

ember_term *ember_term_raw(void)
{
    struct termios raw;
    if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &raw) != 0) return NULL;
    ember_term *t = malloc(sizeof *t);
    if (!t) return NULL;
    t->saved = raw;
    /* TCSANOW: what was typed ahead while a reply streamed stays to be read.
     * No echo, no line discipline, bytes as typed (no CR to NL); ISIG kept: Ctrl-C stays a
     * signal. Output processing is untouched, so "\n" still ends a line on screen. */
    raw.c_lflag &= (tcflag_t) ~(ECHO | ICANON | IEXTEN);
    raw.c_iflag &= (tcflag_t) ~(ICRNL | IXON);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

void ember_term_restore(ember_term *t)
{
    if (!t) return;
    tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
    free(t);
}

int ember_term_read(unsigned char *byte)
{
    if (ember_interrupt_wait_input(STDIN_FILENO) != 1) return -1; /* a Ctrl-C, never lost */
    ssize_t n = read(STDIN_FILENO, byte, 1);
    return n == 1 ? 1 : n == 0 ? 0 : -1;
}

#endif
