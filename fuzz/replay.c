/* replay.c — main for a fuzz target built without libFuzzer: feeds it each file named on
 * the command line, or every file of each folder named (sorted, so runs compare), once.
 * tests/test_fuzz_regressions.sh runs the regression inputs and seeds through it with
 * the normal compiler. A broken invariant aborts, as under the fuzzer. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    size_t cap = 4096, n = 0, k;
    uint8_t *buf = malloc(cap);
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += k) == cap) buf = realloc(buf, cap *= 2);
    fclose(f);
    if (!buf) return 1;
    /* An exact-size copy, as libFuzzer gives: a read past the end is one past the input. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) return 1;
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int run_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    if (!d) return 1;
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        names = realloc(names, (n + 1) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) bad |= run_file(path), ++*count;
        free(names[i]);
    }
    free(names);
    return bad;
}

int main(int argc, char **argv)
{
    int bad = 0, count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no such file or folder: %s\n", argv[i]);
            bad = 1;
        } else if (S_ISDIR(st.st_mode)) {
            bad |= run_dir(argv[i], &count);
        } else {
            bad |= run_file(argv[i]);
            count++;
        }
    }
    printf("replay: %d inputs ran\n", count);
    return bad;
}
