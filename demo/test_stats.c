/* test_stats.c — the demo's figures without a window: the overall rate counts only the
 * time some reply was in flight, not the idle time between replies (a user typing).
 * Registered by demo/CMakeLists.txt (label unit). */
#include <math.h>
#include <stdio.h>

#include "stats.h"
#include "test_check.h"

static int near(double x, double want) { return fabs(x - want) < 1e-9; }

int main(void)
{
    gen_stats g = {0};
    CHECK(near(gen_stats_rate(&g, 5000), 0)); /* nothing generated yet */
    /* a reply of 100 tokens from 1 s to 2 s */
    gen_stats_begin(&g, 1000);
    g.tokens += 100;
    CHECK(near(gen_stats_rate(&g, 1500), 200)); /* in flight: counted to now */
    gen_stats_end(&g, 2000);
    CHECK(near(gen_stats_rate(&g, 2000), 100));
    /* eight idle seconds change nothing */
    CHECK(near(gen_stats_rate(&g, 10000), 100));
    /* two replies overlapping, 10 s to 11 s and 10.5 s to 12 s, 150 tokens: 2 s busy */
    gen_stats_begin(&g, 10000);
    gen_stats_begin(&g, 10500);
    g.tokens += 150;
    gen_stats_end(&g, 11000);
    CHECK(near(gen_stats_rate(&g, 11500), 250.0 * 1000.0 / 2500.0));
    gen_stats_end(&g, 12000);
    CHECK(near(gen_stats_rate(&g, 60000), 250.0 / 3.0));
    gen_stats_end(&g, 70000); /* an end without a begin is ignored */
    CHECK(near(gen_stats_rate(&g, 80000), 250.0 / 3.0));
    if (failures) fprintf(stderr, "test_demo_stats: %d check(s) failed\n", failures);
    else printf("test_demo_stats: all passed\n");
    return failures != 0;
}
