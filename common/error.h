/* error.h — how errors travel inside the library.
 *
 * Internal functions return an ember_status and, on failure, write a message into an
 * ember_err the caller owns (usually embedded in a handle). Nothing is global. */
#ifndef EMBER_ERROR_H
#define EMBER_ERROR_H

#include "ember.h"

/* printf-style format checking against the printf the build links: EMBER_PRINTF_ARCHETYPE
 * is set by CMakeLists.txt where that is not the compiler's "printf" (mingw: gnu_printf,
 * its C99 printf, since gcc's "printf" there means Microsoft's, which knows no %zu). */
#ifndef EMBER_PRINTF_ARCHETYPE
#define EMBER_PRINTF_ARCHETYPE printf
#endif
#define EMBER_PRINTF(fmt, args) __attribute__((format(EMBER_PRINTF_ARCHETYPE, fmt, args)))

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
