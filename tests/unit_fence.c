/*
 * The asymmetric fence pair (runtime/futex.h) when membarrier is missing.
 *
 * The scheme is chosen once, at the first accel__fence_init(): a process
 * whose membarrier is unavailable must run with seq_cst fences on both the
 * hot and the cold side, and sleepers (sync, room waiters, parked workers)
 * must still be woken. A membarrier that fails after working at init must
 * not degrade to a one-sided fence: the cold side aborts. Criterion runs
 * each test in a fresh process, so the seam is set before anything of the
 * library ran.
 *
 * Promises: 6
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>

#include <linux/membarrier.h>

#include <accel/accel.h>

#include "core_util.h"
#include "unit_watchdog.h"
#include "futex.h"

/* A wait that hangs names its step (unit_watchdog.h). */
UNIT_WATCHDOG_SUITE(fence);

static long no_membarrier(int cmd, unsigned flags)
{
    (void)cmd;
    (void)flags;
    errno = ENOSYS;
    return -1;
}

static _Atomic int ran;

static int count_op(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
    return 0;
}

Test(fence, fallback_decided_at_init_and_wakes_sleepers, .timeout = 60)
{
    accel__fence_set_membarrier(no_membarrier);
    accel_runtime *rt = tu_runtime(2);
    cr_assert_not_null(rt);
    cr_assert(!accel__membarrier_ok, "membarrier scheme despite no membarrier");
    /* Depth 2: producers wait for room, the submitter waits in sync, and
     * the workers park between the rounds (the nap): every sleeper of the
     * Dekker pairs is exercised with both sides fenced. */
    accel_session *s = tu_open(rt, "fence", 2, 0);
    cr_assert_not_null(s);
    atomic_store(&ran, 0);
    int want = 0;
    unit_step("50 rounds of 20 submits to a ring of 2 and a sync");
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 20; i++) {
            accel_op op = {.fn = count_op};
            cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
            want++;
        }
        cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
        cr_assert_eq(atomic_load(&ran), want);
        tu_nap_us(200);
    }
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
    cr_assert(!accel__membarrier_ok, "the scheme changed after init");
}

/* A membarrier that works: init takes the membarrier scheme on any
 * kernel (one without membarrier included). */
static long ok_membarrier(int cmd, unsigned flags)
{
    (void)flags;
    return cmd == MEMBARRIER_CMD_QUERY ? MEMBARRIER_CMD_PRIVATE_EXPEDITED : 0;
}

Test(fence, membarrier_failing_after_init_aborts, .signal = SIGABRT)
{
    accel__fence_set_membarrier(ok_membarrier);
    accel__fence_init();
    /* a plain assertion failure is no SIGABRT: this fails the test */
    cr_assert(accel__membarrier_ok, "init took the membarrier scheme");
    accel__fence_set_membarrier(no_membarrier);
    accel__fence_cold(); /* must not return */
}
