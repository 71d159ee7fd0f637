/* alloc.h — every host allocation of the library goes through these (alloc.c), so that
 * an application (or a test, failing the Nth call) can supply its own allocator with
 * ember_set_allocator. Same contracts as the C library's; ember_free(NULL) does nothing;
 * a size of 0 allocates 1 byte, so that NULL always means out of memory. */
#ifndef EMBER_ALLOC_H
#define EMBER_ALLOC_H

#include <stddef.h>

void *ember_malloc(size_t size);
void *ember_calloc(size_t count, size_t size); /* NULL when count * size overflows */
void *ember_realloc(void *p, size_t size);
void ember_free(void *p);
char *ember_strdup(const char *s);

#endif
