/*
 * A worker thread that times an announced wait keeps its own
 * /proc/thread-self/schedstat open (compensate.c: the wait's credit is
 * its time asleep, wall less CPU less run delay) and closes it when it
 * leaves: runtimes created and destroyed one after another leave no
 * descriptor behind.
 *
 * Promises: 4
 */
#define _GNU_SOURCE /* nanosleep, clock_gettime (core_util.h) */
#include <criterion/criterion.h>

#include <dirent.h>
#include <time.h>

#include <accel/accel.h>

#include "core_util.h"
#include "unit_watchdog.h"

UNIT_WATCHDOG_SUITE(worker_fds);

/* An op that announces a short wait: its worker opens its schedstat. */
static int announced_nap(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    cr_assert_eq(accel_blocking_begin(), ACCEL_OK);
    tu_nap_us(100);
    cr_assert_eq(accel_blocking_end(), ACCEL_OK);
    return 0;
}

/* Open file descriptors of the process (/proc/self/fd's entries). */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    cr_assert_not_null(d);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

Test(worker_fds, workers_leave_no_descriptor_open, .timeout = 120)
{
    int before = 0;
    for (int round = 0; round < 21; round++) {
        if (round == 1)
            before = open_fds(); /* after one round: anything opened once */
        unit_step("a runtime's announced waits, then its destroy");
        accel_runtime *rt = tu_runtime_nodetect(1);
        accel_session *s = tu_open(rt, "nap", 64, 0);
        for (int i = 0; i < 4; i++)
            cr_assert_eq(accel_submit(s, &(accel_op){.fn = announced_nap},
                                      ACCEL_FOREVER),
                         ACCEL_OK);
        cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
        accel_session_release(s);
        cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    }
    unit_step("count the descriptors");
    int after = open_fds();
    cr_assert_eq(after, before, "%d descriptors open after 20 runtimes, %d before",
                 after, before);
}
