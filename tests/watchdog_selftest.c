/*
 * The stress programs' watchdog reports a hang readably: a step that
 * never ends makes it print the step's name, the program's own state
 * (watchdog_on_fire) and every thread's stack, the stuck frame among
 * them (ctest's PASS_REGULAR_EXPRESSION checks all three; the exit code,
 * 124, is the hang's).
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "stress_watchdog.h"

static void dump_state(void)
{
    fprintf(stderr, "selftest state: one thread parked on purpose\n");
}

/* The frame the stacks must show. noinline: a frame of its own. */
__attribute__((noinline)) static void selftest_stuck_here(void)
{
    for (;;)
        pause();
}

int main(void)
{
    watchdog_start("watchdog_selftest");
    watchdog_on_fire(dump_state);
    watchdog_step("a step that never ends", 0.2);
    selftest_stuck_here();
    return 0;
}
