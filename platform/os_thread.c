/* os_thread.c — os_thread.h on POSIX threads, or on Windows' own. */
#include "os_thread.h"

#include <stdlib.h>

/* What a new thread runs: the caller's function, handed over on the heap. */
typedef struct start {
    void (*fn)(void *);
    void *arg;
} start;

#ifdef _WIN32

#define WIN32_LEAN_AND_MEAN
#include <process.h>
#include <windows.h>

bool ember_mutex_init(ember_mutex *m)
{
    InitializeSRWLock((PSRWLOCK)&m->srw);
    return true;
}
void ember_mutex_destroy(ember_mutex *m) { (void)m; /* an SRW lock holds nothing */ }
void ember_mutex_lock(ember_mutex *m) { AcquireSRWLockExclusive((PSRWLOCK)&m->srw); }
void ember_mutex_unlock(ember_mutex *m) { ReleaseSRWLockExclusive((PSRWLOCK)&m->srw); }

bool ember_cond_init(ember_cond *c)
{
    InitializeConditionVariable((PCONDITION_VARIABLE)&c->cv);
    return true;
}
void ember_cond_destroy(ember_cond *c) { (void)c; }
void ember_cond_wait(ember_cond *c, ember_mutex *m)
{
    SleepConditionVariableSRW((PCONDITION_VARIABLE)&c->cv, (PSRWLOCK)&m->srw, INFINITE, 0);
}
void ember_cond_wait_ms(ember_cond *c, ember_mutex *m, double ms)
{
    DWORD w = ms <= 0 ? 0 : ms >= 4e9 ? INFINITE - 1 : (DWORD)(ms + 0.999);
    SleepConditionVariableSRW((PCONDITION_VARIABLE)&c->cv, (PSRWLOCK)&m->srw, w, 0);
}
void ember_cond_signal(ember_cond *c) { WakeConditionVariable((PCONDITION_VARIABLE)&c->cv); }
void ember_cond_broadcast(ember_cond *c) { WakeAllConditionVariable((PCONDITION_VARIABLE)&c->cv); }

static unsigned __stdcall trampoline(void *p)
{
    start s = *(start *)p;
    free(p);
    s.fn(s.arg);
    return 0;
}

bool ember_thread_start(ember_thread *t, void (*fn)(void *), void *arg)
{
    start *s = malloc(sizeof *s);
    if (!s) return false;
    *s = (start){fn, arg};
    t->handle = (void *)_beginthreadex(NULL, 0, trampoline, s, 0, NULL);
    if (!t->handle) free(s);
    return t->handle != NULL;
}

void ember_thread_join(ember_thread *t)
{
    WaitForSingleObject((HANDLE)t->handle, INFINITE);
    CloseHandle((HANDLE)t->handle);
    t->handle = NULL;
}

uint32_t ember_cpu_count(void)
{
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return si.dwNumberOfProcessors ? (uint32_t)si.dwNumberOfProcessors : 1;
}

bool ember_calendar(int64_t seconds, bool local, struct tm *out)
{
    __time64_t t = seconds;
    return (local ? _localtime64_s(out, &t) : _gmtime64_s(out, &t)) == 0;
}

uint64_t ember_memory_bytes(void)
{
    MEMORYSTATUSEX ms = {.dwLength = sizeof ms};
    return GlobalMemoryStatusEx(&ms) ? (uint64_t)ms.ullTotalPhys : 0;
}

void ember_sleep_ms(double ms)
{
    if (ms > 0) Sleep(ms < 4e9 ? (DWORD)(ms + 0.999) : INFINITE - 1);
}

double ember_cpu_seconds(void)
{
    FILETIME made, ended, kernel, user; /* 100 ns units */
    if (!GetProcessTimes(GetCurrentProcess(), &made, &ended, &kernel, &user)) return 0;
    ULARGE_INTEGER k = {.LowPart = kernel.dwLowDateTime, .HighPart = kernel.dwHighDateTime};
    ULARGE_INTEGER u = {.LowPart = user.dwLowDateTime, .HighPart = user.dwHighDateTime};
    return (double)(k.QuadPart + u.QuadPart) * 1e-7;
}

double ember_now_ms(void)
{
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (double)c.QuadPart * 1000.0 / (double)f.QuadPart;
}

#else /* POSIX */

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

bool ember_mutex_init(ember_mutex *m) { return pthread_mutex_init(&m->m, NULL) == 0; }
void ember_mutex_destroy(ember_mutex *m) { pthread_mutex_destroy(&m->m); }
void ember_mutex_lock(ember_mutex *m) { pthread_mutex_lock(&m->m); }
void ember_mutex_unlock(ember_mutex *m) { pthread_mutex_unlock(&m->m); }

/* The condition variables wait on the monotonic clock: a change of the wall clock does
 * not stretch or cut a timed wait. */
bool ember_cond_init(ember_cond *c)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a) != 0) return false;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    bool ok = pthread_cond_init(&c->c, &a) == 0;
    pthread_condattr_destroy(&a);
    return ok;
}
void ember_cond_destroy(ember_cond *c) { pthread_cond_destroy(&c->c); }
void ember_cond_wait(ember_cond *c, ember_mutex *m) { pthread_cond_wait(&c->c, &m->m); }

void ember_cond_wait_ms(ember_cond *c, ember_mutex *m, double ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (ms < 0) ms = 0;
    if (ms > 1e9) ms = 1e9;
    long long ns = (long long)ts.tv_nsec + (long long)(ms * 1e6);
    ts.tv_sec += (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    pthread_cond_timedwait(&c->c, &m->m, &ts);
}
void ember_cond_signal(ember_cond *c) { pthread_cond_signal(&c->c); }
void ember_cond_broadcast(ember_cond *c) { pthread_cond_broadcast(&c->c); }

static void *trampoline(void *p)
{
    start s = *(start *)p;
    free(p);
    s.fn(s.arg);
    return NULL;
}

bool ember_thread_start(ember_thread *t, void (*fn)(void *), void *arg)
{
    start *s = malloc(sizeof *s);
    if (!s) return false;
    *s = (start){fn, arg};
    if (pthread_create(&t->t, NULL, trampoline, s) == 0) return true;
    free(s);
    return false;
}

void ember_thread_join(ember_thread *t) { pthread_join(t->t, NULL); }

uint32_t ember_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1;
}

bool ember_calendar(int64_t seconds, bool local, struct tm *out)
{
    time_t t = (time_t)seconds;
    return (local ? localtime_r(&t, out) : gmtime_r(&t, out)) != NULL;
}

uint64_t ember_memory_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

double ember_cpu_seconds(void)
{
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

void ember_sleep_ms(double ms)
{
    if (ms <= 0) return;
    struct timespec ts = {(time_t)(ms / 1e3), (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6)};
    while (nanosleep(&ts, &ts) != 0) {} /* a signal cut it short: sleep the rest */
}

double ember_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#endif
