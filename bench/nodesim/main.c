/* accel-nodesim: flags, measured capacity, scenarios, final comparison. */
#include "nodesim.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
    double duration, load, capacity, flood_factor, batch_delay_ms;
    uint64_t workers, seed, depth, slices, metrics_port, cotenant;
    const char *chains, *scenario, *format, *json, *out, *flood_chains, *systems;
    bool smoke, modelled, sabotage, announce_waits;
} opt = {.duration = 4, .workers = 2, .seed = 42, .depth = 1024, .slices = 2, .flood_factor = 20,
         .batch_delay_ms = 10, .scenario = "all", .format = "auto"};

static ns_chainset cs, cs_batch; /* cs_batch: cs + the batchable chain (batch.c) */
static const ns_chainset *run_cs = &cs; /* the scenario's */
static bool sys_on[NS_NSYS];
static const char *const sys_key[NS_NSYS] = {"node", "default", "msess", "fifo", "prio"};

static int parse_systems(const char *list)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        int k = 0;
        while (k < NS_NSYS && strcmp(sys_key[k], t) != 0)
            k++;
        if (k == NS_NSYS) {
            fprintf(stderr, "accel-nodesim: --systems: unknown '%s' (node, default, msess, "
                            "fifo, prio)\n", t);
            return -1;
        }
        sys_on[k] = true;
    }
    return 0;
}
static int mode; /* 0 live table, 1 plain lines, 2 quiet (final tables only) */

typedef struct scen {
    char name[32];
    const char *kind;
    double load, duration;
    bool flood;
    unsigned slices;
    bool blocking;     /* the chains' waits (chains file, column 11) happen */
    unsigned cotenant; /* busy processes beside the node, probes included */
} scen;

/* The batch scenario (batch.c): cs_batch, its four systems, one table. */
static bool is_batch(const scen *sc)
{
    return strcmp(sc->kind, "batch") == 0;
}

static void tick(ns_run *r, void *arg)
{
    bool *first = arg;
    if (mode == 0) {
        ns_live_print(r, *first);
        *first = false;
    }
}

static ns_run *new_run(enum ns_system sys, double load, double duration)
{
    ns_run *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "accel-nodesim: out of memory\n");
        exit(1);
    }
    r->sys = sys;
    r->cs = run_cs;
    r->batch_chain = -1;
    r->workers = (unsigned)opt.workers;
    r->load = load;
    r->capacity = opt.capacity;
    r->seed = opt.seed;
    r->duration_ns = (uint64_t)(duration * 1e9);
    r->depth = opt.depth;
    r->burst.factor = 1;
    return r;
}

/* Capacity as delivered here and now: the FIFO pool's W workers kept
 * saturated (offered 2x the workers' nominal capacity, no deadlines) with
 * the chains' submitter threads running, op-cost done per second after a
 * short warm-up. System-neutral: no scheduler's policy is in it. */
static double measure_capacity(double seconds)
{
    double keep = opt.capacity;
    opt.capacity = (double)opt.workers * 1e9;
    ns_run *r = new_run(NS_FIFO, 2.0, seconds);
    opt.capacity = keep;
    r->no_deadlines = true;
    if (ns_slice_start(r) != 0)
        exit(1);
    ns_slice_finish(r, NULL, NULL);
    unsigned warm = 3, nb = (unsigned)(r->duration_ns / r->bucket_ns);
    uint64_t s = 0;
    for (unsigned i = 0; i < r->nchains; i++)
        for (unsigned b = warm; b < nb; b++)
            s += atomic_load_explicit(&r->chain[i].b_service[b], memory_order_relaxed);
    double cap = (double)s / ((double)(nb - warm) * (double)r->bucket_ns / 1e9);
    ns_run_free(r);
    return cap;
}

