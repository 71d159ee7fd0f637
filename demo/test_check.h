/* test_check.h — the CHECK of the demo's windowless tests (test_chat_text.c,
 * test_stats.c): a failed condition is printed with its line and counted in `failures`,
 * which the test's main returns. */
#ifndef DEMO_TEST_CHECK_H
#define DEMO_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                     \
        }                                                                   \
    } while (0)

#endif
