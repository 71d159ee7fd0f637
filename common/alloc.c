/* alloc.c — the library's host allocator (alloc.h, ember_set_allocator).
 *
 * The one piece of process-wide state in the library, as SQLite's
 * sqlite3_config(SQLITE_CONFIG_MALLOC): an allocation may outlive any handle (a model's
 * strings are freed by whoever frees the model, on any thread), so the allocator cannot
 * belong to a handle without every free knowing which one. It is set before any other
 * call and read only afterwards. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "ember.h"

static void *libc_malloc(void *user, size_t size) { return malloc(size); }
static void *libc_realloc(void *user, void *p, size_t size) { return realloc(p, size); }
static void libc_free(void *user, void *p) { free(p); }

static ember_allocator current = {.malloc = libc_malloc, .realloc = libc_realloc, .free = libc_free};

ember_status ember_set_allocator(const ember_allocator *a)
{
    if (!a) {
        current = (ember_allocator){.malloc = libc_malloc, .realloc = libc_realloc, .free = libc_free};
        return EMBER_OK;
    }
    if (!a->malloc || !a->realloc || !a->free) return EMBER_ERR_INVALID_ARG;
    current = *a;
    return EMBER_OK;
}

void *ember_malloc(size_t size) { return current.malloc(current.user, size ? size : 1); }

void *ember_calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size) return NULL;
    size_t n = count * size;
    void *p = ember_malloc(n);
    if (p) memset(p, 0, n ? n : 1);
    return p;
}

void *ember_realloc(void *p, size_t size)
{
    if (!p) return ember_malloc(size);
    return current.realloc(current.user, p, size ? size : 1);
}

void ember_free(void *p)
{
    if (p) current.free(current.user, p);
}

char *ember_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = ember_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
