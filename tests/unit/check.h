/* The unit tests' one assertion: report a failed check with its place and go on, so that one
 * run lists every failure; check_status() is main's exit status. */
#ifndef SPECX_TEST_CHECK_H
#define SPECX_TEST_CHECK_H

#include <stdio.h>

static int check_failures;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);         \
            check_failures++;                                                                \
        }                                                                                    \
    } while (0)

static inline int check_status(void)
{
    if (check_failures)
        fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures ? 1 : 0;
}

#endif
