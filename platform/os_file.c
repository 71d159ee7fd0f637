/* os_file.c — os_file.h on POSIX, or on Windows' wide-character calls. */
#include "os_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

typedef unsigned long long ull;

/* Reads f to its end into buf[0..n); false when it ends early or fails. */
static bool read_whole(FILE *f, uint8_t *buf, size_t n)
{
    return fread(buf, 1, n, f) == n && fgetc(f) == EOF;
}

#ifdef _WIN32

#define WIN32_LEAN_AND_MEAN
#include <io.h>
#include <windows.h>

/* path (UTF-8) as UTF-16, ember_free it; NULL when it is not UTF-8 or memory ran out. */
static wchar_t *wide(const char *path)
{
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, NULL, 0);
    wchar_t *w = n > 0 ? ember_malloc(sizeof *w * (size_t)n) : NULL;
    if (w && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, w, n) != n) {
        ember_free(w);
        w = NULL;
    }
    return w;
}

/* The errors a file can meet that the C runtime also reports (through fopen and errno), as
 * errno values, so that Ember says the same words for them however it opened the file. */
static const struct { DWORD code; int errno_value; } C_ERRORS[] = {
    {ERROR_FILE_NOT_FOUND, ENOENT}, {ERROR_PATH_NOT_FOUND, ENOENT},    {ERROR_INVALID_NAME, ENOENT},
    {ERROR_ACCESS_DENIED, EACCES},  {ERROR_SHARING_VIOLATION, EACCES}, {ERROR_LOCK_VIOLATION, EACCES},
    {ERROR_NOT_ENOUGH_MEMORY, ENOMEM}, {ERROR_DISK_FULL, ENOSPC},
};

/* Fails with what, then words for the system error code and its number: the C runtime's
 * for the errors above ("cannot open: No such file or directory (Windows error 2)", as
 * fopen's callers say), else the system's own (in the user's language, as UTF-8, without
 * the final period). */
static ember_status fail_code(ember_err *err, ember_status s, const char *what, DWORD code)
{
    for (size_t i = 0; i < sizeof C_ERRORS / sizeof C_ERRORS[0]; i++)
        if (C_ERRORS[i].code == code)
            return ember_fail(err, s, "%s: %s (Windows error %lu)", what, strerror(C_ERRORS[i].errno_value),
                              (unsigned long)code);
    wchar_t w[256];
    char text[512] = "";
    DWORD n = FormatMessageW(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, code, 0, w,
                             sizeof w / sizeof w[0], NULL);
    while (n > 0 && (w[n - 1] == L'\r' || w[n - 1] == L'\n' || w[n - 1] == L' ' || w[n - 1] == L'.')) n--;
    if (n > 0 && WideCharToMultiByte(CP_UTF8, 0, w, (int)n, text, sizeof text - 1, NULL, NULL) <= 0) text[0] = 0;
    if (!text[0]) return ember_fail(err, s, "%s (Windows error %lu)", what, (unsigned long)code);
    return ember_fail(err, s, "%s: %s (Windows error %lu)", what, text, (unsigned long)code);
}

static ember_status refuse(ember_err *err, HANDLE f, ember_status s, const char *what)
{
    DWORD code = GetLastError(); /* before CloseHandle, which may set another */
    if (f != INVALID_HANDLE_VALUE) CloseHandle(f);
    return fail_code(err, s, what, code);
}

ember_status ember_file_map_open(const char *path, ember_file_map *m, ember_err *err)
{
    *m = (ember_file_map){0};
    wchar_t *w = wide(path);
    if (!w && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, NULL, 0) > 0)
        return ember_fail(err, EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    if (!w) return ember_fail(err, EMBER_ERR_IO, "cannot open: not a UTF-8 path");
    HANDLE f = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
    DWORD attr = GetFileAttributesW(w);
    ember_free(w);
    if (f == INVALID_HANDLE_VALUE && attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_DIRECTORY))
        return ember_fail(err, EMBER_ERR_IO, "a directory, not a GGUF file");
    if (f == INVALID_HANDLE_VALUE) return refuse(err, f, EMBER_ERR_IO, "cannot open");
    LARGE_INTEGER size;
    if (GetFileType(f) != FILE_TYPE_DISK) return refuse(err, f, EMBER_ERR_IO, "not a regular file");
    if (!GetFileSizeEx(f, &size)) return refuse(err, f, EMBER_ERR_IO, "cannot read its size");
    if ((ull)size.QuadPart > SIZE_MAX) return refuse(err, f, EMBER_ERR_IO, "too large to map");
    if (size.QuadPart == 0) {
        CloseHandle(f);
        return ember_fail(err, EMBER_ERR_FORMAT, "an empty file");
    }
    HANDLE map = CreateFileMappingW(f, NULL, PAGE_READONLY, 0, 0, NULL);
    CloseHandle(f); /* the mapping keeps the file open */
    const void *data = map ? MapViewOfFile(map, FILE_MAP_READ, 0, 0, 0) : NULL;
    if (!data) {
        return refuse(err, map ? map : INVALID_HANDLE_VALUE, EMBER_ERR_IO, "cannot map");
    }
    *m = (ember_file_map){data, (size_t)size.QuadPart, map};
    return EMBER_OK;
}

