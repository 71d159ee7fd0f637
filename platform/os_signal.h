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

/* Whether a Ctrl-C came since the last take; clears the flag. */
bool ember_interrupt_take(void);

#endif
