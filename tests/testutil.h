/* testutil.h — tiny helpers shared by the test programs: checks that count failures,
 * seeded random numbers, relative-error comparison and paths from the environment. */
#ifndef EMBER_TESTUTIL_H
#define EMBER_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ember.h"

extern int tu_failures;

#define CHECK(cond) do { if (!(cond)) { tu_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECKF(cond, ...) do { if (!(cond)) { tu_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* Deterministic generator (splitmix64). */
typedef struct { uint64_t s; } tu_rng;
uint64_t tu_next(tu_rng *r);
float tu_uniform(tu_rng *r, float lo, float hi);
void tu_fill(tu_rng *r, float *x, size_t n, float lo, float hi);

/* max_i |a-b| / max(max_i |b|, tiny): the relative error of a against b. */
double tu_rel_err(const float *a, const float *b, size_t n);

/* Environment helpers: EMBER_BIN, EMBER_SHARED, EMBER_TEST_TMP (or /tmp). */
const char *tu_ember_bin(void);
const char *tu_shared_dir(void);   /* NULL when ../shared is absent */
const char *tu_tmp_dir(void);
int tu_validation(void);           /* EMBER_VALIDATION set to 1 */
/* EMBER_TEST_MEMORY=discrete (set by ctest for the *_discrete entries): the memory mode
 * the tests load models with (EMBER_MEMORY_DISCRETE: staging copies, as on a discrete
 * GPU); else EMBER_MEMORY_AUTO. Read by the tests only, never by the library. */
ember_memory_mode tu_memory_mode(void);
/* EMBER_TEST_SUBGROUP_REPEAT=1 (set by ctest for the *_sg4 and *_sg16 entries, which run
 * a kernel test again at another lavapipe subgroup size): the run checks only the passes
 * whose kernels use subgroup operations, since the others are the same shaders the run at
 * the default size checked (tests/CMakeLists.txt). */
bool tu_subgroup_repeat(void);

/* Runs a shell command, captures up to cap-1 bytes of stdout into out (NUL-terminated),
 * returns the exit status (or -1). */
int tu_run(const char *cmd, char *out, size_t cap);
/* Runs `ember ARGS` (EMBER_BIN); true when it exits 0, else prints its exit status and
 * the start of its output. */
bool tu_ember(const char *args);

/* Chi-square: tu_gamma_q is the regularized upper incomplete gamma Q(a, x);
 * tu_chi2_sf(x, k) = P(X > x) for k degrees of freedom; tu_chi2_test is Pearson's test of
 * counts against probabilities (bins expecting < 5 pooled), returning the p-value. */
double tu_gamma_q(double a, double x);
double tu_chi2_sf(double x, double k);
double tu_chi2_test(const uint64_t *counts, const double *p, size_t n, uint64_t total);

/* The first "tokens": [...] array of a JSON text (at most cap ids; returns the count), and
 * the number after "key": (-1 when absent). Enough for the CLI's own --json output. */
size_t tu_json_tokens(const char *json, uint32_t *out, size_t cap);
double tu_json_num(const char *json, const char *key);

/* Runs `ember make-test-model PATH ARGS`; returns its exit status, with its output
 * (stderr included) copied to msg (may be NULL). */
int tu_make_model_rc(const char *path, const char *args, char *msg, size_t cap);
/* The same, checked: a failure names the arguments and the tool's message. */
bool tu_make_model(const char *path, const char *args);

/* The families of tests/data/families.txt: each a name and its make-test-model options
 * (docs/models.md). Returns how many it read into out (at most cap); 0 when the file is
 * missing (checked). */
typedef struct tu_family {
    char name[32];
    char args[480];
} tu_family;
int tu_families(tu_family *out, int cap);

/* Prints the summary line and returns the process exit code. */
int tu_finish(const char *name);
/* Prints "SKIP: why" and returns 77 (ctest's skip code). */
int tu_skip(const char *why);
/* For a test whose remaining part needs ../shared, which is absent: tu_finish when a
 * check already failed, else a skip saying what was not checked. */
int tu_finish_without_shared(const char *name, const char *not_checked);

#endif
