/* error.h — how errors travel inside the library.
 *
 * Internal functions return an ember_status and, on failure, write a message into an
 * ember_err the caller owns (usually embedded in a handle). Nothing is global. */
#ifndef EMBER_ERROR_H
#define EMBER_ERROR_H

#include <stdio.h> /* on mingw, _mingw.h's __MINGW_PRINTF_FORMAT */

#include "ember.h"

/* printf-style format checking. gcc's "printf" means Microsoft's printf on mingw, which
 * knows no %zu; Ember is built there with mingw's C99 printf (__USE_MINGW_ANSI_STDIO, set
 * by CMakeLists.txt), whose archetype mingw names. */
#ifdef __MINGW_PRINTF_FORMAT
#define EMBER_PRINTF(fmt, args) __attribute__((format(__MINGW_PRINTF_FORMAT, fmt, args)))
#else
#define EMBER_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#endif

typedef struct ember_err {
    char msg[512];
} ember_err;

/* Formats the message into err (if not NULL) and returns code. Usage:
 *   return ember_fail(err, EMBER_ERR_FORMAT, "%s: bad magic", path); */
ember_status ember_fail(ember_err *err, ember_status code, const char *fmt, ...)
    EMBER_PRINTF(3, 4);

/* Prepends "context: " to the message already in err (for adding a file name or a
 * tensor name at an outer level). Returns code unchanged. */
ember_status ember_fail_ctx(ember_err *err, ember_status code, const char *fmt, ...)
    EMBER_PRINTF(3, 4);

#endif
