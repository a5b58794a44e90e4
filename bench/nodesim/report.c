/* Live per-chain table, shares, and gnuplot charts. */
#include "nodesim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static unsigned live_lines; /* lines printed by the last in-place refresh */

uint64_t ns_total_completed(const ns_run *r)
{
    uint64_t t = 0;
    for (unsigned i = 0; i < r->nchains; i++)
        t += atomic_load_explicit(&r->chain[i].completed, memory_order_relaxed);
    return t;
}

static uint64_t total_service(const ns_run *r)
{
    uint64_t t = 0;
    for (unsigned i = 0; i < r->nchains; i++)
        t += atomic_load_explicit(&r->chain[i].service_ns, memory_order_relaxed);
    return t;
}

double ns_share(const ns_run *r, unsigned i)
{
    uint64_t t = total_service(r);
    return t ? (double)atomic_load_explicit(&r->chain[i].service_ns, memory_order_relaxed) /
                   (double)t
             : 0;
}

double ns_share_error(const ns_run *r)
{
    double e = 0;
    for (unsigned i = 0; i < r->nchains; i++)
        e += fabs(ns_share(r, i) - r->ideal[i]);
    return 50.0 * e; /* half the L1 distance, in percentage points */
}

static void fmt_us(char *buf, size_t len, uint64_t ns)
{
    if (ns >= 10000000000ull)
        snprintf(buf, len, "%.0fs", (double)ns / 1e9);
    else if (ns >= 10000000)
        snprintf(buf, len, "%.0fms", (double)ns / 1e6);
    else if (ns >= 1000000)
        snprintf(buf, len, "%.1fms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.0fus", (double)ns / 1e3);
}

void ns_live_clear(void)
{
    live_lines = 0;
}

void ns_live_print(ns_run *r, bool tty, bool first, uint64_t now)
{
    static uint64_t last_t;
    if (first)
        last_t = r->t_start;
    double dt = now > last_t ? (double)(now - last_t) / 1e9 : 1;
    last_t = now;
    double elapsed = now > r->t_start ? (double)(now - r->t_start) / 1e9 : 0;
    double total = (double)r->duration_ns / 1e9;
    uint64_t done = ns_total_completed(r);
    if (!tty) {
        uint64_t drops = 0;
        for (unsigned i = 0; i < r->nchains; i++)
            drops += atomic_load_explicit(&r->chain[i].dropped, memory_order_relaxed);
        printf("[%s] %4.1f/%.1f s  %8.0f ops/s  share error %.1f pts  dropped %llu\n",
               ns_system_name[r->sys], elapsed, total,
               elapsed > 0 ? (double)done / elapsed : 0, ns_share_error(r),
               (unsigned long long)drops);
        for (unsigned i = 0; i < r->nchains; i++)
            r->chain[i].last_completed =
                atomic_load_explicit(&r->chain[i].completed, memory_order_relaxed);
        fflush(stdout);
        return;
    }
    if (live_lines)
        printf("\033[%uA", live_lines); /* back to the top of the table */
    unsigned lines = 0;
    printf("\033[K%-16s %-8s %8s %7s %7s %8s %8s %6s %6s %7s\n", "chain", "priority", "ops/s",
           "share", "ideal", "wait p50", "wait p99", "queue", "budget", "dropped");
    lines++;
    for (unsigned i = 0; i < r->nchains; i++) {
        ns_chain_run *cr = &r->chain[i];
        uint64_t c = atomic_load_explicit(&cr->completed, memory_order_relaxed);
        double rate = (double)(c - cr->last_completed) / dt;
        cr->last_completed = c;
        char p50[16], p99[16], budget[16];
        fmt_us(p50, sizeof p50, bench_hist_pct(&cr->wait, 50));
        fmt_us(p99, sizeof p99, bench_hist_pct(&cr->wait, 99));
        int64_t cap = (int64_t)cr->cfg->scratch_kb * 1024 * 4;
        if (r->sys == NS_ACCEL && cap > 0)
            snprintf(budget, sizeof budget, "%.0f%%",
                     100.0 * (double)atomic_load_explicit(&cr->mem_peak, memory_order_relaxed) /
                         (double)cap);
        else
            snprintf(budget, sizeof budget, "-");
        printf("\033[K%-16s %-8s %8.0f %6.1f%% %6.1f%% %8s %8s %6lld %6s %7llu\n",
               cr->cfg->name, ns_priority_name(cr->cfg->priority), rate,
               100 * ns_share(r, i), 100 * r->ideal[i], p50, p99,
               (long long)atomic_load_explicit(&cr->outstanding, memory_order_relaxed), budget,
               (unsigned long long)atomic_load_explicit(&cr->dropped, memory_order_relaxed));
        lines++;
    }
    int bar = (int)(30 * (elapsed / total > 1 ? 1 : elapsed / total));
    printf("\033[K[%s] [%.*s%*s] %4.1f/%.1f s  %.0f ops/s  share error %.1f pts\n",
           ns_system_name[r->sys], bar, "##############################", 30 - bar, "",
           elapsed, total, elapsed > 0 ? (double)done / elapsed : 0, ns_share_error(r));
    lines++;
    live_lines = lines;
    fflush(stdout);
}

