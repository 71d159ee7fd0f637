/* os_process.h — running a command line through the system's shell (sh on POSIX, cmd.exe
 * on Windows) and reading what it prints: for the test programs, which start `ember`
 * (tests/testutil.c). The library itself starts no process. */
#ifndef EMBER_OS_PROCESS_H
#define EMBER_OS_PROCESS_H

#include <stddef.h>

/* Runs cmd, a command line in sh's syntax (words in 'single quotes', 2>&1, |, /dev/null;
 * on Windows rewritten for cmd.exe), and waits for it: its standard output into out[0..cap) (NUL-terminated, the
 * rest read and dropped; out may be NULL). The exit status, or -1 when it could not be
 * started or did not exit by itself (a signal). */
int ember_process_run(const char *cmd, char *out, size_t cap);

#endif
