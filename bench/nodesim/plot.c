/* Charts: data files and one gnuplot script into the --out folder. */
#include "nodesim.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const colors[NS_NSYS] = {"#1a9850", "#66bd63", "#d73027", "#4575b4",
                                             "#984ea3"};

static FILE *open_in(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return fopen(path, "w");
}

static void cdf_point(void *arg, uint64_t v, double frac)
{
    fprintf(arg, "%.4f %.6f\n", (double)v / 1e6, frac);
}

/* Latency CDF of completed ops per priority class, one line per system. */
static int plot_cdf(FILE *gp, const char *dir, const ns_scenario_runs *sc)
{
    bench_hist *h = malloc(sizeof *h);
    if (!h)
        return 0;
    for (size_t s = 0; s < sc->nruns; s++)
        for (int k = 0; k < NS_NCLASS; k++) {
            char name[64];
            snprintf(name, sizeof name, "cdf-%zu-%d.dat", s, k);
            FILE *f = open_in(dir, name);
            if (!f)
                continue;
            bench_hist_reset(h);
            const ns_run *r = sc->runs[s];
            for (unsigned i = 0; i < r->nchains; i++)
                if (ns_class(r->cs->c[i].priority) == k)
                    bench_hist_merge(h, &r->chain[i].latency);
            if (bench_hist_count(h))
                bench_hist_cdf(h, cdf_point, f);
            else
                fprintf(f, "1 0\n");
            fclose(f);
        }
    free(h);
    fprintf(gp,
            "set terminal pngcairo size 1200,800 font ',10'\nset output '%s/latency-cdf.png'\n"
            "set multiplot layout 2,2 title 'Latency of completed ops (arrival -> finish), "
            "%s, by priority class'\nset logscale x\nset grid\nset key bottom right\n"
            "set xlabel 'ms'\nset ylabel 'fraction of completed ops'\nset yrange [0:1]\n",
            dir, sc->name);
    for (int k = 0; k < NS_NCLASS; k++) {
        fprintf(gp, "set title '%s chains'\nplot ", ns_class_name[k]);
        for (size_t s = 0; s < sc->nruns; s++)
            fprintf(gp, "%s'%s/cdf-%zu-%d.dat' using 1:2 with lines lw 2 lc rgb '%s' title '%s'",
                    s ? ", " : "", dir, s, k, colors[sc->runs[s]->sys],
                    ns_system_name[sc->runs[s]->sys]);
        fprintf(gp, "\n");
    }
    fprintf(gp, "unset multiplot\nunset logscale x\nunset yrange\n");
    return 1;
}

/* On-time % per chain, one bar per system. */
static int plot_ontime(FILE *gp, const char *dir, const ns_scenario_runs *sc)
{
    char name[96];
    snprintf(name, sizeof name, "ontime-%s.dat", sc->name);
    FILE *f = open_in(dir, name);
    if (!f)
        return 0;
    const ns_run *r0 = sc->runs[0];
    fprintf(f, "chain");
    for (size_t s = 0; s < sc->nruns; s++)
        fprintf(f, " \"%s\"", ns_system_name[sc->runs[s]->sys]);
    fprintf(f, "\n");
    for (unsigned i = 0; i < r0->nchains; i++) {
        fprintf(f, "\"%s (%s)\"", r0->cs->c[i].name, ns_priority_name(r0->cs->c[i].priority));
        for (size_t s = 0; s < sc->nruns; s++) {
            double v = ns_chain_ontime(sc->runs[s], i);
            fprintf(f, " %.2f", v < 0 ? 0 : v);
        }
        fprintf(f, "\n");
    }
    fclose(f);
    fprintf(gp,
            "set terminal pngcairo size 1400,600 font ',10'\nset output '%s/ontime-%s.png'\n"
            "set title 'On time per chain, %s (dropped and expired ops are misses)'\n"
            "set style data histograms\nset style histogram cluster gap 1\n"
            "set style fill solid 0.9 border -1\nset boxwidth 0.9\nset xtics rotate by -35\n"
            "set ylabel 'on time (%%)'\nset yrange [0:105]\nset xlabel ''\nset grid ytics\n"
            "set key outside right top\nplot ",
            dir, sc->name, sc->name);
    for (size_t s = 0; s < sc->nruns; s++)
        fprintf(gp, "%s'%s/%s' using %zu%s title columnhead lc rgb '%s'", s ? ", " : "", dir,
                name, s + 2, s ? "" : ":xtic(1)", colors[sc->runs[s]->sys]);
    fprintf(gp, "\nunset style\nset style data lines\nunset yrange\nset xtics norotate\n"
                "unset boxwidth\nset style fill empty\n");
    return 1;
}

/* The flood over time: on-time % of Critical+High and of Low chains by
 * arrival time, and each system's shares of the work done. */
