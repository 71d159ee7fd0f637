/* minimal_stubs.c — what an EMBER_MINIMAL build (CMakeLists.txt) links in place of
 * server/ (libmicrohttpd, cJSON) and tools/bench/bench_http.c (libcurl): `ember serve` and
 * `ember bench --url` say they were not built. bench/gpu-check.sh builds this way on a
 * machine that has none of those libraries. */
#include <stdio.h>
#include <string.h>

#include "tools/bench/bench_http.h"
#include "tools/commands.h"

static const char not_built[] = "ember: built with EMBER_MINIMAL (no libmicrohttpd, cJSON or libcurl): %s is not available\n";

/* --help still answers (exit 0), as every command's does (docs/cli.md). */
int ember_cmd_serve(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: ember serve -m MODEL.gguf [options]\n");
            printf(not_built, "serve");
            return 0;
        }
    fprintf(stderr, not_built, "serve");
    return 1;
}

char *bench_http_pick_model(const bench_http_opts *o, uint32_t *vocab)
{
    (void)o;
    *vocab = 0;
    fprintf(stderr, not_built, "bench --url");
    return NULL;
}

bool bench_http_run(const bench_http_opts *o, bench_http_req *r, uint32_t n, double *duration_s)
{
    (void)o;
    (void)r;
    (void)n;
    *duration_s = 0;
    fprintf(stderr, not_built, "bench --url");
    return false;
}

void bench_http_free(bench_http_req *r, uint32_t n)
{
    (void)r;
    (void)n;
}
