/* error.c — formatting of error messages and status names. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

ember_status ember_fail(ember_err *err, ember_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

ember_status ember_fail_ctx(ember_err *err, ember_status code, const char *fmt, ...)
{
    if (err) {
        char old[sizeof err->msg];
        memcpy(old, err->msg, sizeof old);
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n + 2 < sizeof err->msg) {
            size_t room = sizeof err->msg - (size_t)n;
            err->msg[n] = ':';
            err->msg[n + 1] = ' ';
            memcpy(err->msg + n + 2, old, room - 2);
            err->msg[sizeof err->msg - 1] = 0;
        }
    }
    return code;
}

const char *ember_status_name(ember_status s)
{
    switch (s) {
    case EMBER_OK: return "EMBER_OK";
    case EMBER_IDLE: return "EMBER_IDLE";
    case EMBER_NOT_READY: return "EMBER_NOT_READY";
    case EMBER_ERR_INVALID_ARG: return "EMBER_ERR_INVALID_ARG";
    case EMBER_ERR_IO: return "EMBER_ERR_IO";
    case EMBER_ERR_FORMAT: return "EMBER_ERR_FORMAT";
    case EMBER_ERR_UNSUPPORTED: return "EMBER_ERR_UNSUPPORTED";
    case EMBER_ERR_OUT_OF_MEMORY: return "EMBER_ERR_OUT_OF_MEMORY";
    case EMBER_ERR_DEVICE_MEMORY: return "EMBER_ERR_DEVICE_MEMORY";
    case EMBER_ERR_NO_DEVICE: return "EMBER_ERR_NO_DEVICE";
    case EMBER_ERR_DEVICE_LOST: return "EMBER_ERR_DEVICE_LOST";
    case EMBER_ERR_VULKAN: return "EMBER_ERR_VULKAN";
    case EMBER_ERR_CONTEXT_FULL: return "EMBER_ERR_CONTEXT_FULL";
    case EMBER_ERR_NOT_FOUND: return "EMBER_ERR_NOT_FOUND";
    case EMBER_ERR_SHUTTING_DOWN: return "EMBER_ERR_SHUTTING_DOWN";
    }
    return "EMBER_ERR_UNKNOWN";
}
