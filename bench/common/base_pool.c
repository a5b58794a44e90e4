/*
 * Baseline 2: a mutex+condvar FIFO thread pool. One bounded circular FIFO
 * under one mutex; workers sleep on not_empty, full submitters on not_full.
 * A submitter signals only when a worker is idle, as tuned pools do.
 */
#include "bench.h"

#include <stdlib.h>

struct bench_pool {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full, drained;
    accel_op *q;
    size_t cap, head, count;  /* FIFO [head, head+count) mod cap */
    size_t running;           /* popped, not yet completed */
    unsigned idle;            /* workers waiting on not_empty */
    unsigned full_waiters;
    bool stop;
    unsigned nworkers;
    pthread_t *workers;
};

static void *pool_worker(void *arg)
{
    bench_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->count == 0 && !p->stop) {
            p->idle++;
            pthread_cond_wait(&p->not_empty, &p->mu);
            p->idle--;
        }
        if (p->count == 0 && p->stop)
            break;
        accel_op op = p->q[p->head];
        p->head = (p->head + 1) % p->cap;
        p->count--;
        p->running++;
        if (p->full_waiters)
            pthread_cond_signal(&p->not_full);
        pthread_mutex_unlock(&p->mu);
        int rc = op.fn(NULL, op.arg);
        if (op.done)
            op.done(op.arg, rc);
        pthread_mutex_lock(&p->mu);
        p->running--;
        if (p->count == 0 && p->running == 0)
            pthread_cond_broadcast(&p->drained);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int bench_pool_create(unsigned workers, size_t capacity, bench_pool **out)
{
    bench_pool *p = calloc(1, sizeof *p);
    if (!p || workers == 0 || capacity == 0)
        goto fail;
    p->q = calloc(capacity, sizeof *p->q);
    p->workers = calloc(workers, sizeof *p->workers);
    if (!p->q || !p->workers)
        goto fail;
    p->cap = capacity;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->not_empty, NULL);
    pthread_cond_init(&p->not_full, NULL);
    pthread_cond_init(&p->drained, NULL);
    for (unsigned i = 0; i < workers; i++) {
        if (pthread_create(&p->workers[i], NULL, pool_worker, p) != 0) {
            p->nworkers = i;
            bench_pool_destroy(p);
            return -1;
        }
    }
    p->nworkers = workers;
    *out = p;
    return 0;
fail:
    if (p) {
        free(p->q);
        free(p->workers);
        free(p);
    }
    return -1;
}

/* Called with mu held: waits for room, then pushes as many as fit. */
static size_t push_locked(bench_pool *p, const accel_op *ops, size_t n)
{
    while (p->count == p->cap) {
        p->full_waiters++;
        pthread_cond_wait(&p->not_full, &p->mu);
        p->full_waiters--;
    }
    size_t k = 0;
    while (k < n && p->count < p->cap) {
        p->q[(p->head + p->count) % p->cap] = ops[k++];
        p->count++;
    }
    if (p->idle)
        k > 1 ? pthread_cond_broadcast(&p->not_empty) : pthread_cond_signal(&p->not_empty);
    return k;
}

int bench_pool_submit(bench_pool *p, const accel_op *op)
{
    pthread_mutex_lock(&p->mu);
    push_locked(p, op, 1);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

int bench_pool_submit_batch(bench_pool *p, const accel_op *ops, size_t n)
{
    pthread_mutex_lock(&p->mu);
    size_t done = 0;
    while (done < n)
        done += push_locked(p, ops + done, n - done);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

void bench_pool_drain(bench_pool *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->count != 0 || p->running != 0)
        pthread_cond_wait(&p->drained, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

size_t bench_pool_depth(bench_pool *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->count;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void bench_pool_destroy(bench_pool *p)
{
    if (!p)
        return;
    bench_pool_drain(p);
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->not_empty);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->nworkers; i++)
        pthread_join(p->workers[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->not_empty);
    pthread_cond_destroy(&p->not_full);
    pthread_cond_destroy(&p->drained);
    free(p->q);
    free(p->workers);
    free(p);
}
