/* os_thread.h — threads, locks, condition variables, the processor count and a monotonic
 * clock, as the operating system gives them: POSIX threads, or Windows' own (SRW locks,
 * condition variables, _beginthreadex). The library's only door to them; nothing outside
 * platform/ knows which system it runs on (docs/portability.md). Library-internal. */
#ifndef EMBER_OS_THREAD_H
#define EMBER_OS_THREAD_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#ifdef _WIN32
typedef struct ember_mutex { void *srw; } ember_mutex;   /* an SRWLOCK */
typedef struct ember_cond { void *cv; } ember_cond;      /* a CONDITION_VARIABLE */
typedef struct ember_thread { void *handle; } ember_thread;
#else
#include <pthread.h>
typedef struct ember_mutex { pthread_mutex_t m; } ember_mutex;
typedef struct ember_cond { pthread_cond_t c; } ember_cond;
typedef struct ember_thread { pthread_t t; } ember_thread;
#endif

/* A lock, not recursive. init: false when the system has no room for one. */
bool ember_mutex_init(ember_mutex *m);
void ember_mutex_destroy(ember_mutex *m);
void ember_mutex_lock(ember_mutex *m);
void ember_mutex_unlock(ember_mutex *m);

/* A condition variable, waited on with its mutex held (wakeups may be spurious: callers
 * wait in a loop on their condition). */
bool ember_cond_init(ember_cond *c);
void ember_cond_destroy(ember_cond *c);
void ember_cond_wait(ember_cond *c, ember_mutex *m);
/* Waits at most ms milliseconds. */
void ember_cond_wait_ms(ember_cond *c, ember_mutex *m, double ms);
void ember_cond_signal(ember_cond *c);
void ember_cond_broadcast(ember_cond *c);

/* Runs fn(arg) on a new thread; false when none could be started. Every started thread is
 * joined exactly once. */
bool ember_thread_start(ember_thread *t, void (*fn)(void *arg), void *arg);
void ember_thread_join(ember_thread *t);

/* The processors online (at least 1). */
uint32_t ember_cpu_count(void);

/* The machine's physical memory in bytes (0 when the system does not say). */
uint64_t ember_memory_bytes(void);

/* CPU seconds this process has used, all its threads (a driver's too), user and system. */
double ember_cpu_seconds(void);

/* Sleeps the calling thread for ms milliseconds (at least; ms <= 0 returns at once). */
void ember_sleep_ms(double ms);

/* Milliseconds from a fixed point in the past, never going back (a monotonic clock). */
double ember_now_ms(void);

/* The calendar date and time of seconds since 1970 (UTC), in UTC or in the local time
 * zone; false when there is no such time. */
bool ember_calendar(int64_t seconds, bool local, struct tm *out);

#endif
