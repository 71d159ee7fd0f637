/* os_library.c — os_library.h on dlopen, or on LoadLibraryW. */
#include "os_library.h"

#include <stddef.h>
#include <stdint.h>

#ifdef _WIN32

#define WIN32_LEAN_AND_MEAN
#include <windows.h>

/* The name as UTF-16 on the stack: no allocation that could fail and pass for "no library". */
void *ember_library_open(const char *name)
{
    wchar_t w[MAX_PATH];
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, name, -1, w, MAX_PATH);
    return n > 0 ? (void *)LoadLibraryW(w) : NULL;
}

void *ember_library_symbol(void *lib, const char *symbol)
{
    return lib ? (void *)(uintptr_t)GetProcAddress((HMODULE)lib, symbol) : NULL;
}

void ember_library_close(void *lib)
{
    if (lib) FreeLibrary((HMODULE)lib);
}

const char *const *ember_vulkan_library_names(void)
{
    static const char *const names[] = {"vulkan-1.dll", NULL};
    return names;
}

#else /* POSIX */

#include <dlfcn.h>

void *ember_library_open(const char *name) { return dlopen(name, RTLD_NOW | RTLD_LOCAL); }
void *ember_library_symbol(void *lib, const char *symbol) { return lib ? dlsym(lib, symbol) : NULL; }

void ember_library_close(void *lib)
{
    if (lib) dlclose(lib);
}

const char *const *ember_vulkan_library_names(void)
{
#ifdef __APPLE__
    static const char *const names[] = {"libvulkan.1.dylib", "libvulkan.dylib", "libMoltenVK.dylib", NULL};
#else
    static const char *const names[] = {"libvulkan.so.1", "libvulkan.so", NULL};
#endif
    return names;
}

#endif
