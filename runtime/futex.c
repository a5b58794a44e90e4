#include "futex.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

bool accel__membarrier_ok;

int accel__futex_wait(_Atomic uint32_t *word, uint32_t expected,
                      int64_t timeout_ns)
{
    struct timespec ts, *tsp = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = timeout_ns / 1000000000;
        ts.tv_nsec = timeout_ns % 1000000000;
        tsp = &ts;
    }
    long r = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE,
                     expected, tsp, NULL, 0);
    if (r == -1 && errno == ETIMEDOUT)
        return -1;
    return 0;
}

void accel__futex_wake(_Atomic uint32_t *word, int n)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static long membarrier_sys(int cmd, unsigned flags)
{
    return syscall(__NR_membarrier, cmd, flags, 0);
}

static accel__membarrier_fn membarrier_call = membarrier_sys;

void accel__fence_set_membarrier(accel__membarrier_fn fn)
{
    membarrier_call = fn ? fn : membarrier_sys;
}

static pthread_once_t fence_once = PTHREAD_ONCE_INIT;

/* Decides the scheme for good: membarrier only if it is offered, the
 * process registers, and one expedited barrier succeeds. */
static void fence_setup(void)
{
    long q = membarrier_call(MEMBARRIER_CMD_QUERY, 0);
    if (q < 0 || !(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
        return;
    if (membarrier_call(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) != 0)
        return;
    if (membarrier_call(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0)
        return;
    accel__membarrier_ok = true;
}

void accel__fence_init(void) { pthread_once(&fence_once, fence_setup); }

void accel__fence_cold(void)
{
    if (!accel__membarrier_ok) {
        /* Fence scheme (decided at init): accel__fence_hot() is a seq_cst
         * fence too, and this one pairs with it (store-buffer litmus, both
         * sides fenced). */
        atomic_thread_fence(memory_order_seq_cst);
        return;
    }
    if (membarrier_call(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0)
        return;
    /* The hot sides only stop the compiler: a fence here alone would not
     * pair with them, so a wake-up could be lost. Registered expedited
     * membarrier does not fail; if it ever does, stop loudly. */
    fputs("accel: membarrier failed after it worked at init; aborting\n",
          stderr);
    abort();
}
