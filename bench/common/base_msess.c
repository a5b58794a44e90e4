/* Baseline 1: the Go VMSession design, a mutex per session and every op run
 * on the submitting thread while holding it. */
#include "bench.h"

int bench_msess_init(bench_msess *s)
{
    s->ops = 0;
    return pthread_mutex_init(&s->mu, NULL) == 0 ? 0 : -1;
}

void bench_msess_destroy(bench_msess *s)
{
    pthread_mutex_destroy(&s->mu);
}

int bench_msess_submit(bench_msess *s, const accel_op *op)
{
    pthread_mutex_lock(&s->mu);
    int rc = op->fn(NULL, op->arg);
    s->ops++;
    pthread_mutex_unlock(&s->mu);
    if (op->done)
        op->done(op->arg, rc);
    return rc;
}
