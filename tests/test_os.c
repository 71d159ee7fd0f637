/* test_os.c — platform/os_thread and platform/os_file, the library's only doors to the
 * operating system (the same test runs on Linux and, built with mingw, under Wine):
 *  - four threads add to one counter under a mutex: no addition is lost; a thread waiting
 *    on a condition variable is woken by a signal; a timed wait returns; the processor
 *    count is at least 1 and the clock never goes back;
 *  - a calendar date of a known second, in UTC;
 *  - a file replaced whole reads back byte for byte, replaced again with other bytes too;
 *    a file over the size asked for, and one not there, are told apart; nested folders are
 *    made; a path with non-ASCII characters opens;
 *  - a mapping holds the file's bytes; an empty file, a folder and a missing file are
 *    refused with their reasons; dropping a mapping's pages leaves its bytes readable;
 *  - a folder is told from a file; one file under two spellings is one file, two are not;
 *    a file is not a terminal;
 *  - the user's cache folder ends in "ember";
 *  - the machine has some memory; a 20 ms sleep lasts at least 20 ms. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "platform/os_file.h"
#include "platform/os_thread.h"
#include "testutil.h"

#define THREADS 4
#define ADDS 20000

typedef struct shared {
    ember_mutex mu;
    ember_cond cv;
    long counter;
    int ready;
    atomic_int woken;
} shared;

static void add_many(void *arg)
{
    shared *s = arg;
    for (int i = 0; i < ADDS; i++) {
        ember_mutex_lock(&s->mu);
        s->counter++;
        ember_mutex_unlock(&s->mu);
    }
}

static void wait_ready(void *arg)
{
    shared *s = arg;
    ember_mutex_lock(&s->mu);
    while (!s->ready) ember_cond_wait(&s->cv, &s->mu);
    ember_mutex_unlock(&s->mu);
    atomic_store(&s->woken, 1);
}

static void test_threads(void)
{
    shared s = {.counter = 0};
    CHECK(ember_mutex_init(&s.mu) && ember_cond_init(&s.cv));
    ember_thread t[THREADS + 1];
    bool started[THREADS + 1];
    for (int i = 0; i < THREADS; i++) started[i] = ember_thread_start(&t[i], add_many, &s);
    for (int i = 0; i < THREADS; i++)
        if (started[i]) ember_thread_join(&t[i]);
    CHECKF(s.counter == (long)THREADS * ADDS, "counter %ld", s.counter);
    started[THREADS] = ember_thread_start(&t[THREADS], wait_ready, &s);
    CHECK(started[THREADS]);
    ember_mutex_lock(&s.mu);
    s.ready = 1;
    ember_cond_broadcast(&s.cv);
    ember_mutex_unlock(&s.mu);
    if (started[THREADS]) ember_thread_join(&t[THREADS]);
    CHECK(atomic_load(&s.woken) == 1);
    ember_mutex_lock(&s.mu);
    double t0 = ember_now_ms();
    ember_cond_wait_ms(&s.cv, &s.mu, 5); /* nobody signals: it returns all the same */
    ember_mutex_unlock(&s.mu);
    CHECK(ember_now_ms() >= t0);
    ember_cond_destroy(&s.cv);
    ember_mutex_destroy(&s.mu);
    CHECK(ember_cpu_count() >= 1);
    double last = ember_now_ms();
    for (int i = 0; i < 1000; i++) {
        double now = ember_now_ms();
        CHECK(now >= last);
        last = now;
    }
    struct tm tm;
    CHECK(ember_calendar(1735732800, false, &tm)); /* 2025-01-01 12:00:00 UTC */
    CHECK(tm.tm_year == 125 && tm.tm_mon == 0 && tm.tm_mday == 1 && tm.tm_hour == 12 && tm.tm_min == 0);
}

