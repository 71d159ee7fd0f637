/* error.h — how errors travel inside the library.
 *
 * Internal functions return an ember_status and, on failure, write a message into an
 * ember_err the caller owns (usually embedded in a handle). Nothing is global. */
#ifndef EMBER_ERROR_H
#define EMBER_ERROR_H

#include "ember.h"

typedef struct ember_err {
    char msg[512];
} ember_err;

/* Formats the message into err (if not NULL) and returns code. Usage:
 *   return ember_fail(err, EMBER_ERR_FORMAT, "%s: bad magic", path); */
ember_status ember_fail(ember_err *err, ember_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "context: " to the message already in err (for adding a file name or a
 * tensor name at an outer level). Returns code unchanged. */
ember_status ember_fail_ctx(ember_err *err, ember_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
