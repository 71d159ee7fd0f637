/* lsan_keep_loaded.so — preloaded by scripts/sanitize.sh (LD_PRELOAD) into every process of
 * the sanitized test suite. In a process that runs LeakSanitizer, dlclose() does nothing:
 * every library dlopen()ed stays mapped until exit.
 *
 * Why: the Vulkan loader dlopen()s the drivers (lavapipe, Mesa's other ICDs, the
 * validation layer) and dlclose()s them when an instance is destroyed; SDL does the same
 * with Mesa's OpenGL driver. Mesa keeps some allocations in globals for the life of the
 * module (util_cpu_detect's L3 affinity masks, for one). Once the module is unmapped,
 * LeakSanitizer reports those as leaks from an "<unknown module>", which no suppression
 * can name. Kept mapped, the globals still point at them, so they are no leak; anything
 * else a library leaks is reported under its name (tests/lsan.supp). Ember's own code is
 * not touched.
 *
 * In other processes (bash, python3, cc, node: not sanitized) dlclose() is the real one.
 * Built without sanitizers (tests/CMakeLists.txt), so that it pulls no runtime into them. */
#define _GNU_SOURCE
#include <dlfcn.h>

int dlclose(void *handle)
{
    if (dlsym(RTLD_DEFAULT, "__lsan_do_leak_check"))
        return 0;
    int (*real)(void *) = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
    return real ? real(handle) : -1;
}