static void pick_flood_chains(ns_burst *b)
{
    b->factor = opt.flood_factor;
    b->from = 0.25;
    b->to = 0.75;
    if (opt.flood_chains) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", opt.flood_chains);
        for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
            size_t i = 0;
            while (i < cs.n && strcmp(cs.c[i].name, t) != 0)
                i++;
            if (i == cs.n) {
                fprintf(stderr, "accel-nodesim: --flood-chains: no chain '%s'\n", t);
                exit(2);
            }
            b->chain[i] = true;
        }
        return;
    }
    /* Default: the two lowest-priority chains with the cheapest ops (spam
     * is cheap to send), first in file order on ties. */
    for (int k = 0; k < 2 && (size_t)k < cs.n; k++) {
        size_t best = cs.n;
        for (size_t i = 0; i < cs.n; i++) {
            if (b->chain[i])
                continue;
            if (best == cs.n || cs.c[i].priority < cs.c[best].priority ||
                (cs.c[i].priority == cs.c[best].priority &&
                 ns_mean_cost(&cs.c[i]) < ns_mean_cost(&cs.c[best])))
                best = i;
        }
        b->chain[best] = true;
    }
}

static bool measured;
static double probe_s = 1.0;

static void run_scenario(const scen *sc, ns_scenario_runs *out)
{
    double before = 0, after = 0;
    run_cs = is_batch(sc) ? &cs_batch : &cs;
    if (measured) {
        before = measure_capacity(probe_s);
        /* A probe that found the machine all but taken by other processes
         * would make the scenario's load near zero: probe again (at most
         * twice), keep the best, and say so. */
        for (int t = 0; t < 2 && before < 0.25e9 * (double)opt.workers; t++) {
            if (mode != 2)
                printf("[%s] capacity probe found only %.2f CPU (machine busy); probing "
                       "again\n", sc->name, before / 1e9);
            double again = measure_capacity(probe_s);
            before = again > before ? again : before;
        }
        opt.capacity = before;
        if (mode != 2) {
            printf("[%s] capacity measured now: %.2f CPU-s/s of op work\n", sc->name,
                   before / 1e9);
            fflush(stdout);
        }
    }
    /* The co-tenant runs between the probes, not during them: the capacity
     * is the machine's without it, so "work done x capacity" says how much
     * of the machine each system kept beside it. */
    if (sc->cotenant && ns_cotenant_start(sc->cotenant) != 0) {
        fprintf(stderr, "accel-nodesim: cannot start the co-tenant processes\n");
        exit(1);
    }
    out->name = sc->name;
    out->load = sc->load;
    out->nruns = 0;
    ns_run *runs[NS_NSYS_ALL] = {0};
    for (int s = 0; s < NS_NSYS_ALL; s++) {
        if (is_batch(sc) ? s < NS_BATCH_ACCEL : s >= NS_NSYS || !sys_on[s])
            continue;
        runs[s] = new_run((enum ns_system)s, sc->load, sc->duration / sc->slices);
        if (is_batch(sc)) {
            runs[s]->batch_chain = (int)cs_batch.n - 1;
            if (s == NS_BATCH_HELD)
                runs[s]->batch_delay_ns = (uint64_t)(opt.batch_delay_ms * 1e6);
        }
        if (sc->flood)
            pick_flood_chains(&runs[s]->burst);
        runs[s]->blocking = sc->blocking;
        runs[s]->announce_waits = opt.announce_waits;
        out->runs[out->nruns++] = runs[s];
    }
    /* Slices in A B C D E, E D C B A order: a drift of the machine's other
     * load during the scenario falls on every system alike. */
    for (unsigned sl = 0; sl < sc->slices; sl++)
        for (size_t j = 0; j < out->nruns; j++) {
            ns_run *r = out->runs[sl % 2 ? out->nruns - 1 - j : j];
            if (ns_slice_start(r) != 0)
                exit(1);
            bool first = true;
            ns_live_clear();
            ns_slice_finish(r, tick, &first);
            if (mode == 0 && !first) {
                printf("\033[%uA\033[J", r->nchains + 2); /* erase the live table */
                fflush(stdout);
            } else if (mode == 1 && sc->slices > 1) {
                printf("  [%s] slice %u/%u of %s done\n", sc->name, sl + 1, sc->slices,
                       ns_system_name[r->sys]);
                fflush(stdout);
            }
        }
    for (size_t j = 0; j < out->nruns; j++) {
        ns_run *r = out->runs[j];
        ns_emit_json(r, sc->name);
        if (mode == 1) {
            ns_summary su;
            ns_summarize(r, &su);
            printf("  [%s] %-15s on time %5.1f%%, missed %4.1f%% dropped+expired, work "
                   "%.2fx capacity, process CPU %.2f, work per CPU-s %.2f\n",
                   sc->name, ns_system_name[r->sys], su.ontime_pct, su.drop_pct,
                   su.work_per_s / r->capacity,
                   r->wall_ns ? (double)r->cpu_ns / (double)r->wall_ns : 0, su.work_per_cpu_s);
            fflush(stdout);
        }
    }
    char title[512], cap[160];
    ns_cotenant_stop();
    if (measured) {
        after = measure_capacity(probe_s);
        double drift = 100 * (after - before) / before;
        snprintf(cap, sizeof cap, "capacity %.2f CPU measured before, %.2f after (%+.0f%%%s)",
                 before / 1e9, after / 1e9, drift,
                 drift > 15 || drift < -15 ? ": the machine's other load moved, rerun" : "");
    } else {
        snprintf(cap, sizeof cap, "capacity %.2f CPU given by --capacity", opt.capacity / 1e9);
    }
    bench_result res;
    bench_result_begin(&res, "nodesim", "capacity");
    bench_result_str(&res, "scenario", sc->name);
    bench_result_f64(&res, "before_cpu", opt.capacity / 1e9);
    bench_result_f64(&res, "after_cpu", measured ? after / 1e9 : opt.capacity / 1e9);
    bench_result_bool(&res, "measured", measured);
    bench_result_emit(&res);
    if (is_batch(sc)) { /* one table for all loads at the end (ns_batch_report) */
        printf("[%s] %s\n", sc->name, cap);
        fflush(stdout);
        return;
    }
    if (sc->flood) {
        char names[128] = "";
        for (size_t i = 0; i < cs.n; i++)
            if (out->runs[0]->burst.chain[i])
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         names[0] ? " and " : "", cs.c[i].name);
        double slice = sc->duration / sc->slices;
        snprintf(title, sizeof title,
                 "flood: load %.2f, %s at %.0fx from %.1f s to %.1f s of each %.1f s slice, "
                 "%u interleaved slices per system;\n   %s",
                 sc->load, names, opt.flood_factor, 0.25 * slice, 0.75 * slice, slice,
                 sc->slices, cap);
    } else {
        char extra[160] = "";
        if (sc->blocking)
            snprintf(extra, sizeof extra, " (the chains' storage reads and remote-signer "
                                          "calls wait 1-5 ms, little CPU%s)",
                     opt.announce_waits ? ", announced" : "");
        if (sc->cotenant)
            snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
                     " beside %u busy co-tenant process%s", sc->cotenant,
                     sc->cotenant > 1 ? "es" : "");
        snprintf(title, sizeof title,
                 "%s: load %.2f%s, %.1f s per system in %u interleaved slices;\n   %s",
                 sc->kind, sc->load, extra, sc->duration, sc->slices, cap);
    }
    ns_print_comparison(out->runs, out->nruns, title);
    if (sc->flood)
        ns_print_burst(out->runs, out->nruns);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    bench_opt opts[] = {
        {"scenario", BENCH_OPT_STR, &opt.scenario,
         "all | steady (load 0.5 and 0.9) | overload (1.2) | flood (0.7, two Low chains "
         "burst) | blocking (0.9, some chains' ops wait 1-5 ms on storage or a remote "
         "signer) | cotenant (1.2 beside --cotenant busy processes) | batch (loads 0.3, "
         "0.5, 0.7, 0.9, 1.2; a batchable chain of BLS votes added; four systems: accel "
         "batching with no added wait, accel batching held back up to --batch-delay-ms, "
         "accel unbatched, a hand-written 10 ms / 72-op batcher; one table with its "
         "targets at the end)"},
        {"load", BENCH_OPT_DOUBLE, &opt.load,
         "offered load as a fraction of the measured capacity; replaces the scenario's "
         "load(s)"},
        {"duration", BENCH_OPT_DOUBLE, &opt.duration,
         "seconds of arrivals per system (flood: 2x); 5 systems run per scenario (batch: 4 "
         "per load)"},
        {"slices", BENCH_OPT_U64, &opt.slices,
         "each system runs in this many slices, systems interleaved (A..E, E..A, ...) so "
         "a shared machine's drift hits all alike (a flood slice has its own burst)"},
        {"workers", BENCH_OPT_U64, &opt.workers, "worker threads of accel and both pools (W; accel (node) adds its short-lane worker)"},
        {"depth", BENCH_OPT_U64, &opt.depth,
         "admission: ops a chain may have admitted and unfinished; more are dropped (all "
         "systems)"},
        {"capacity", BENCH_OPT_DOUBLE, &opt.capacity,
         "capacity in CPUs of op work; 0: measure it before and after each scenario (1 s each)"},
        {"chains", BENCH_OPT_STR, &opt.chains,
         "chain-set file replacing bench/chains/default.conf (built in)"},
        {"flood-factor", BENCH_OPT_DOUBLE, &opt.flood_factor, "flood: rate multiplier"},
        {"flood-chains", BENCH_OPT_STR, &opt.flood_chains,
         "flood: comma-separated chains that burst (default: the two cheapest Low ones)"},
        {"systems", BENCH_OPT_STR, &opt.systems,
         "comma-separated subset of: node (accel, node config), default (accel, defaults), "
         "msess (mutex/session), fifo (FIFO pool), prio (priority pool); default all (the "
         "batch scenario always runs its four)"},
        {"batch-delay-ms", BENCH_OPT_DOUBLE, &opt.batch_delay_ms,
         "batch scenario: how long the 'accel batch+hold' system holds the chain's "
         "session back to fill a batch (accel_batch_config.max_delay_ns, > 0; the default is "
         "the hand batcher's window); 'accel batching' never adds a wait"},
        {"seed", BENCH_OPT_U64, &opt.seed, "seed of the arrival and cost streams"},
        {"format", BENCH_OPT_STR, &opt.format,
         "auto | table (live, in place) | plain (a line per system) | quiet (tables only)"},
        {"json", BENCH_OPT_STR, &opt.json, "write every result as JSON lines to this file"},
        {"out", BENCH_OPT_STR, &opt.out, "write the charts (PNG, gnuplot) into this folder"},
        {"metrics-port", BENCH_OPT_U64, &opt.metrics_port,
         "serve Prometheus metrics on 127.0.0.1:PORT while accel runs (0: off)"},
        {"cotenant", BENCH_OPT_U64, &opt.cotenant,
         "busy co-tenant processes (one spinning thread each) beside the node while the "
         "systems run (not during the capacity probes): in the cotenant scenario (0 "
         "there: 1), and in every scenario when given (1..64)"},
        {"modelled", BENCH_OPT_FLAG, &opt.modelled,
         "run every chain's modelled spin loop, even where the chains file names a real "
         "body"},
        {"announce-waits", BENCH_OPT_FLAG, &opt.announce_waits,
         "blocking scenario: each wait runs between accel_blocking_begin and _end (an op "
         "that knows it will wait says so; accel compensates at once and does not charge "
         "the wait); default: waits accel must find by itself"},
        {"wrong-answer", BENCH_OPT_FLAG, &opt.sabotage,
         "test of the result check: flip the expected answer of one input per real body; "
         "the run must then fail (exit 1)"},
        {"smoke", BENCH_OPT_FLAG, &opt.smoke,
         "a few seconds' run for CI (steady 0.9, 1 s per system; with --scenario batch: "
         "loads 0.5 and 1.2, 1 s per system)"},
    };
    int prc = bench_opts_parse(
        argc, argv,
        "usage: accel-nodesim [options]\n"
        "A node process hosting many chains (bench/chains/default.conf: priority, op cost,\n"
        "cadence, per-op deadline), driven open-loop at a load relative to the capacity\n"
        "measured in the same run, through five systems: accel configured as a node would\n"
        "(W workers + a short-lane worker), accel with defaults, a mutex per chain, a FIFO\n"
        "thread pool and a strict-priority thread pool. One admission rule (--depth) and\n"
        "one op body for all; an op that cannot start by its deadline is dropped (a miss).\n"
        "Op bodies: the chains file's column 10 names each chain's: real ed25519 verify,\n"
        "BLAKE2b and SHA-256 (libsodium), secp256k1 ECDSA verify and recover\n"
        "(libsecp256k1), on inputs made from the seed before the run, every answer checked\n"
        "(a wrong one fails the run with exit 1); or modelled (a calibrated spin loop of\n"
        "the assumed cost: zk proofs, FHE, BLS, VRF, for which no Debian library exists).\n"
        "Each table gives work done (x the measured capacity) and work per CPU-second the\n"
        "process used (op work / process CPU time: what the scheduling itself costs).\n"
        "--scenario batch adds a Critical chain of BLS votes that verify as a batch\n"
        "(modelled: a batch of n costs 0.55 + 0.45 n single verifies) and runs it four\n"
        "ways at five loads: accel batching with no added wait, accel batching held back\n"
        "up to --batch-delay-ms (10 ms), accel unbatched, a hand-written 10 ms / 72-op\n"
        "batcher thread; one table, the batching targets as PASS/MISS lines.",
        opts, BENCH_COUNTOF(opts));
    if (prc)
        return prc < 0 ? 2 : 0;
    bool smoke_batch = false;
    if (opt.smoke) {
        opt.duration = 1;
        opt.slices = 1;
        smoke_batch = strcmp(opt.scenario, "batch") == 0;
        if (!smoke_batch)
            opt.scenario = "steady";
        if (opt.load <= 0 && !smoke_batch)
            opt.load = 0.9;
        probe_s = 0.6;
    }
    if (opt.duration < 0.5 || opt.duration > 3600 || opt.load < 0 || opt.load > 100 ||
        opt.workers < 1 || opt.workers > 1024 || opt.depth < 1 || opt.slices < 1 ||
        opt.slices > 16 || opt.duration / (double)opt.slices < 0.5 ||
        opt.depth > ACCEL_QUEUE_DEPTH_MAX || opt.capacity < 0 || opt.flood_factor < 1 ||
        opt.cotenant > 64 || !(opt.batch_delay_ms > 0) ||
        opt.batch_delay_ms * 1e6 > (double)ACCEL_BATCH_DELAY_MAX) {
        fprintf(stderr, "accel-nodesim: bad --duration (0.5..3600, >= 0.5 s per slice), "
                        "--slices (1..16), --load, --workers, --depth, --capacity, "
                        "--flood-factor, --cotenant (0..64) or --batch-delay-ms (0 < ms <= 1000) "
                        "(try --help)\n");
        return 2;
    }
    if (opt.metrics_port &&
        (opt.metrics_port > 65535 || ns_metrics_serve((unsigned)opt.metrics_port) != 0))
        return 2;
    if (strcmp(opt.format, "auto") == 0)
        mode = isatty(STDOUT_FILENO) ? 0 : 1;
    else if (strcmp(opt.format, "table") == 0)
        mode = 0;
    else if (strcmp(opt.format, "plain") == 0)
        mode = 1;
    else if (strcmp(opt.format, "quiet") == 0)
        mode = 2;
    else {
        fprintf(stderr, "accel-nodesim: --format auto|table|plain|quiet\n");
        return 2;
    }
    if (opt.systems) {
        if (parse_systems(opt.systems) != 0)
            return 2;
    } else {
        for (int k = 0; k < NS_NSYS; k++)
            sys_on[k] = true;
    }
    int nsys = 0;
    for (int k = 0; k < NS_NSYS; k++)
        nsys += sys_on[k];
    scen list[16];
    size_t nsc = 0;
    bool all = strcmp(opt.scenario, "all") == 0;
    double d = opt.duration;
    unsigned sl = (unsigned)opt.slices;
    if (all || strcmp(opt.scenario, "steady") == 0) {
        if (opt.load > 0) {
            list[nsc++] = (scen){"", "steady", opt.load, d, false, sl, false, 0};
        } else {
            list[nsc++] = (scen){"", "steady", 0.5, d, false, sl, false, 0};
            list[nsc++] = (scen){"", "steady", 0.9, d, false, sl, false, 0};
        }
    }
    if (all || strcmp(opt.scenario, "overload") == 0)
        list[nsc++] =
            (scen){"", "overload", opt.load > 0 ? opt.load : 1.2, d, false, sl, false, 0};
    if (all || strcmp(opt.scenario, "flood") == 0)
        list[nsc++] =
            (scen){"", "flood", opt.load > 0 ? opt.load : 0.7, 2 * d, true, sl, false, 0};
    if (all || strcmp(opt.scenario, "blocking") == 0)
        list[nsc++] = (scen){"", "blocking", opt.load > 0 ? opt.load : 0.9, d, false, sl, true,
                             0};
    if (all || strcmp(opt.scenario, "cotenant") == 0)
        list[nsc++] = (scen){"", "cotenant", opt.load > 0 ? opt.load : 1.2, d, false, sl, false,
                             opt.cotenant ? (unsigned)opt.cotenant : 1};
    size_t nbatch = 0;
    if (all || strcmp(opt.scenario, "batch") == 0) {
        static const double full[] = {0.3, 0.5, 0.7, 0.9, 1.2}, smoke[] = {0.5, 1.2};
        const double *ld = smoke_batch ? smoke : full;
        size_t n = smoke_batch ? BENCH_COUNTOF(smoke) : BENCH_COUNTOF(full);
        if (opt.load > 0) {
            ld = &opt.load;
            n = 1;
        }
        for (size_t i = 0; i < n; i++, nbatch++)
            list[nsc++] = (scen){"", "batch", ld[i], d, false, sl, false, 0};
    }
    if (nsc == 0) {
        fprintf(stderr, "accel-nodesim: --scenario all|steady|overload|flood|blocking|"
                        "cotenant|batch\n");
        return 2;
    }
    for (size_t i = 0; i < nsc; i++) {
        if (opt.cotenant)
            list[i].cotenant = (unsigned)opt.cotenant;
        snprintf(list[i].name, sizeof list[i].name, "%s-%.2f", list[i].kind, list[i].load);
    }
    if (opt.chains ? ns_chains_load(opt.chains, &cs) != 0
                   : ns_chains_parse(ns_default_conf, "bench/chains/default.conf", &cs) != 0)
        return 2;
    if (nbatch && ns_batch_chainset(&cs, &cs_batch) != 0)
        return 2;
    if (opt.out)
        mkdir(opt.out, 0755); /* may hold the --json file too */
    if (opt.json && bench_result_json_open(opt.json) != 0) {
        fprintf(stderr, "accel-nodesim: cannot write %s\n", opt.json);
        return 2;
    }
    bench_result_stdout(false); /* JSON goes to --json FILE only */
    bench_work_calibrate();
    if (ns_bodies_init(&cs, opt.seed, opt.modelled, opt.sabotage) != 0) {
        fprintf(stderr, "accel-nodesim: cannot prepare the op bodies' inputs\n");
        return 1;
    }

    double secs = 0;
    for (size_t i = 0; i < nsc; i++)
        secs += (is_batch(&list[i]) ? NS_NBATCH : nsys) *
                (list[i].duration + 0.6 * list[i].slices);
    secs += opt.capacity > 0 ? 0 : 2 * (probe_s + 0.1) * (double)nsc;
    char machine[256];
    bench_machine(machine, sizeof machine);
    printf("accel-nodesim: %s\n%s\n", cs.source, cs.desc);
    printf("Machine: %s. W = %u workers. Seed %llu.\n", machine, (unsigned)opt.workers,
           (unsigned long long)opt.seed);
    char plan[96] = "";
    if (nbatch < nsc)
        snprintf(plan, sizeof plan, "%zu scenario(s) x %d systems%s", nsc - nbatch, nsys,
                 nbatch ? ", then " : "");
    if (nbatch)
        snprintf(plan + strlen(plan), sizeof plan - strlen(plan),
                 "the batch scenario at %zu load(s) x %d systems", nbatch, NS_NBATCH);
    printf("Plan: %s, about %.0f s in all.\n", plan, secs);
    fflush(stdout);
    measured = opt.capacity <= 0;
    opt.capacity *= 1e9;
    printf("Capacity: %s; --load is relative to it.\n",
           measured ? "measured before (and after) each scenario: W workers kept saturated "
                      "with the submitters running, op work done per second"
                    : "given by --capacity");
    printf("accel (node) = %s.\n", ns_system_desc[NS_ACCEL_NODE]);
    ns_bodies_print(&cs);
    if (nbatch)
        ns_batch_print_model(&cs_batch, (uint64_t)(opt.batch_delay_ms * 1e6));
    fflush(stdout);
    bench_result res;
    bench_result_begin(&res, "nodesim", "machine");
    bench_result_u64(&res, "workers", opt.workers);
    bench_result_str(&res, "machine", machine);
    bench_result_str(&res, "chains", cs.source);
    bench_result_emit(&res);

    ns_scenario_runs sr[16], *srp[16];
    ns_run *brun[16][NS_NBATCH];
    double bload[16];
    size_t nplot = 0, nb = 0;
    for (size_t i = 0; i < nsc; i++) {
        run_scenario(&list[i], &sr[i]);
        if (!is_batch(&list[i])) {
            srp[nplot++] = &sr[i]; /* the batch scenario has its own table, no charts */
            continue;
        }
        for (size_t k = 0; k < NS_NBATCH; k++)
            brun[nb][k] = sr[i].runs[k];
        bload[nb++] = list[i].load;
    }
    ns_batch_report((ns_run *const (*)[NS_NBATCH])brun, bload, nb);
    printf("\nOn time = finished within the chain's deadline (dropped and expired ops are "
           "misses);\np99 of completed ops, from each op's scheduled arrival. Share error = "
           "half the L1 distance,\nin percentage points, between each chain's share of the "
           "op work and its fair share:\nthat of an ideal fluid weighted-fair server "
           "(weighted max-min at every instant, a\nchain on one worker at most) fed the same "
           "arrivals, deadlines and admission rule, on\nthe capacity at which it completes "
           "the work the system completed during the arrivals.\nIf it then drops nothing, "
           "the fair share is the demand (against the work done for each\nchain's ops); "
           "else its work during the arrivals (against the system's in that window).\n"
           "See bench/README.md, \"The fair share\".\nWork per CPU-s = op work done / "
           "CPU time the whole process used (workers, submitters,\nscheduling; not the "
           "co-tenant's): 1.00 would be no CPU spent but on the ops.\n");
    if (opt.out) {
        int n = ns_plot(opt.out, srp, nplot);
        if (n > 0)
            printf("\nCharts (%d PNG): %s/\n", n, opt.out);
        else
            printf("\nNo charts: gnuplot is not installed (scripts/deps.sh installs it).\n");
    }
    if (opt.json)
        printf("JSON lines: %s\n", opt.json);
    uint64_t wrong = ns_body_wrong(), checked = ns_body_checked();
    bench_result_begin(&res, "nodesim", "bodies");
    bench_result_u64(&res, "checked", checked);
    bench_result_u64(&res, "wrong", wrong);
    bench_result_emit(&res);
    /* Exactly once: every op admitted completed once, no dropped op ever */
    uint64_t once_bad = 0;
    for (size_t i = 0; i < nsc; i++)
        for (size_t k = 0; k < sr[i].nruns; k++) {
            const ns_run *r = sr[i].runs[k];
            if (!r->done_never && !r->done_twice)
                continue;
            once_bad++;
            printf("\nFAILED: %s, %s: of %llu ops admitted, %llu never completed, %llu "
                   "completed more than once (or a dropped op completed)\n",
                   sr[i].name, ns_system_name[r->sys], (unsigned long long)r->accepted,
                   (unsigned long long)r->done_never, (unsigned long long)r->done_twice);
        }
    bench_result_json_close();
    for (size_t i = 0; i < nsc; i++)
        for (size_t k = 0; k < sr[i].nruns; k++)
            ns_run_free(sr[i].runs[k]);
    ns_bodies_free();
    if (wrong) {
        printf("\nFAILED: %llu of %llu real-op results were wrong (a verification or hash "
               "that said the wrong thing)\n",
               (unsigned long long)wrong, (unsigned long long)checked);
        return 1;
    }
    if (checked)
        printf("\nReal-op results checked: %llu, all as expected.\n",
               (unsigned long long)checked);
    else
        printf("\nNo real op body ran: every op was modelled (see \"Op bodies\" above).\n");
    return once_bad ? 1 : 0;
}