static int plot_flood(FILE *gp, const char *dir, const ns_scenario_runs *sc)
{
    const ns_run *r0 = sc->runs[0];
    /* Points of ~0.3 s: a 100 ms bucket holds a handful of 5-20 ms ops. */
    unsigned g = (unsigned)(300000000u / r0->bucket_ns);
    g = g ? g : 1;
    double bsec = (double)r0->bucket_ns * g / 1e9;
    unsigned nb = (unsigned)(r0->duration_ns / r0->bucket_ns) / g;
    for (size_t s = 0; s < sc->nruns; s++) {
        const ns_run *r = sc->runs[s];
        char name[64];
        snprintf(name, sizeof name, "flood-%zu.dat", s);
        FILE *f = open_in(dir, name);
        if (!f)
            return 0;
        fprintf(f, "# t crit+high_ontime low_ontime share_crit share_high share_normal "
                   "share_low_flood share_low_other\n");
        for (unsigned b = 0; b < nb; b++) {
            double ok[2] = {0}, all[2] = {0}, sh[5] = {0}, tot = 0;
            for (unsigned i = 0; i < r->nchains; i++) {
                const ns_chain_run *cr = &r->chain[i];
                int k = ns_class(cr->cfg->priority);
                double o = 0, m = 0, w = 0;
                for (unsigned j = b * g; j < (b + 1) * g; j++) {
                    o += (double)atomic_load_explicit(&cr->b_ontime[j], memory_order_relaxed);
                    m += (double)atomic_load_explicit(&cr->b_miss[j], memory_order_relaxed);
                    w += (double)atomic_load_explicit(&cr->b_service[j], memory_order_relaxed);
                }
                int g = k <= NS_HIGH ? 0 : k == NS_LOW ? 1 : -1;
                if (g >= 0) {
                    ok[g] += o;
                    all[g] += o + m;
                }
                int c = k == NS_LOW ? (r->burst.chain[i] ? 3 : 4) : k;
                sh[c] += w;
                tot += w;
            }
            fprintf(f, "%.3f", (b + 0.5) * bsec);
            for (int g = 0; g < 2; g++)
                fprintf(f, all[g] > 0 ? " %.2f" : " NaN", all[g] > 0 ? 100 * ok[g] / all[g] : 0);
            for (int c = 0; c < 5; c++)
                fprintf(f, " %.2f", tot > 0 ? 100 * sh[c] / tot : 0);
            fprintf(f, "\n");
        }
        fclose(f);
    }
    double dur = (double)r0->duration_ns / 1e9;
    double x0 = r0->burst.from * dur, x1 = r0->burst.to * dur;
    fprintf(gp,
            "set terminal pngcairo size 1200,800 font ',10'\nset output '%s/flood-ontime.png'\n"
            "set object 1 rect from %.3f, graph 0 to %.3f, graph 1 fc rgb '#f4cccc' fs solid "
            "0.5 noborder behind\nset multiplot layout 2,1 title 'Flood: two Low chains at "
            "%.0fx from %.1f s to %.1f s (shaded); on time by arrival time, slices summed'\n"
            "set grid\n"
            "set yrange [0:105]\nset xlabel 'seconds into the slice'\nset ylabel 'on time (%%)'\n"
            "set key outside right\nset title 'Critical and High chains'\nplot ",
            dir, x0, x1, r0->burst.factor, x0, x1);
    for (int g = 0; g < 2; g++) {
        if (g)
            fprintf(gp, "set title 'Low chains (the two flooding ones included)'\nplot ");
        for (size_t s = 0; s < sc->nruns; s++)
            fprintf(gp, "%s'%s/flood-%zu.dat' using 1:%d with linespoints lw 2 pt 7 ps 0.5 "
                        "lc rgb '%s' title '%s'",
                    s ? ", " : "", dir, s, 2 + g, colors[sc->runs[s]->sys],
                    ns_system_name[sc->runs[s]->sys]);
        fprintf(gp, "\n");
    }
    fprintf(gp, "unset multiplot\n");
    static const char *const cls[] = {"critical", "high", "normal", "low (flooding)",
                                      "low (others)"};
    static const char *const cc[] = {"#b2182b", "#ef8a62", "#4393c3", "#999999", "#222222"};
    fprintf(gp,
            "set output '%s/flood-shares.png'\nset terminal pngcairo size 1200,1100 font ',10'\n"
            "set multiplot layout %zu,1 title 'Flood: share of the op work done, by class "
            "(burst shaded)'\nset yrange [0:100]\nset ylabel 'share (%%)'\nunset xlabel\n",
            dir, sc->nruns);
    for (size_t s = 0; s < sc->nruns; s++) {
        fprintf(gp, "set title '%s'\n%splot ", ns_system_name[sc->runs[s]->sys],
                s + 1 == sc->nruns ? "set xlabel 'seconds into the slice'\n" : "");
        for (int c = 0; c < 5; c++)
            fprintf(gp, "%s'%s/flood-%zu.dat' using 1:%d with lines lw 2 lc rgb '%s' title '%s'",
                    c ? ", " : "", dir, s, 4 + c, cc[c], cls[c]);
        fprintf(gp, "\n");
    }
    fprintf(gp, "unset multiplot\nunset object 1\nunset yrange\n");
    return 2;
}

int ns_plot(const char *dir, ns_scenario_runs *const *sc, size_t nsc)
{
    if (system("command -v gnuplot >/dev/null 2>&1") != 0)
        return 0;
    mkdir(dir, 0755);
    FILE *gp = open_in(dir, "charts.gp");
    if (!gp) {
        fprintf(stderr, "accel-nodesim: cannot write into %s\n", dir);
        return 0;
    }
    int n = 0;
    const ns_scenario_runs *main_sc = sc[0];
    for (size_t i = 0; i < nsc; i++)
        if (strcmp(sc[i]->name, "steady-0.90") == 0)
            main_sc = sc[i];
    n += plot_cdf(gp, dir, main_sc);
    for (size_t i = 0; i < nsc; i++) {
        n += plot_ontime(gp, dir, sc[i]);
        if (strncmp(sc[i]->name, "flood", 5) == 0)
            n += plot_flood(gp, dir, sc[i]);
    }
    fclose(gp);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "gnuplot '%s/charts.gp' 2>'%s/gnuplot.log'", dir, dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "accel-nodesim: gnuplot failed (see %s/gnuplot.log)\n", dir);
        return 0;
    }
    return n;
}