void ember_file_map_close(ember_file_map *m)
{
    if (m->data) UnmapViewOfFile(m->data);
    if (m->os) CloseHandle((HANDLE)m->os);
    *m = (ember_file_map){0};
}

/* Windows trims the pages of a read-only file view under memory pressure by itself. */
void ember_file_map_drop(const void *data, size_t n) { (void)data, (void)n; }

FILE *ember_fopen(const char *path, const char *mode)
{
    wchar_t *w = wide(path), *wm = wide(mode);
    FILE *f = w && wm ? _wfopen(w, wm) : NULL;
    ember_free(w);
    ember_free(wm);
    return f;
}

bool ember_path_is_dir(const char *path)
{
    wchar_t *w = wide(path);
    DWORD attr = w ? GetFileAttributesW(w) : INVALID_FILE_ATTRIBUTES;
    ember_free(w);
    return attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_DIRECTORY);
}

bool ember_is_terminal(FILE *f) { return _isatty(_fileno(f)) != 0; }

/* The volume and index that name the file at path; false when it cannot be opened. */
static bool file_id(const char *path, BY_HANDLE_FILE_INFORMATION *id)
{
    wchar_t *w = wide(path);
    HANDLE f = w ? CreateFileW(w, 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_EXISTING,
                               FILE_FLAG_BACKUP_SEMANTICS, NULL)
                 : INVALID_HANDLE_VALUE;
    ember_free(w);
    bool ok = f != INVALID_HANDLE_VALUE && GetFileInformationByHandle(f, id);
    if (f != INVALID_HANDLE_VALUE) CloseHandle(f);
    return ok;
}

bool ember_same_file(const char *a, const char *b)
{
    BY_HANDLE_FILE_INFORMATION x, y;
    return file_id(a, &x) && file_id(b, &y) && x.dwVolumeSerialNumber == y.dwVolumeSerialNumber &&
           x.nFileIndexHigh == y.nFileIndexHigh && x.nFileIndexLow == y.nFileIndexLow;
}

static bool make_one(const char *dir)
{
    wchar_t *w = wide(dir);
    bool ok = w && (CreateDirectoryW(w, NULL) || GetLastError() == ERROR_ALREADY_EXISTS);
    ember_free(w);
    return ok;
}

static bool is_sep(char c) { return c == '/' || c == '\\'; }

/* The start of the path after its root ("C:\", "\\server\share\", "\"): no folder to make there. */
static size_t root_len(const char *p)
{
    if (p[0] && p[1] == ':') return is_sep(p[2]) ? 3 : 2;
    return is_sep(p[0]) ? 1 : 0;
}

bool ember_file_replace(const char *path, const void *buf, size_t n)
{
    size_t len = strlen(path);
    char *tmp = ember_malloc(len + 32);
    if (!tmp) return false;
    snprintf(tmp, len + 32, "%s.%lu.tmp", path, (unsigned long)GetCurrentProcessId());
    FILE *f = ember_fopen(tmp, "wb");
    bool ok = f && fwrite(buf, 1, n, f) == n && fflush(f) == 0 && _commit(_fileno(f)) == 0;
    if (f && fclose(f) != 0) ok = false;
    wchar_t *wt = wide(tmp), *wp = wide(path);
    ok = ok && wt && wp && MoveFileExW(wt, wp, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH);
    if (!ok && wt) DeleteFileW(wt);
    ember_free(wt);
    ember_free(wp);
    ember_free(tmp);
    return ok;
}

bool ember_cache_dir(char *buf, size_t cap)
{
    const wchar_t *local = _wgetenv(L"LOCALAPPDATA");
    if (!local || !local[0]) return false;
    int n = WideCharToMultiByte(CP_UTF8, 0, local, -1, buf, (int)(cap < 0x7FFFFFFF ? cap : 0x7FFFFFFF), NULL, NULL);
    if (n <= 0 || (size_t)n + 6 > cap) return false;
    memcpy(buf + n - 1, "\\ember", 7);
    return true;
}

bool ember_cache_home_set(const char *dir)
{
    wchar_t *w = wide(dir);
    bool ok = w && _wputenv_s(L"LOCALAPPDATA", w) == 0;
    ember_free(w);
    return ok;
}

#else /* POSIX */

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_sep(char c) { return c == '/'; }
static size_t root_len(const char *p) { return p[0] == '/'; }
static bool make_one(const char *dir) { return mkdir(dir, 0700) == 0 || errno == EEXIST; }

