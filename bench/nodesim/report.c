/* Summaries, the live per-chain table, the final comparison and JSON. */
#include "nodesim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static unsigned live_lines; /* lines printed by the last in-place refresh */

static uint64_t ld(const _Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* Op-cost done by chain i in the arrival window [t_start, t_end). */
static uint64_t window_service(const ns_run *r, unsigned i)
{
    uint64_t nb = r->duration_ns / r->bucket_ns, s = 0;
    for (uint64_t b = 0; b < nb && b < r->nbuckets; b++)
        s += ld(&r->chain[i].b_service[b]);
    return s;
}

/* Chain i's share of the op work the fair reference is compared with
 * (engine.c, fair_reference), over the slices done; while the first slice
 * runs (live view), of the work completed so far. */
double ns_share(const ns_run *r, unsigned i)
{
    double t = 0;
    for (unsigned k = 0; k < r->nchains; k++)
        t += r->slices_done ? r->chain[k].measured_ns : (double)ld(&r->chain[k].window_ns);
    double v = r->slices_done ? r->chain[i].measured_ns : (double)ld(&r->chain[i].window_ns);
    return t > 0 ? v / t : 0;
}

/* The earlier measure: share of all the work done for the run's ops,
 * the drain included (JSON only, beside its reference). */
static double share_run(const ns_run *r, unsigned i)
{
    uint64_t t = 0;
    for (unsigned k = 0; k < r->nchains; k++)
        t += ld(&r->chain[k].service_ns);
    return t ? (double)ld(&r->chain[i].service_ns) / (double)t : 0;
}

/* Counted ops: every arrival but those still unfinished at the cut whose
 * deadline had not passed (their outcome is unknown). */
static uint64_t counted(const ns_chain_run *cr)
{
    uint64_t c = ld(&cr->censored);
    return cr->offered > c ? cr->offered - c : 0;
}

double ns_chain_ontime(const ns_run *r, unsigned i)
{
    uint64_t n = counted(&r->chain[i]);
    return n ? 100.0 * (double)ld(&r->chain[i].ontime) / (double)n : -1;
}

void ns_summarize(const ns_run *r, ns_summary *s)
{
    memset(s, 0, sizeof *s);
    uint64_t cn[NS_NCLASS] = {0}, co[NS_NCLASS] = {0};
    bench_hist *h = calloc(NS_NCLASS, sizeof *h);
    double err = 0, err_mm = 0, work = 0, work_all = 0;
    for (unsigned i = 0; i < r->nchains; i++) {
        const ns_chain_run *cr = &r->chain[i];
        int k = ns_class(cr->cfg->priority);
        s->offered += cr->offered;
        s->ontime += ld(&cr->ontime);
        s->late += ld(&cr->late);
        s->dropped += ld(&cr->dropped);
        s->expired += ld(&cr->expired);
        s->censored += ld(&cr->censored);
        cn[k] += counted(cr);
        co[k] += ld(&cr->ontime);
        if (h)
            bench_hist_merge(&h[k], &cr->latency);
        err += fabs(ns_share(r, i) - r->ideal[i]);
        err_mm += fabs(share_run(r, i) - r->ideal_maxmin[i]);
        work += (double)window_service(r, i);
        work_all += (double)ld(&cr->service_ns);
    }
    s->completed = s->ontime + s->late;
    uint64_t n = s->offered - s->censored;
    s->ontime_pct = n ? 100.0 * (double)s->ontime / (double)n : 0;
    s->drop_pct = n ? 100.0 * (double)(s->dropped + s->expired) / (double)n : 0;
    for (int k = 0; k < NS_NCLASS; k++) {
        s->class_ontime[k] = cn[k] ? 100.0 * (double)co[k] / (double)cn[k] : -1;
        s->class_p50[k] = h ? bench_hist_pct(&h[k], 50) : 0;
        s->class_p99[k] = h ? bench_hist_pct(&h[k], 99) : 0;
    }
    free(h);
    unsigned sl = r->slices_done ? r->slices_done : 1;
    s->work_per_s = work / ((double)r->duration_ns * sl / 1e9);
    s->share_error = 50.0 * err; /* half the L1 distance, in percentage points */
    s->share_error_maxmin = 50.0 * err_mm;
    /* all op work done (the drain after the arrivals included) over the
     * process's CPU time from the start of the arrivals to the cut, which
     * covers the same span: workers, submitters, scheduling, everything
     * the system spent */
    s->work_per_cpu_s = r->cpu_ns ? work_all / (double)r->cpu_ns : 0;
}

void ns_fmt_lat(char *b, size_t n, uint64_t ns)
{
    if (ns == 0)
        snprintf(b, n, "-");
    else if (ns >= 10000000000ull)
        snprintf(b, n, "%.0f s", (double)ns / 1e9);
    else if (ns >= 1000000000ull)
        snprintf(b, n, "%.2f s", (double)ns / 1e9);
    else if (ns >= 10000000)
        snprintf(b, n, "%.0f ms", (double)ns / 1e6);
    else if (ns >= 1000000)
        snprintf(b, n, "%.1f ms", (double)ns / 1e6);
    else
        snprintf(b, n, "%.0f us", (double)ns / 1e3);
}

static void fmt_pct(char *b, size_t n, double v)
{
    if (v < 0)
        snprintf(b, n, "-");
    else if (v >= 99.95 && v < 100)
        snprintf(b, n, "99.9%%"); /* never round a miss up to 100 */
    else
        snprintf(b, n, "%.1f%%", v);
}

void ns_live_clear(void)
{
    live_lines = 0;
}

void ns_live_print(ns_run *r, bool first)
{
    static uint64_t last_t;
    uint64_t now = bench_now_ns();
    if (first)
        last_t = r->t_start;
    double dt = now > last_t ? (double)(now - last_t) / 1e9 : 1;
    last_t = now;
    if (live_lines)
        printf("\033[%uA", live_lines); /* back to the top of the table */
    unsigned lines = 0;
    printf("\033[K%-16s %-8s %8s %8s %8s %8s %7s %7s %6s %6s %6s\n", "chain", "priority",
           "deadline", "ops/s", "on time", "p99", "dropped", "expired", "queue", "share",
           "fair");
    lines++;
    for (unsigned i = 0; i < r->nchains; i++) {
        ns_chain_run *cr = &r->chain[i];
        uint64_t done = ld(&cr->ontime) + ld(&cr->late);
        double rate = (double)(done - cr->last_done) / dt;
        cr->last_done = done;
        uint64_t judged = done + ld(&cr->dropped) + ld(&cr->expired);
        char dl[16], p99[16], ot[16];
        ns_fmt_lat(dl, sizeof dl, cr->cfg->deadline_ns);
        ns_fmt_lat(p99, sizeof p99, bench_hist_pct(&cr->latency, 99));
        fmt_pct(ot, sizeof ot, judged ? 100.0 * (double)ld(&cr->ontime) / (double)judged : -1);
        /* The fair share is known once a slice has ended (fair_reference):
         * until then "-", later the slices done so far. */
        char fair[16];
        fmt_pct(fair, sizeof fair, r->slices_done ? 100 * r->ideal[i] : -1);
        printf("\033[K%-16s %-8s %8s %8.0f %8s %8s %7llu %7llu %6lld %5.1f%% %6s\n",
               cr->cfg->name, ns_priority_name(cr->cfg->priority), dl, rate, ot, p99,
               (unsigned long long)ld(&cr->dropped), (unsigned long long)ld(&cr->expired),
               (long long)atomic_load_explicit(&cr->outstanding, memory_order_relaxed),
               100 * ns_share(r, i), fair);
        lines++;
    }
    double elapsed = now > r->t_start ? (double)(now - r->t_start) / 1e9 : 0;
    double total = (double)r->duration_ns / 1e9;
    int bar = (int)(30 * (elapsed / total > 1 ? 1 : elapsed / total));
    printf("\033[K[%s] slice %u [%.*s%*s] %4.1f/%.1f s\n", ns_system_name[r->sys],
           r->slice + 1, bar, "##############################", 30 - bar, "",
           elapsed > total ? total : elapsed, total);
    lines++;
    live_lines = lines;
    fflush(stdout);
}

/* On time of the ops that arrived during a flood's burst, by group:
 * Critical, High, Normal, the Low chains that do not flood, the flooding
 * ones. -1 where a group had no ops. */
enum { NS_BURST_GROUPS = 5 };
static const char *const burst_group[NS_BURST_GROUPS] = {"critical", "high", "normal",
                                                         "low_other", "low_flooding"};

static void burst_ontime(const ns_run *r, double *pct)
{
    double ok[NS_BURST_GROUPS] = {0}, all[NS_BURST_GROUPS] = {0};
    double dur = (double)r->duration_ns;
    for (unsigned i = 0; i < r->nchains; i++) {
        const ns_chain_run *cr = &r->chain[i];
        int k = ns_class(cr->cfg->priority);
        int g = k < NS_LOW ? k : r->burst.chain[i] ? 4 : 3;
        for (unsigned b = 0; b < r->nbuckets; b++) {
            double t0 = (double)b * (double)r->bucket_ns;
            if (t0 < r->burst.from * dur || t0 >= r->burst.to * dur)
                continue;
            double o = (double)ld(&cr->b_ontime[b]);
            ok[g] += o;
            all[g] += o + (double)ld(&cr->b_miss[b]);
        }
    }
    for (int g = 0; g < NS_BURST_GROUPS; g++)
        pct[g] = all[g] > 0 ? 100 * ok[g] / all[g] : -1;
}

/* Of a count of the fair reference's ops, the percentage of those it
 * judged (on time or missed); -1 where there were none. */
static double fair_pct(uint64_t count, uint64_t ontime, uint64_t missed)
{
    uint64_t all = ontime + missed;
    return all ? 100.0 * (double)count / (double)all : -1;
}

/* On time by class on the fair reference (engine.c, fair_reference): an
 * ideal fluid weighted-fair server with the chains' weights, fed the same
 * arrivals on the capacity this system had; and late, those it started in
 * time and completed late (fluid.h, ns_fluid_outcome.late: a server that
 * runs an op at a CPU's speed once it starts completes many of them in
 * time). -1 where a class had none. */
static void fair_class(const ns_run *r, double ontime[NS_NCLASS], double late[NS_NCLASS],
                       double as_run[NS_NCLASS])
{
    uint64_t on[NS_NCLASS] = {0}, miss[NS_NCLASS] = {0}, lt[NS_NCLASS] = {0};
    uint64_t ron[NS_NCLASS] = {0}, rmiss[NS_NCLASS] = {0};
    for (unsigned i = 0; i < r->nchains; i++) {
        int k = ns_class(r->chain[i].cfg->priority);
        on[k] += r->chain[i].fair_ontime;
        miss[k] += r->chain[i].fair_missed;
        lt[k] += r->chain[i].fair_late;
        ron[k] += r->chain[i].fair_run_ontime;
        rmiss[k] += r->chain[i].fair_run_missed;
    }
    for (int k = 0; k < NS_NCLASS; k++) {
        ontime[k] = fair_pct(on[k], on[k], miss[k]);
        late[k] = fair_pct(lt[k], on[k], miss[k]);
        as_run[k] = fair_pct(ron[k], ron[k], rmiss[k]);
    }
}

/* One JSON field per class: key_fmt with the class's name, its value. */
static void emit_per_class(bench_result *res, const char *key_fmt, const double v[NS_NCLASS])
{
    for (int k = 0; k < NS_NCLASS; k++) {
        char key[48];
        snprintf(key, sizeof key, key_fmt, ns_class_name[k]);
        bench_result_f64(res, key, v[k]);
    }
}

void ns_emit_json(const ns_run *r, const char *scenario)
{
    ns_summary s;
    ns_summarize(r, &s);
    bench_result res;
    bench_result_begin(&res, "nodesim", "summary");
    bench_result_str(&res, "scenario", scenario);
    bench_result_str(&res, "system", ns_system_name[r->sys]);
    bench_result_f64(&res, "load", r->load);
    bench_result_f64(&res, "capacity_cpu", r->capacity / 1e9);
    bench_result_u64(&res, "workers", r->workers);
    bench_result_f64(&res, "duration_s", (double)r->duration_ns * r->slices_done / 1e9);
    bench_result_u64(&res, "slices", r->slices_done);
    bench_result_u64(&res, "offered", s.offered);
    bench_result_u64(&res, "ontime", s.ontime);
    bench_result_u64(&res, "late", s.late);
    bench_result_u64(&res, "dropped", s.dropped);
    bench_result_u64(&res, "expired", s.expired);
    bench_result_u64(&res, "censored", s.censored);
    bench_result_f64(&res, "ontime_pct", s.ontime_pct);
    bench_result_f64(&res, "drop_pct", s.drop_pct);
    double p99_us[NS_NCLASS], fair[NS_NCLASS], late[NS_NCLASS], as_run[NS_NCLASS];
    for (int k = 0; k < NS_NCLASS; k++)
        p99_us[k] = (double)s.class_p99[k] / 1e3;
    fair_class(r, fair, late, as_run);
    emit_per_class(&res, "%s_ontime_pct", s.class_ontime);
    emit_per_class(&res, "%s_p99_us", p99_us);
    emit_per_class(&res, "fair_%s_ontime_pct", fair);
    emit_per_class(&res, "fair_%s_late_pct", late);
    if (r->blocking)
        emit_per_class(&res, "fair_waits_as_run_%s_ontime_pct", as_run);
    if (r->burst.factor > 1) {
        double pct[NS_BURST_GROUPS];
        burst_ontime(r, pct);
        for (int g = 0; g < NS_BURST_GROUPS; g++) {
            char key[48];
            snprintf(key, sizeof key, "burst_%s_ontime_pct", burst_group[g]);
            bench_result_f64(&res, key, pct[g]);
        }
    }
    bench_result_f64(&res, "work_cpu", s.work_per_s / 1e9);
    bench_result_f64(&res, "work_x_capacity", s.work_per_s / r->capacity);
    bench_result_f64(&res, "share_error_pts", s.share_error);
    bench_result_f64(&res, "share_error_maxmin_pts", s.share_error_maxmin);
    unsigned sl = r->slices_done ? r->slices_done : 1;
    /* the fair reference's capacity (engine.c, fair_reference) */
    bench_result_f64(&res, "reference_capacity_cpu",
                     r->ref_cpu_s / ((double)r->duration_ns * sl / 1e9));
    /* CPU the whole process (workers, submitters) got while it ran, and
     * op work done per CPU-second of it: which system wasted CPU, and
     * which one the OS gave less */
    double cpu = r->wall_ns ? (double)r->cpu_ns / (double)r->wall_ns : 0;
    bench_result_f64(&res, "process_cpus", cpu);
    bench_result_f64(&res, "work_per_cpu_s", s.work_per_cpu_s);
    /* exactly once (engine.c, check_once): ops admitted, and how many
     * completed once, never, more than once */
    bench_result_u64(&res, "accepted", r->accepted);
    bench_result_u64(&res, "done_once", r->done_once);
    bench_result_u64(&res, "done_never", r->done_never);
    bench_result_u64(&res, "done_twice", r->done_twice);
    bench_result_emit(&res);
    for (unsigned i = 0; i < r->nchains; i++) {
        const ns_chain_run *cr = &r->chain[i];
        bench_result_begin(&res, "nodesim", cr->cfg->name);
        bench_result_str(&res, "scenario", scenario);
        bench_result_str(&res, "system", ns_system_name[r->sys]);
        bench_result_str(&res, "role", cr->cfg->role);
        bench_result_u64(&res, "priority", cr->cfg->priority);
        bench_result_f64(&res, "deadline_ms", (double)cr->cfg->deadline_ns / 1e6);
        bench_result_u64(&res, "offered", cr->offered);
        bench_result_u64(&res, "ontime", ld(&cr->ontime));
        bench_result_u64(&res, "late", ld(&cr->late));
        bench_result_u64(&res, "dropped", ld(&cr->dropped));
        bench_result_u64(&res, "expired", ld(&cr->expired));
        bench_result_u64(&res, "censored", ld(&cr->censored));
        bench_result_f64(&res, "ontime_pct", ns_chain_ontime(r, i));
        bench_result_f64(&res, "share_pct", 100 * ns_share(r, i));
        bench_result_f64(&res, "fair_ontime_pct",
                         fair_pct(cr->fair_ontime, cr->fair_ontime, cr->fair_missed));
        bench_result_f64(&res, "fair_late_pct",
                         fair_pct(cr->fair_late, cr->fair_ontime, cr->fair_missed));
        bench_result_f64(&res, "fair_pct", 100 * r->ideal[i]);
        bench_result_f64(&res, "run_share_pct", 100 * share_run(r, i));
        bench_result_f64(&res, "maxmin_pct", 100 * r->ideal_maxmin[i]);
        bench_result_f64(&res, "latency_p50_us", (double)bench_hist_pct(&cr->latency, 50) / 1e3);
        bench_result_f64(&res, "latency_p99_us", (double)bench_hist_pct(&cr->latency, 99) / 1e3);
        bench_result_emit(&res);
    }
}

/* A table row: the system's name, then n percentages in columns of the
 * given widths. */
static void print_pct_row(const char *name, const double *pct, const int *width, int n)
{
    printf("%-16s", name);
    for (int i = 0; i < n; i++) {
        char c[16];
        fmt_pct(c, sizeof c, pct[i]);
        printf(" %*s", width[i], c);
    }
    printf("\n");
}

void ns_print_comparison(ns_run *const *runs, size_t n, const char *title)
{
    printf("\n== %s ==\n", title);
    printf("%-16s %8s %9s %8s %8s %8s %9s %9s %9s %10s %8s %7s\n", "system", "on time",
           "critical", "high", "normal", "low", "missed", "crit p99", "high p99", "work done",
           "work per", "share");
    printf("%-16s %8s %9s %8s %8s %8s %9s %9s %9s %10s %8s %7s\n", "", "(all)", "on time",
           "on time", "on time", "on time", "drop+exp", "", "", "x capacity", "CPU-s",
           "error");
    for (size_t k = 0; k < n; k++) {
        ns_summary s;
        ns_summarize(runs[k], &s);
        char all[16], c[NS_NCLASS][16], p0[16], p1[16];
        fmt_pct(all, sizeof all, s.ontime_pct);
        for (int j = 0; j < NS_NCLASS; j++)
            fmt_pct(c[j], sizeof c[j], s.class_ontime[j]);
        ns_fmt_lat(p0, sizeof p0, s.class_p99[NS_CRIT]);
        ns_fmt_lat(p1, sizeof p1, s.class_p99[NS_HIGH]);
        printf("%-16s %8s %9s %8s %8s %8s %8.1f%% %9s %9s %9.2fx %8.2f %3.1f pts\n",
               ns_system_name[runs[k]->sys], all, c[0], c[1], c[2], c[3], s.drop_pct, p0, p1,
               s.work_per_s / runs[k]->capacity, s.work_per_cpu_s, s.share_error);
    }
    printf("\nThe fair reference on each system's capacity (an ideal weighted-fair server with the"
           "\nchains' weights, fed the same arrivals and their waits, and served on to the same"
           "\ncut): on time by class, and (late) the ops it started in time and completed late;"
           "%s\n", runs[0]->blocking ? "\n(waits as run) its on time with each op's wait as it ran here (the sleep, its"
                                        "\nwake-up and the wait for a CPU after it) in place of the nominal one" : "");
    printf("%-16s %9s %8s %8s %8s\n", "system", "critical", "high", "normal", "low");
    static const int fair_width[NS_NCLASS] = {9, 8, 8, 8};
    for (size_t k = 0; k < n; k++) {
        double fair[NS_NCLASS], late[NS_NCLASS], as_run[NS_NCLASS];
        fair_class(runs[k], fair, late, as_run);
        print_pct_row(ns_system_name[runs[k]->sys], fair, fair_width, NS_NCLASS);
        print_pct_row("  late", late, fair_width, NS_NCLASS);
        if (runs[k]->blocking)
            print_pct_row("  waits as run", as_run, fair_width, NS_NCLASS);
    }
    const ns_run *r0 = runs[0];
    printf("\nPer chain: on time %% (missed = dropped + expired + late) and p99 of completed "
           "ops\n%-16s %-8s %8s", "chain", "priority", "deadline");
    for (size_t k = 0; k < n; k++)
        printf(" %17s", ns_system_name[runs[k]->sys]);
    printf("\n");
    for (unsigned i = 0; i < r0->nchains; i++) {
        char dl[16];
        ns_fmt_lat(dl, sizeof dl, r0->cs->c[i].deadline_ns);
        printf("%-16s %-8s %8s", r0->cs->c[i].name, ns_priority_name(r0->cs->c[i].priority),
               dl);
        for (size_t k = 0; k < n; k++) {
            char ot[16], p99[16], cell[40];
            fmt_pct(ot, sizeof ot, ns_chain_ontime(runs[k], i));
            ns_fmt_lat(p99, sizeof p99, bench_hist_pct(&runs[k]->chain[i].latency, 99));
            snprintf(cell, sizeof cell, "%s %s", ot, p99);
            printf(" %17s", cell);
        }
        printf("\n");
    }
}

void ns_print_burst(ns_run *const *runs, size_t n)
{
    const ns_run *r0 = runs[0];
    double dur = (double)r0->duration_ns / 1e9;
    printf("\nDuring the burst (ops arriving %.1f-%.1f s into each slice): on time by class, "
           "the Low\nchains that do not flood apart from the flooding ones\n",
           r0->burst.from * dur, r0->burst.to * dur);
    printf("%-16s %9s %8s %8s %10s %10s\n", "system", "critical", "high", "normal", "low",
           "low");
    printf("%-16s %9s %8s %8s %10s %10s\n", "", "", "", "", "(others)", "(flooding)");
    static const int burst_width[NS_BURST_GROUPS] = {9, 8, 8, 10, 10};
    for (size_t k = 0; k < n; k++) {
        double pct[NS_BURST_GROUPS];
        burst_ontime(runs[k], pct);
        print_pct_row(ns_system_name[runs[k]->sys], pct, burst_width, NS_BURST_GROUPS);
    }
}
