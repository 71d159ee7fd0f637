/* os_signal.h — Ctrl-C for programs (the `ember` CLI): caught and turned into a flag that
 * the program reads between steps, instead of ending the process. POSIX: SIGINT; Windows:
 * the console's control handler. A process has one Ctrl-C, so it has one flag: that state
 * lives here, and the library itself never calls these. */
#ifndef EMBER_OS_SIGNAL_H
#define EMBER_OS_SIGNAL_H

#include <stdbool.h>

/* From now on a Ctrl-C sets the flag. at_prompt: it also interrupts a blocking read of
 * standard input on the thread that first called this (the read fails), so that a prompt
 * can act on it; otherwise interrupted system calls resume, so that nothing in the library
 * or the driver sees one fail. Call again to switch between the two. */
void ember_interrupt_catch(bool at_prompt);

/* Waits until file descriptor fd has input to read: 1 when it has, 0 when a Ctrl-C came
 * (before the call or while it waited; the flag stays set for ember_interrupt_take), -1 on
 * another error. Checking the flag and then blocking in read() would miss a Ctrl-C that
 * lands between the two; this waits with SIGINT unblocked only inside pselect, so that
 * none is lost. POSIX only: on Windows it returns 1 at once. */
int ember_interrupt_wait_input(int fd);

/* Whether a Ctrl-C came since the last take; clears the flag. */
bool ember_interrupt_take(void);

#endif
