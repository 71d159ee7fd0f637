/* os_file.h — files as the operating system gives them: a whole file mapped read-only,
 * files read whole and replaced whole, folders made, the user's cache folder, and UTF-8
 * paths (Windows' wide-character calls underneath). The library's only door to them;
 * nothing outside platform/ knows which system it runs on (docs/portability.md).
 * Library-internal. */
#ifndef EMBER_OS_FILE_H
#define EMBER_OS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"

typedef struct ember_file_map {
    const void *data;
    size_t size;
    void *os;           /* the system's handle of the mapping (Windows), or NULL */
} ember_file_map;

/* Maps the file at path (UTF-8) read-only, whole. Refused with the reason in err: not
 * there or not readable, a directory or another kind of non-regular file, too large for
 * the address space (EMBER_ERR_IO); empty (EMBER_ERR_FORMAT). */
ember_status ember_file_map_open(const char *path, ember_file_map *m, ember_err *err);
void ember_file_map_close(ember_file_map *m);
/* Tells the system that the whole pages inside data[0..n) (of a mapping) will not be
 * read again: their memory may go (it comes back from the file if they are). */
void ember_file_map_drop(const void *data, size_t n);

/* fopen with a UTF-8 path. */
FILE *ember_fopen(const char *path, const char *mode);

/* The whole regular file at path, if it holds at most max bytes: *buf (ember_free it) and
 * *n. False when it is not there (*exists false), or cannot be read whole, or is larger
 * (*exists true). */
bool ember_file_read(const char *path, size_t max, uint8_t **buf, size_t *n, bool *exists);

/* Whether path names a folder (false when it is a file or nothing). */
bool ember_path_is_dir(const char *path);

/* Whether paths a and b name one existing file (links and other spellings too). */
bool ember_same_file(const char *a, const char *b);

/* Whether f is a terminal (a console on Windows), not a file or a pipe. */
bool ember_is_terminal(FILE *f);

/* Makes folder dir and its parents (private to the user where the system says so). */
bool ember_dir_make(const char *dir);

/* Replaces the file at path with buf[0..n): written beside it, flushed to the disk and
 * renamed over it, so that it appears whole or not at all, even after a crash. */
bool ember_file_replace(const char *path, const void *buf, size_t n);

/* The user's cache folder for Ember: $XDG_CACHE_HOME/ember, else $HOME/.cache/ember
 * (relative values ignored); on Windows %LOCALAPPDATA%\ember. False when there is none
 * (or it does not fit cap). */
bool ember_cache_dir(char *buf, size_t cap);

/* Points this process's cache home (XDG_CACHE_HOME; LOCALAPPDATA on Windows) at dir, an
 * absolute path, so that ember_cache_dir gives dir/ember: for the tests, which must never
 * write into the user's cache. False when the environment could not be changed. */
bool ember_cache_home_set(const char *dir);

#endif
