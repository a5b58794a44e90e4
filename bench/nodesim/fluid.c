/* The fluid weighted-fair reference (fluid.h): an event loop over
 * arrivals and completions; between two events the rates are constant. */
#include "fluid.h"

#include <stdbool.h>
#include <stdlib.h>

typedef struct fl_chain {
    size_t arr;        /* next arrival */
    size_t head, tail; /* admitted ops q[head..tail), the head in service */
    size_t *q;
    double rem;        /* work left of the head op, when started */
    double wake;       /* the head op's wait ends (its work begins) */
    bool started;
    double rate;       /* ns of work per ns, until the next event */
} fl_chain;

/* Weighted max-min split of the capacity among the chains in service and
 * not waiting at `now`, each capped at one worker's part. */
static void split(const ns_fluid_chain *c, fl_chain *s, size_t n, double capacity,
                  unsigned workers, double now)
{
    double left = capacity, one = capacity / workers, wsum = 0;
    for (size_t i = 0; i < n; i++) {
        s[i].rate = -1; /* -1: not fixed yet */
        if (s[i].started && s[i].wake <= now)
            wsum += c[i].weight;
        else
            s[i].rate = 0;
    }
    while (wsum > 0 && left > 0) {
        double level = left / wsum;
        bool capped = false;
        for (size_t i = 0; i < n; i++)
            if (s[i].rate < 0 && c[i].weight * level >= one) {
                s[i].rate = one;
                left -= one;
                wsum -= c[i].weight;
                capped = true;
            }
        if (!capped) {
            for (size_t i = 0; i < n; i++)
                if (s[i].rate < 0)
                    s[i].rate = c[i].weight * level;
            return;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (s[i].rate < 0)
            s[i].rate = 0;
}

int ns_fluid_serve(const ns_fluid_chain *c, size_t n, double capacity, unsigned workers,
                   uint64_t depth, double window_ns, double *done_ns, uint64_t *lost,
                   ns_fluid_outcome *out)
{
    uint64_t nlost = 0;
    /* Work below this is rounding: the op is complete. */
    const double tol = 1e-3;
    fl_chain *s = calloc(n ? n : 1, sizeof *s);
    if (!s)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        done_ns[i] = 0;
        if (out)
            out[i] = (ns_fluid_outcome){0, 0, 0};
        s[i].q = malloc((c[i].n ? c[i].n : 1) * sizeof *s[i].q);
        if (!s[i].q)
            rc = -1;
    }
    if (workers == 0)
        workers = 1;
    double now = 0;
    while (rc == 0 && capacity > 0) {
        for (size_t i = 0; i < n; i++) {
            fl_chain *f = &s[i];
            const ns_fluid_op *ops = c[i].ops;
            for (; f->arr < c[i].n && ops[f->arr].t <= now; f->arr++)
                if (f->tail - f->head < depth) {
                    f->q[f->tail++] = f->arr;
                } else {
                    nlost++;
                    if (out)
                        out[i].missed++;
                }
            /* The next op starts now, unless its deadline has passed. */
            while (!f->started && f->head < f->tail) {
                const ns_fluid_op *op = &ops[f->q[f->head]];
                if (now > op->deadline) {
                    nlost++;
                    if (out)
                        out[i].missed++;
                    f->head++;
                    continue;
                }
                f->started = true;
                f->rem = op->cost;
                f->wake = now + op->wait;
            }
        }
        split(c, s, n, capacity, workers, now);
        double next = window_ns, arrive = window_ns;
        size_t first = n; /* the chain whose op completes first, if before any arrival */
        for (size_t i = 0; i < n; i++) {
            if (s[i].arr < c[i].n && c[i].ops[s[i].arr].t < arrive)
                arrive = c[i].ops[s[i].arr].t;
            if (s[i].started && s[i].wake > now && s[i].wake < arrive)
                arrive = s[i].wake; /* an event that completes nothing */
            if (s[i].rate > 0 && now + s[i].rem / s[i].rate < next) {
                next = now + s[i].rem / s[i].rate;
                first = i;
            }
        }
        if (arrive < next) {
            next = arrive;
            first = n;
        }
        bool end = next >= window_ns;
        if (end)
            next = window_ns;
        double dt = next > now ? next - now : 0;
        for (size_t i = 0; i < n; i++) {
            fl_chain *f = &s[i];
            if (f->rate <= 0)
                continue;
            f->rem -= f->rate * dt;
            if (!end && (f->rem <= tol || i == first)) {
                const ns_fluid_op *op = &c[i].ops[f->q[f->head]];
                done_ns[i] += op->cost;
                if (out) {
                    *(next <= op->deadline ? &out[i].ontime : &out[i].missed) += 1;
                    out[i].late += next > op->deadline;
                }
                f->head++;
                f->started = false;
            }
        }
        now = next;
        if (end)
            break;
    }
    for (size_t i = 0; out && rc == 0 && i < n; i++) {
        /* Unfinished at the end: a miss if its deadline passed (admitted
         * or not yet arrived, as the systems count an op skipped at the
         * cut). */
        for (size_t k = s[i].head; k < s[i].tail; k++)
            if (c[i].ops[s[i].q[k]].deadline < window_ns)
                out[i].missed++;
        for (size_t k = s[i].arr; k < c[i].n; k++)
            if (c[i].ops[k].deadline < window_ns)
                out[i].missed++;
    }
    for (size_t i = 0; i < n; i++)
        free(s[i].q);
    free(s);
    if (lost)
        *lost = nlost;
    return rc;
}

/* Work the fluid server completes by horizon_ns; -1 when out of memory. */
static double work_at(const ns_fluid_chain *c, size_t n, double capacity, unsigned workers,
                      uint64_t depth, double horizon_ns, double *done_ns, uint64_t *lost,
                      ns_fluid_outcome *out)
{
    if (ns_fluid_serve(c, n, capacity, workers, depth, horizon_ns, done_ns, lost, out) != 0)
        return -1;
    double t = 0;
    for (size_t i = 0; i < n; i++)
        t += done_ns[i];
    return t;
}

double ns_fluid_reference(const ns_fluid_chain *c, size_t n, double capacity, unsigned workers,
                          uint64_t depth, double window_ns, double cut_ns, double target,
                          double *done_ns, uint64_t *lost, ns_fluid_outcome *out)
{
    double got = work_at(c, n, capacity, workers, depth, window_ns, done_ns, lost, NULL);
    if (got > 0 && target > 0) {
        double lo = 0, hi = capacity;
        for (int k = 0; k < 8 && got >= 0 && got < target; k++) {
            lo = hi;
            hi *= 1.25;
            got = work_at(c, n, hi, workers, depth, window_ns, done_ns, NULL, NULL);
        }
        for (int it = 0; it < 16 && got >= target; it++) {
            double mid = (lo + hi) / 2;
            double g = work_at(c, n, mid, workers, depth, window_ns, done_ns, NULL, NULL);
            if (g < 0) {
                got = -1;
                break;
            }
            if (g < target)
                lo = mid;
            else
                hi = mid;
        }
        capacity = hi;
        if (got >= 0)
            got = work_at(c, n, capacity, workers, depth, window_ns, done_ns, lost, NULL);
    } else if (got >= 0 && out) {
        /* Nothing done in the window, by the system or the fluid server:
         * no capacity to calibrate on, and no outcome to count. */
        for (size_t i = 0; i < n; i++)
            out[i] = (ns_fluid_outcome){0, 0, 0};
        return capacity;
    }
    if (got < 0)
        return -1;
    if (out) {
        /* Served on to the cut: arrivals all fall in the window, so only
         * the drain differs from the window's run. */
        double *drained = malloc((n ? n : 1) * sizeof *drained);
        if (!drained)
            return -1;
        double horizon = cut_ns > window_ns ? cut_ns : window_ns;
        got = work_at(c, n, capacity, workers, depth, horizon, drained, NULL, out);
        free(drained);
        if (got < 0)
            return -1;
    }
    return capacity;
}
