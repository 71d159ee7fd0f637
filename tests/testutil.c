/* testutil.c — see testutil.h. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "platform/os_file.h"
#include "platform/os_process.h"

int tu_failures = 0;

uint64_t tu_next(tu_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float tu_uniform(tu_rng *r, float lo, float hi)
{
    return lo + (hi - lo) * (float)((tu_next(r) >> 40) * (1.0 / 16777216.0));
}

void tu_fill(tu_rng *r, float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) x[i] = tu_uniform(r, lo, hi);
}

double tu_rel_err(const float *a, const float *b, size_t n)
{
    double num = 0, den = 1e-30;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > num || isnan(d)) num = isnan(d) ? INFINITY : d;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return num / den;
}

const char *tu_ember_bin(void)
{
    const char *b = getenv("EMBER_BIN");
    return b ? b : "ember";
}

const char *tu_shared_dir(void)
{
    const char *d = getenv("EMBER_SHARED");
    return d && ember_path_is_dir(d) ? d : NULL;
}

const char *tu_tmp_dir(void)
{
    const char *d = getenv("EMBER_TEST_TMP");
    return d ? d : "/tmp";
}

int tu_validation(void)
{
    const char *v = getenv("EMBER_VALIDATION");
    return v && strcmp(v, "1") == 0;
}

ember_memory_mode tu_memory_mode(void)
{
    const char *v = getenv("EMBER_TEST_MEMORY");
    return v && strcmp(v, "discrete") == 0 ? EMBER_MEMORY_DISCRETE : EMBER_MEMORY_AUTO;
}

bool tu_subgroup_repeat(void)
{
    const char *v = getenv("EMBER_TEST_SUBGROUP_REPEAT");
    return v && strcmp(v, "1") == 0;
}

int tu_run(const char *cmd, char *out, size_t cap) { return ember_process_run(cmd, out, cap); }

bool tu_ember(const char *args)
{
    char cmd[3072], out[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", tu_ember_bin(), args);
    int rc = tu_run(cmd, out, sizeof out);
    if (rc != 0) printf("ember %s: exit %d: %s\n", args, rc, out);
    return rc == 0;
}

int tu_make_model_rc(const char *path, const char *args, char *msg, size_t cap)
{
    char cmd[2048], out[1024];
    snprintf(cmd, sizeof cmd, "'%s' make-test-model '%s' %s 2>&1", tu_ember_bin(), path, args);
    int rc = tu_run(cmd, out, sizeof out);
    if (msg) snprintf(msg, cap, "%s", out);
    return rc;
}

bool tu_make_model(const char *path, const char *args)
{
    char out[1024];
    int rc = tu_make_model_rc(path, args, out, sizeof out);
    CHECKF(rc == 0, "make-test-model %s: exit %d: %.300s", args, rc, out);
    return rc == 0;
}

int tu_finish(const char *name)
{
    if (tu_failures) {
        printf("%s: %d check(s) failed\n", name, tu_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

int tu_skip(const char *why)
{
    printf("SKIP: %s\n", why);
    return 77;
}

int tu_finish_without_shared(const char *name, const char *not_checked)
{
    if (tu_failures) return tu_finish(name);
    printf("SKIP: ../shared is absent: %s\n", not_checked);
    return 77;
}

/* ---- chi-square --------------------------------------------------------------- */

/* Regularized upper incomplete gamma Q(a, x): a series for P when x < a + 1, else a
 * continued fraction (modified Lentz), as in Numerical Recipes. */
double tu_gamma_q(double a, double x)
{
    if (x <= 0) return 1;
    double front = exp(-x + a * log(x) - lgamma(a));
    if (x < a + 1) {
        double ap = a, term = 1 / a, sum = term;
        for (int i = 0; i < 10000 && fabs(term) > fabs(sum) * 1e-16; i++) {
            ap += 1;
            term *= x / ap;
            sum += term;
        }
        return 1 - sum * front;
    }
    double tiny = 1e-300, b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
    for (int i = 1; i < 10000; i++) {
        double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (fabs(d) < tiny) d = tiny;
        c = b + an / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        h *= d * c;
        if (fabs(d * c - 1) < 1e-16) break;
    }
    return front * h;
}

/* P(X > x) for X chi-square with k degrees of freedom. */
double tu_chi2_sf(double x, double k) { return tu_gamma_q(k / 2, x / 2); }

/* Pearson's test of counts against probabilities. Tokens with p = 0 must have no draws
 * (counted as failures by the caller); bins expecting fewer than 5 are pooled. Returns
 * the p-value (1 when fewer than two bins). */
double tu_chi2_test(const uint64_t *counts, const double *p, size_t n, uint64_t total)
{
    double stat = 0, pool_o = 0, pool_e = 0, big_o = 0, big_e = 0;
    int bins = 0;
    for (size_t i = 0; i < n; i++) {
        double e = p[i] * (double)total, o = (double)counts[i];
        if (p[i] <= 0) continue;
        if (e < 5) {
            pool_o += o, pool_e += e;
            continue;
        }
        stat += (o - e) * (o - e) / e, bins++;
        if (e > big_e) big_o = o, big_e = e;
    }
    if (pool_e >= 5) {
        stat += (pool_o - pool_e) * (pool_o - pool_e) / pool_e, bins++;
    } else if (pool_e > 0 && big_e > 0) { /* fold the small pool into the largest bin */
        stat -= (big_o - big_e) * (big_o - big_e) / big_e;
        big_o += pool_o, big_e += pool_e;
        stat += (big_o - big_e) * (big_o - big_e) / big_e;
    }
    return bins < 2 ? 1 : tu_chi2_sf(stat, bins - 1);
}

/* ---- reading the CLI's --json output ------------------------------------------- */

size_t tu_json_tokens(const char *json, uint32_t *out, size_t cap)
{
    const char *p = strstr(json, "\"tokens\": [");
    size_t n = 0;
    if (!p) return 0;
    p += strlen("\"tokens\": [");
    while (*p && *p != ']' && n < cap) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p) break;
        out[n++] = (uint32_t)v;
        p = end;
        while (*p == ',' || *p == ' ') p++;
    }
    return n;
}

double tu_json_num(const char *json, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(json, k);
    return p ? atof(p + strlen(k)) : -1.0;
}

int tu_families(tu_family *out, int cap)
{
    char path[1024], line[1024];
    const char *src = getenv("EMBER_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/data/families.txt", src ? src : ".");
    FILE *f = fopen(path, "r");
    CHECKF(f != NULL, "cannot open %s", path);
    int n = 0;
    while (f && n < cap && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0] == '#' || line[0] == 0) continue;
        size_t k = strcspn(line, " ");
        snprintf(out[n].name, sizeof out[n].name, "%.*s", (int)k, line);
        snprintf(out[n].args, sizeof out[n].args, "%s", line + k + strspn(line + k, " "));
        n++;
    }
    if (f) fclose(f);
    return n;
}
