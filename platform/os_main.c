/* os_main.c — a program's arguments and standard streams (os_main.h). */
#include "os_main.h"

#ifdef _WIN32

#define WIN32_LEAN_AND_MEAN
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <windows.h>

#include <shellapi.h> /* after windows.h, whose types it uses */

#include "common/alloc.h"

/* The wide command line as UTF-8 strings in one allocation: the pointers, then the text. */
static char **utf8_args(int *argc)
{
    int n;
    wchar_t **w = CommandLineToArgvW(GetCommandLineW(), &n);
    if (!w) return NULL;
    size_t bytes = sizeof(char *) * ((size_t)n + 1);
    for (int i = 0; i < n; i++) bytes += (size_t)WideCharToMultiByte(CP_UTF8, 0, w[i], -1, NULL, 0, NULL, NULL);
    char **v = ember_malloc(bytes);
    char *text = v ? (char *)(v + n + 1) : NULL, *end = (char *)v + bytes;
    for (int i = 0; v && i < n; i++) {
        v[i] = text;
        text += WideCharToMultiByte(CP_UTF8, 0, w[i], -1, text, (int)(end - text), NULL, NULL);
    }
    if (v) v[n] = NULL;
    LocalFree(w);
    *argc = n;
    return v;
}

bool ember_main_begin(int *argc, char ***argv)
{
    _setmode(_fileno(stdin), _O_BINARY);
    _setmode(_fileno(stdout), _O_BINARY);
    _setmode(_fileno(stderr), _O_BINARY);
    SetConsoleOutputCP(CP_UTF8); /* no console (a pipe, a file): these do nothing */
    SetConsoleCP(CP_UTF8);
    int n;
    char **v = utf8_args(&n);
    if (!v) return false;
    *argc = n;
    *argv = v; /* never freed: the process's arguments */
    return true;
}

#else /* POSIX */

bool ember_main_begin(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return true;
}

#endif
