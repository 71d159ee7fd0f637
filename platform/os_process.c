/* os_process.c — a command line run through the shell (os_process.h). */
#include "os_process.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"

#ifdef _WIN32

#define EXIT_CODE(st) (st) /* _pclose gives the exit code itself */

/* cmd (sh syntax) for cmd.exe: 'single-quoted' words in double quotes (a " inside as \",
 * which the C runtime's argument parser reads as a quote), /dev/null as NUL, and the whole
 * in one more pair of quotes, which cmd /c strips (without them it strips the first
 * word's own). NULL when out of memory. */
static char *for_cmd(const char *cmd)
{
    size_t n = strlen(cmd), k = 0;
    char *w = ember_malloc(2 * n + 3);
    if (!w) return NULL;
    w[k++] = '"';
    for (size_t i = 0; i < n; i++) {
        if (cmd[i] == '\'') {
            w[k++] = '"';
            for (i++; i < n && cmd[i] != '\''; i++) {
                if (cmd[i] == '"') w[k++] = '\\';
                w[k++] = cmd[i];
            }
            w[k++] = '"';
        } else if (!strncmp(cmd + i, "/dev/null", 9)) {
            memcpy(w + k, "NUL", 3), k += 3, i += 8;
        } else {
            w[k++] = cmd[i];
        }
    }
    w[k++] = '"';
    w[k] = 0;
    return w;
}

static FILE *start(const char *cmd)
{
    char *c = for_cmd(cmd);
    FILE *p = c ? _popen(c, "r") : NULL;
    ember_free(c);
    return p;
}
#define pclose _pclose

#else /* POSIX */

#include <sys/wait.h>
#define EXIT_CODE(st) (WIFEXITED(st) ? WEXITSTATUS(st) : -1)
static FILE *start(const char *cmd) { return popen(cmd, "r"); }

#endif

int ember_process_run(const char *cmd, char *out, size_t cap)
{
    FILE *p = start(cmd);
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