static void test_files(void)
{
    char dir[512], path[700], nested[600], utf8[700];
    snprintf(dir, sizeof dir, "%s/os_test", tu_tmp_dir());
    snprintf(nested, sizeof nested, "%s/a/b/c", dir);
    snprintf(path, sizeof path, "%s/file.bin", nested);
    snprintf(utf8, sizeof utf8, "%s/t\xC3\xABst-\xE2\x82\xAC.bin", nested); /* "tëst-€.bin" */
    CHECK(ember_dir_make(nested) && ember_dir_make(nested)); /* made, and made again: fine */
    uint8_t bytes[3000];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (uint8_t)(i * 7 + 1);
    CHECK(ember_file_replace(path, bytes, sizeof bytes));
    uint8_t *got = NULL;
    size_t n = 0;
    bool exists = false;
    CHECK(ember_file_read(path, sizeof bytes, &got, &n, &exists) && n == sizeof bytes && !memcmp(got, bytes, n));
    ember_free(got);
    CHECK(ember_file_replace(path, "other", 5)); /* replaced again: the new bytes only */
    CHECK(ember_file_read(path, 100, &got, &n, &exists) && n == 5 && !memcmp(got, "other", 5));
    ember_free(got);
    CHECK(!ember_file_read(path, 4, &got, &n, &exists) && exists && !got);       /* larger than asked */
    CHECK(!ember_file_read(nested, 100, &got, &n, &exists) || n == 0);            /* a folder: nothing read */
    snprintf(nested + strlen(nested), sizeof nested - strlen(nested), "/none");
    CHECK(!ember_file_read(nested, 100, &got, &n, &exists) && !exists);           /* not there */
    FILE *f = ember_fopen(utf8, "wb");
    CHECK(f && fwrite(bytes, 1, 100, f) == 100);
    CHECK(f && !ember_is_terminal(f));
    if (f) fclose(f);
    CHECK(ember_path_is_dir(dir) && !ember_path_is_dir(utf8) && !ember_path_is_dir(nested));
    char other[800];
    snprintf(other, sizeof other, "%s/a/b/../b/c/t\xC3\xABst-\xE2\x82\xAC.bin", dir); /* another spelling */
    CHECK(ember_same_file(utf8, other) && ember_same_file(utf8, utf8));
    CHECK(!ember_same_file(utf8, path) && !ember_same_file(utf8, nested) && !ember_same_file(nested, nested));

    ember_file_map m;
    ember_err err = {{0}};
    CHECK(ember_file_map_open(utf8, &m, &err) == EMBER_OK && m.size == 100 && !memcmp(m.data, bytes, 100));
    ember_file_map_drop(m.data, m.size); /* whole pages only, so here none: the bytes stay */
    CHECK(m.data && !memcmp(m.data, bytes, 100));
    ember_file_map_close(&m);
    CHECK(m.data == NULL);
    CHECK(ember_file_replace(path, "", 0));
    CHECK(ember_file_map_open(path, &m, &err) == EMBER_ERR_FORMAT && strstr(err.msg, "empty"));
    CHECK(ember_file_map_open(dir, &m, &err) == EMBER_ERR_IO && strstr(err.msg, "directory"));
    CHECK(ember_file_map_open(nested, &m, &err) == EMBER_ERR_IO && strstr(err.msg, "cannot open"));
    char cache[1024];
    if (ember_cache_dir(cache, sizeof cache)) CHECKF(strlen(cache) > 6 && !strcmp(cache + strlen(cache) - 5, "ember"),
                                                     "cache folder %s", cache);
}

/* The machine: memory, and a sleep that lasts at least what was asked. */
static void test_machine(void)
{
    CHECKF(ember_memory_bytes() >= (64ull << 20), "physical memory %llu bytes", (unsigned long long)ember_memory_bytes());
    double t0 = ember_now_ms();
    ember_sleep_ms(20);
    double slept = ember_now_ms() - t0;
    CHECKF(slept >= 19.5, "slept %.2f ms of 20", slept);
    ember_sleep_ms(0); /* and these return */
    ember_sleep_ms(-5);
}

int main(void)
{
    test_machine();
    test_threads();
    test_files();
    return tu_finish("test_os");
}
