/*
 * The main() of every Check suite: TAP on stdout for meson (protocol
 * 'tap'), one line per test case (each iteration of a loop test is one),
 * so meson counts each check.  Check's own summary would be a non-TAP line
 * on stdout, hence CK_SILENT: failures are on their "not ok" lines.
 */
#ifndef VPMU_TESTS_CHECK_MAIN_H
#define VPMU_TESTS_CHECK_MAIN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/* Run @s, print its TAP, exit status 0 only if every test case passed. */
static inline int run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    srunner_set_tap(sr, "-");
    srunner_run_all(sr, CK_SILENT);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/*
 * The whole suite cannot run on this host: a TAP plan of no tests with
 * @why.  Exit status 0: meson's TAP runner calls any other status an
 * error, 77 included.
 */
static inline int skip_suite(const char *why)
{
    printf("1..0 # SKIP %s\n", why);
    return EXIT_SUCCESS;
}

#endif /* VPMU_TESTS_CHECK_MAIN_H */
