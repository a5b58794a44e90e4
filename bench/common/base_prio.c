/*
 * Baseline 3: a strict-priority thread pool, what a node operator would
 * build instead of accel to honour priorities: one mutex, one FIFO per
 * priority value, W workers that always pop the highest non-empty level.
 * FIFO within a level; lower levels run only when every higher level is
 * empty (so they can starve). Queues grow as needed: admission is the
 * caller's business.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#define PRIO_LEVELS_MAX 16

typedef struct prio_level {
    uint32_t prio;
    accel_op *q;
    size_t cap, head, count; /* FIFO [head, head+count) mod cap */
} prio_level;

struct bench_prio {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, drained;
    prio_level lv[PRIO_LEVELS_MAX]; /* sorted by prio, highest first */
    size_t nlv, queued, running;
    unsigned idle, nworkers;
    bool stop;
    pthread_t *workers;
};

static void *prio_worker(void *arg)
{
    bench_prio *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->queued == 0 && !p->stop) {
            p->idle++;
            pthread_cond_wait(&p->not_empty, &p->mu);
            p->idle--;
        }
        if (p->queued == 0 && p->stop)
            break;
        prio_level *l = p->lv;
        while (l->count == 0)
            l++;
        accel_op op = l->q[l->head];
        l->head = (l->head + 1) % l->cap;
        l->count--;
        p->queued--;
        p->running++;
        pthread_mutex_unlock(&p->mu);
        int rc = op.fn(NULL, op.arg);
        if (op.done)
            op.done(op.arg, rc);
        pthread_mutex_lock(&p->mu);
        p->running--;
        if (p->queued == 0 && p->running == 0)
            pthread_cond_broadcast(&p->drained);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int bench_prio_create(unsigned workers, bench_prio **out)
{
    bench_prio *p = calloc(1, sizeof *p);
    if (!p || workers == 0 || !(p->workers = calloc(workers, sizeof *p->workers))) {
        free(p);
        return -1;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->not_empty, NULL);
    pthread_cond_init(&p->drained, NULL);
    for (unsigned i = 0; i < workers; i++) {
        if (pthread_create(&p->workers[i], NULL, prio_worker, p) != 0) {
            p->nworkers = i;
            bench_prio_destroy(p);
            return -1;
        }
    }
    p->nworkers = workers;
    *out = p;
    return 0;
}

/* With mu held: the level of prio, created (kept sorted) if new. */
static prio_level *level_locked(bench_prio *p, uint32_t prio)
{
    size_t i = 0;
    while (i < p->nlv && p->lv[i].prio > prio)
        i++;
    if (i < p->nlv && p->lv[i].prio == prio)
        return &p->lv[i];
    if (p->nlv == PRIO_LEVELS_MAX)
        return NULL;
    memmove(&p->lv[i + 1], &p->lv[i], (p->nlv - i) * sizeof p->lv[0]);
    p->nlv++;
    p->lv[i] = (prio_level){.prio = prio};
    return &p->lv[i];
}

static int grow(prio_level *l)
{
    size_t ncap = l->cap ? 2 * l->cap : 256;
    accel_op *nq = malloc(ncap * sizeof *nq);
    if (!nq)
        return -1;
    for (size_t k = 0; k < l->count; k++)
        nq[k] = l->q[(l->head + k) % l->cap];
    free(l->q);
    l->q = nq;
    l->cap = ncap;
    l->head = 0;
    return 0;
}

int bench_prio_submit(bench_prio *p, uint32_t prio, const accel_op *op)
{
    pthread_mutex_lock(&p->mu);
    prio_level *l = level_locked(p, prio);
    if (!l || (l->count == l->cap && grow(l) != 0)) {
        pthread_mutex_unlock(&p->mu);
        return -1;
    }
    l->q[(l->head + l->count) % l->cap] = *op;
    l->count++;
    p->queued++;
    if (p->idle)
        pthread_cond_signal(&p->not_empty);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

void bench_prio_destroy(bench_prio *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    while (p->queued != 0 || p->running != 0)
        pthread_cond_wait(&p->drained, &p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->not_empty);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->nworkers; i++)
        pthread_join(p->workers[i], NULL);
    for (size_t i = 0; i < p->nlv; i++)
        free(p->lv[i].q);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->not_empty);
    pthread_cond_destroy(&p->drained);
    free(p->workers);
    free(p);
}
