/* unit_test.h — the few macros the C unit tests share.
 *
 * Each test program calls CHECK(cond, …) as often as it likes and ends main
 * with `return unit_test_summary();`, which prints "N passed, N failed" and
 * exits non-zero when anything failed (automake's TESTS convention). */
#ifndef QUEUEFS_UNIT_TEST_H
#define QUEUEFS_UNIT_TEST_H

#include <stdio.h>
#include <string.h>

static int unit_passed, unit_failed;

#define CHECK(cond, ...) \
    do { \
        if (cond) { \
            unit_passed++; \
        } else { \
            unit_failed++; \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__); \
            fputc('\n', stderr); \
        } \
    } while (0)

/* CHECK_STR(got, want): two NUL-terminated strings are equal. */
#define CHECK_STR(got, want) \
    CHECK(strcmp((got), (want)) == 0, "got \"%s\", want \"%s\"", (got), (want))

static inline int
unit_test_summary(void)
{
    printf("%d passed, %d failed\n", unit_passed, unit_failed);
    return unit_failed ? 1 : 0;
}

#endif
