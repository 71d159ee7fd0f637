/* os_process.c — a command line run through the shell (os_process.h). */
#include "os_process.h"

#include <stdio.h>

#ifdef _WIN32
#define popen _popen
#define pclose _pclose
#define EXIT_CODE(st) (st) /* _pclose gives the exit code itself */
#else
#include <sys/wait.h>
#define EXIT_CODE(st) (WIFEXITED(st) ? WEXITSTATUS(st) : -1)
#endif

int ember_process_run(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = 0;
    if (out && cap) {
        size_t got;
        while (n + 1 < cap && (got = fread(out + n, 1, cap - 1 - n, p)) > 0) n += got;
        out[n] = 0;
    }
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) {}
    int st = pclose(p);
    return st == -1 ? -1 : EXIT_CODE(st);
}