/* What fstat says of fd that keeps it from being mapped, or NULL. */
static const char *unmappable(const struct stat *st, ember_status *s)
{
    *s = EMBER_ERR_IO;
    if (S_ISDIR(st->st_mode)) return "a directory, not a GGUF file";
    if (!S_ISREG(st->st_mode)) return "not a regular file";
    if ((uint64_t)st->st_size > SIZE_MAX) return "too large to map";
    *s = EMBER_ERR_FORMAT;
    return st->st_size == 0 ? "an empty file" : NULL; /* mmap refuses length 0 */
}

ember_status ember_file_map_open(const char *path, ember_file_map *m, ember_err *err)
{
    *m = (ember_file_map){0};
    /* O_NONBLOCK: a FIFO must not block us before fstat can refuse it */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return ember_fail(err, EMBER_ERR_IO, "cannot open: %s", strerror(errno));
    struct stat st;
    ember_status s = EMBER_OK;
    const char *why = NULL;
    if (fstat(fd, &st) != 0) s = ember_fail(err, EMBER_ERR_IO, "cannot stat: %s", strerror(errno));
    else if ((why = unmappable(&st, &s))) s = ember_fail(err, s, "%s", why);
    else s = EMBER_OK;
    void *p = s == EMBER_OK ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    if (s == EMBER_OK && p == MAP_FAILED) s = ember_fail(err, EMBER_ERR_IO, "cannot map: %s", strerror(errno));
    if (s == EMBER_OK) *m = (ember_file_map){p, (size_t)st.st_size, NULL};
    close(fd);
    return s;
}

void ember_file_map_close(ember_file_map *m)
{
    if (m->data) munmap((void *)m->data, m->size);
    *m = (ember_file_map){0};
}

void ember_file_map_drop(const void *data, size_t n)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    uintptr_t lo = (uintptr_t)data, hi = lo + n;
    lo = (lo + (uintptr_t)page - 1) / (uintptr_t)page * (uintptr_t)page; /* whole pages only: */
    hi = hi / (uintptr_t)page * (uintptr_t)page;                          /* neighbours' stay */
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

FILE *ember_fopen(const char *path, const char *mode) { return fopen(path, mode); }

bool ember_path_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool ember_is_terminal(FILE *f) { return isatty(fileno(f)) != 0; }

bool ember_same_file(const char *a, const char *b)
{
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

bool ember_file_replace(const char *path, const void *buf, size_t n)
{
    size_t len = strlen(path);
    char *tmp = ember_malloc(len + 8), *dir = ember_strdup(path);
    int fd = -1;
    if (tmp && dir) snprintf(tmp, len + 8, "%s.XXXXXX", path), fd = mkstemp(tmp);
    bool ok = fd >= 0;
    for (size_t done = 0; ok && done < n;) {
        ssize_t w = write(fd, (const uint8_t *)buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        ok = w > 0;
        done += ok ? (size_t)w : 0;
    }
    ok = ok && fsync(fd) == 0;
    if (fd >= 0 && close(fd) != 0) ok = false;
    if (fd >= 0 && (!ok || rename(tmp, path) != 0)) ok = false, unlink(tmp);
    char *slash = ok ? strrchr(dir, '/') : NULL; /* the folder synced: the rename survives a crash */
    if (slash) *slash = 0;
    int dfd = slash ? open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) fsync(dfd), close(dfd);
    ember_free(tmp);
    ember_free(dir);
    return ok;
}

bool ember_cache_dir(char *buf, size_t cap)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n = -1;
    if (xdg && xdg[0] == '/') n = snprintf(buf, cap, "%s/ember", xdg);
    else if (home && home[0] == '/') n = snprintf(buf, cap, "%s/.cache/ember", home);
    return n > 0 && (size_t)n < cap;
}

bool ember_cache_home_set(const char *dir) { return setenv("XDG_CACHE_HOME", dir, 1) == 0; }

#endif

bool ember_dir_make(const char *dir)
{
    char *p = ember_strdup(dir);
    bool ok = p != NULL;
    for (char *q = p ? p + root_len(p) : NULL; ok && q && *q; q++) {
        if (!is_sep(*q) || q == p) continue;
        char c = *q;
        *q = 0;
        ok = make_one(p);
        *q = c;
    }
    ok = ok && make_one(p);
    ember_free(p);
    return ok;
}

bool ember_file_read(const char *path, size_t max, uint8_t **buf, size_t *n, bool *exists)
{
    *buf = NULL, *n = 0;
    FILE *f = ember_fopen(path, "rb");
    *exists = f != NULL;
    if (!f) return false;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    bool ok = size >= 0 && (unsigned long)size <= max && fseek(f, 0, SEEK_SET) == 0;
    uint8_t *b = ok ? ember_malloc(size ? (size_t)size : 1) : NULL;
    ok = b && read_whole(f, b, (size_t)size);
    fclose(f);
    if (!ok) {
        ember_free(b);
        return false;
    }
    *buf = b, *n = (size_t)size;
    return true;
}