/* ---------------------------------------------------------------- plots */

struct cdf_file {
    FILE *f;
};

static void cdf_point(void *arg, uint64_t v, double frac)
{
    struct cdf_file *cf = arg;
    fprintf(cf->f, "%.3f %.6f\n", (double)v / 1e3, frac);
}

static int find_role(const ns_run *r, const char *role, bench_hist *out)
{
    int n = 0;
    bench_hist_reset(out);
    for (unsigned i = 0; i < r->nchains; i++)
        if (strcmp(r->chain[i].cfg->role, role) == 0) {
            bench_hist_merge(out, &r->chain[i].latency);
            n++;
        }
    return n;
}

void ns_plot(const char *dir, ns_run *const *runs, size_t nruns)
{
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        printf("# --plot: gnuplot is not installed; no charts written\n");
        return;
    }
    mkdir(dir, 0755);
    char path[1024];
    bench_hist *h = malloc(sizeof *h);
    if (!h)
        return;
    static const char *const roles[] = {"dex", "consensus"};
    for (size_t k = 0; k < BENCH_COUNTOF(roles); k++)
        for (size_t s = 0; s < nruns; s++) {
            snprintf(path, sizeof path, "%s/cdf-%s-%zu.dat", dir, roles[k], s);
            struct cdf_file cf = {fopen(path, "w")};
            if (!cf.f)
                continue;
            if (find_role(runs[s], roles[k], h))
                bench_hist_cdf(h, cdf_point, &cf);
            fclose(cf.f);
        }
    free(h);
    snprintf(path, sizeof path, "%s/shares.dat", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "chain ideal");
    for (size_t s = 0; s < nruns; s++)
        fprintf(f, " \"%s\"", ns_system_name[runs[s]->sys]);
    fprintf(f, "\n");
    for (unsigned i = 0; i < runs[0]->nchains; i++) {
        fprintf(f, "%s %.3f", runs[0]->chain[i].cfg->name, 100 * runs[0]->ideal[i]);
        for (size_t s = 0; s < nruns; s++)
            fprintf(f, " %.3f", 100 * ns_share(runs[s], i));
        fprintf(f, "\n");
    }
    fclose(f);

    snprintf(path, sizeof path, "%s/plot.gp", dir);
    f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "set terminal pngcairo size 1000,600\nset grid\n"
               "set key bottom right\nset logscale x\nset xlabel 'submit -> finish (us)'\n"
               "set ylabel 'fraction of ops'\n");
    for (size_t k = 0; k < BENCH_COUNTOF(roles); k++) {
        fprintf(f, "set output '%s/latency-cdf-%s.png'\n", dir, roles[k]);
        fprintf(f, "set title '%s chains: latency CDF (synthetic calibrated work)'\nplot ",
                roles[k]);
        for (size_t s = 0; s < nruns; s++)
            fprintf(f, "%s'%s/cdf-%s-%zu.dat' using 1:2 with lines lw 2 title '%s'",
                    s ? ", " : "", dir, roles[k], s, ns_system_name[runs[s]->sys]);
        fprintf(f, "\n");
    }
    fprintf(f, "unset logscale x\nset output '%s/shares.png'\nset title 'share of service vs "
               "weighted ideal'\nset style data histograms\nset style histogram cluster gap 1\n"
               "set style fill solid 0.8\nset xtics rotate by -45\nset ylabel 'share (%%)'\n"
               "set xlabel ''\nset key top right\n",
            dir);
    fprintf(f, "plot '%s/shares.dat' using 2:xtic(1) title 'ideal'", dir);
    for (size_t s = 0; s < nruns; s++)
        fprintf(f, ", '' using %zu title columnhead", s + 3);
    fprintf(f, "\n");
    fclose(f);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "gnuplot '%s/plot.gp'", dir);
    if (system(cmd) == 0)
        printf("# charts: %s/latency-cdf-dex.png, latency-cdf-consensus.png, shares.png\n",
               dir);
    else
        printf("# --plot: gnuplot failed (see %s/plot.gp)\n", dir);
}
