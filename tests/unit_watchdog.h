/*
 * The stress watchdog (stress_watchdog.h) in a Criterion suite: each wait
 * of a test that can hang names its step (unit_step), so a hang fails the
 * test fast and says where; Criterion's .timeout names only the test.
 * Criterion runs each test in its own process, so the watchdog is the
 * test's: UNIT_WATCHDOG_SUITE(suite) starts it in the suite's .init and
 * stands it down in the suite's .fini (a test's own .init and .fini run
 * inside those, so their waits can name steps too).
 *
 * A step may take 60 s, or 4/5 of its test's .timeout where that is
 * shorter: the watchdog must speak before Criterion kills the test. The
 * limits are watchdogs, not thresholds: a step past its limit would have
 * failed the test on its .timeout anyway.
 */
#ifndef ACCEL_TESTS_UNIT_WATCHDOG_H
#define ACCEL_TESTS_UNIT_WATCHDOG_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "stress_watchdog.h"

#ifdef ACCEL_TESTS_CRITERION_SHIM_H
/* Over tests/criterion_shim (the fault sweep where Criterion is absent):
 * no suite hooks and no test data there. Each test runs in a child of its
 * own, so the first step of a test starts that child's watchdog; steps
 * may take 60 s (the shim's alarm() at the test's .timeout stays the
 * bound of the whole test). */
static inline void unit_step(const char *name)
{
    static bool started; /* per child: the parent never enters a step */
    if (!started) {
        started = true;
        watchdog_start("unit test (criterion shim)");
    }
    watchdog_step(name, 60);
}

#define UNIT_WATCHDOG_SUITE(suite) extern int unit_watchdog_suite_##suite
#else
static double unit_step_limit_s = 60;
static char unit_watchdog_test[256]; /* "suite::test", printed with the step */

static inline void unit_watchdog_init(void)
{
    const struct criterion_test *t = criterion_current_test;
    /* Criterion lays its tests' extra data out in a section, not always
     * aligned for its type: copied out bytewise, not read in place (which
     * UBSan reports as a misaligned access). */
    struct criterion_test_extra_data data;
    memcpy(&data, (const void *)t->data, sizeof(data));
    double timeout = data.timeout;
    unit_step_limit_s = timeout > 0 && timeout * 0.8 < 60 ? timeout * 0.8 : 60;
    snprintf(unit_watchdog_test, sizeof(unit_watchdog_test), "%s::%s",
             t->category, t->name);
    watchdog_start(unit_watchdog_test);
}

static inline void unit_watchdog_fini(void)
{
    watchdog_step("the test returned", 1e9);
}

/* Enters step `name` of the running test (a string that outlives it). */
static inline void unit_step(const char *name)
{
    watchdog_step(name, unit_step_limit_s);
}

#define UNIT_WATCHDOG_SUITE(suite)                                           \
    TestSuite(suite, .init = unit_watchdog_init, .fini = unit_watchdog_fini)
#endif /* ACCEL_TESTS_CRITERION_SHIM_H */

#endif
