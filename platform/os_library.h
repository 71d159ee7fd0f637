/* os_library.h — shared libraries opened at run time (dlopen, or LoadLibraryW), and the
 * names the Vulkan loader goes by on this system. Library-internal; docs/portability.md. */
#ifndef EMBER_OS_LIBRARY_H
#define EMBER_OS_LIBRARY_H

/* Opens the library named name (a file name the system's search finds, or a path; UTF-8);
 * NULL when it cannot. */
void *ember_library_open(const char *name);
/* The address of symbol in lib, or NULL. */
void *ember_library_symbol(void *lib, const char *symbol);
void ember_library_close(void *lib);

/* The Vulkan loader's file names on this system, most specific first, NULL-terminated. */
const char *const *ember_vulkan_library_names(void);

#endif
