/* os_signal.c — Ctrl-C as a flag (os_signal.h). Signal handlers reach file-scope
 * variables only: the flag and the reading thread are this file's, the process's one
 * Ctrl-C state. */
#include "os_signal.h"

#ifdef _WIN32

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

static volatile LONG interrupted;

/* Runs on a thread of its own; a blocking console read returns by itself on Ctrl-C. */
static BOOL WINAPI on_ctrl(DWORD type)
{
    if (type != CTRL_C_EVENT && type != CTRL_BREAK_EVENT) return FALSE;
    InterlockedExchange(&interrupted, 1);
    return TRUE;
}

void ember_interrupt_catch(bool at_prompt)
{
    static volatile LONG installed;
    (void)at_prompt;
    if (InterlockedExchange(&installed, 1) == 0) SetConsoleCtrlHandler(on_ctrl, TRUE);
}

bool ember_interrupt_take(void) { return InterlockedExchange(&interrupted, 0) != 0; }

int ember_interrupt_wait_input(int fd)
{
    (void)fd;
    return 1;
}

#else /* POSIX */

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/select.h>

static atomic_int interrupted; /* lock-free, so a handler may touch it (C11 7.14.1.1) */
static volatile sig_atomic_t have_reader;
static pthread_t reader;

/* The kernel hands a Ctrl-C to any thread that does not block it (the driver's too);
 * passed on to the reading thread, it interrupts the read there. pthread_self and
 * pthread_kill are async-signal-safe (POSIX.1-2008 TC1). */
static void on_sigint(int sig)
{
    interrupted = 1;
    if (have_reader && !pthread_equal(pthread_self(), reader)) pthread_kill(reader, sig);
}

/* Without SA_RESTART at the prompt, so that the read fails with EINTR; with it elsewhere. */
void ember_interrupt_catch(bool at_prompt)
{
    if (!have_reader) reader = pthread_self(), have_reader = 1;
    struct sigaction sa = {.sa_handler = on_sigint, .sa_flags = at_prompt ? 0 : SA_RESTART};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

bool ember_interrupt_take(void) { return atomic_exchange(&interrupted, 0) != 0; }

/* SIGINT is blocked from the flag's check until pselect, which unblocks it atomically
 * while it waits: a Ctrl-C in between stays pending and ends the wait at once. */
int ember_interrupt_wait_input(int fd)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    if (pthread_sigmask(SIG_BLOCK, &block, &old) != 0) return -1;
    sigset_t during = old;
    sigdelset(&during, SIGINT);
    int r;
    for (;;) {
        if (atomic_load(&interrupted)) {
            r = 0;
            break;
        }
        fd_set in;
        FD_ZERO(&in);
        FD_SET(fd, &in);
        int n = pselect(fd + 1, &in, NULL, NULL, NULL, &during);
        if (n > 0 || (n < 0 && errno != EINTR)) {
            r = n > 0 ? 1 : -1;
            break;
        } /* EINTR: a Ctrl-C (seen above) or another signal (wait on) */
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r;
}

#endif
