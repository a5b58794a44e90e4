/*
 * CPU limits and worker threads: the cpu.max and /proc/self/cgroup
 * parsers on sample contents, the cgroup walk over a scratch tree, the
 * default worker count under a restricted affinity mask (in a forked
 * child), explicit counts, pinning and thread names.
 *
 * Promises: 5
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <dirent.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core_util.h"
#include "cpu_limits.h"

Test(cpu_limits, cpu_max_parse_samples)
{
    cr_assert_eq(accel__cpu_max_parse("max 100000\n"), 0, "unlimited");
    cr_assert_eq(accel__cpu_max_parse("max 100000"), 0);
    cr_assert_eq(accel__cpu_max_parse("200000 100000\n"), 2);
    cr_assert_eq(accel__cpu_max_parse("150000 100000\n"), 2, "1.5 -> 2");
    cr_assert_eq(accel__cpu_max_parse("50000 100000\n"), 1, "0.5 -> 1");
    cr_assert_eq(accel__cpu_max_parse("1000 100000\n"), 1, "at least 1");
    cr_assert_eq(accel__cpu_max_parse("400000 100000\n"), 4);
    cr_assert_eq(accel__cpu_max_parse("400001 100000\n"), 5);
    cr_assert_eq(accel__cpu_max_parse("6400000 50000\n"), 128);
    /* malformed: no change to the default */
    cr_assert_eq(accel__cpu_max_parse(""), -1);
    cr_assert_eq(accel__cpu_max_parse("max"), -1);
    cr_assert_eq(accel__cpu_max_parse("100000"), -1);
    cr_assert_eq(accel__cpu_max_parse("abc 100000"), -1);
    cr_assert_eq(accel__cpu_max_parse("100000 0"), -1);
    cr_assert_eq(accel__cpu_max_parse("-5 100000"), -1);
    cr_assert_eq(accel__cpu_max_parse("100000 100000 x"), -1);
    cr_assert_eq(accel__cpu_max_parse(NULL), -1);
}

Test(cpu_limits, proc_self_cgroup_parse)
{
    char out[256];
    cr_assert_eq(accel__cgroup_path_parse("0::/user.slice/node.scope\n", out,
                                          sizeof(out)), 0);
    cr_assert_str_eq(out, "/user.slice/node.scope");
    /* hybrid: v1 lines first, then the unified one */
    cr_assert_eq(accel__cgroup_path_parse(
                     "4:memory:/x\n1:cpu:/\n0::/kubepods/pod1/c2\n", out,
                     sizeof(out)), 0);
    cr_assert_str_eq(out, "/kubepods/pod1/c2");
    cr_assert_eq(accel__cgroup_path_parse("0::/\n", out, sizeof(out)), 0);
    cr_assert_str_eq(out, "/");
    /* v1 only: none */
    cr_assert_eq(accel__cgroup_path_parse("4:memory:/x\n1:cpu:/\n", out,
                                          sizeof(out)), -1);
    cr_assert_eq(accel__cgroup_path_parse("0::/a/very/long/path\n", out, 8),
                 -1, "does not fit");
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

Test(cpu_limits, cgroup_walk_takes_the_tightest_ancestor)
{
    char root[] = "/tmp/accel-cg-XXXXXX";
    cr_assert_not_null(mkdtemp(root));
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/a", root);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/a/b", root);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/a/b/c", root);
    mkdir(p, 0755);

    /* missing files everywhere: unlimited */
    cr_assert_eq(accel__cgroup_cpu_limit(root, "/a/b/c"), 0);
    /* a missing cgroup directory: unlimited */
    cr_assert_eq(accel__cgroup_cpu_limit(root, "/nope/x"), 0);

    snprintf(p, sizeof(p), "%s/a/cpu.max", root);
    write_file(p, "300000 100000\n");
    snprintf(p, sizeof(p), "%s/a/b/cpu.max", root);
    write_file(p, "max 100000\n");
    cr_assert_eq(accel__cgroup_cpu_limit(root, "/a/b/c"), 3,
                 "the grandparent's quota binds");
    snprintf(p, sizeof(p), "%s/a/b/c/cpu.max", root);
    write_file(p, "150000 100000\n");
    cr_assert_eq(accel__cgroup_cpu_limit(root, "/a/b/c"), 2, "1.5 -> 2");
    cr_assert_eq(accel__cgroup_cpu_limit(root, "/a/b/c/"), 2);
    cr_assert_eq(accel__cgroup_cpu_limit(root, "/a"), 3);
    /* a malformed file limits nothing */
    snprintf(p, sizeof(p), "%s/a/cpu.max", root);
    write_file(p, "garbage\n");
    cr_assert_eq(accel__cgroup_cpu_limit(root, "/a"), 0);
    cr_assert_eq(accel__cgroup_cpu_limit(root, "/a/b/c"), 2);
    /* the mount's own top (a cgroup namespace shows a container's cgroup
     * as "/"): its cpu.max counts too */
    snprintf(p, sizeof(p), "%s/cpu.max", root);
    write_file(p, "100000 100000\n");
    cr_assert_eq(accel__cgroup_cpu_limit(root, "/"), 1);
    cr_assert_eq(accel__cgroup_cpu_limit(root, "/a/b/c"), 1);

    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
}

/* The first n CPUs of the current mask, as a mask. */
static int first_cpus(unsigned n, cpu_set_t *out, unsigned *list)
{
    cpu_set_t cur;
    if (sched_getaffinity(0, sizeof(cur), &cur) != 0)
        return -1;
    CPU_ZERO(out);
    unsigned got = 0;
    for (unsigned c = 0; c < CPU_SETSIZE && got < n; c++)
        if (CPU_ISSET(c, &cur)) {
            CPU_SET(c, out);
            if (list)
                list[got] = c;
            got++;
        }
    return (int)got;
}

/* In a forked child: restrict the affinity to the first n CPUs, create a
 * runtime with `workers`, exit with its worker count (255: error). */
static int child_workers(unsigned n, unsigned workers)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        cpu_set_t set;
        if (first_cpus(n, &set, NULL) != (int)n ||
            sched_setaffinity(0, sizeof(set), &set) != 0)
            _exit(255);
        accel_runtime_config cfg = {.workers = workers};
        accel_runtime *rt;
        if (accel_runtime_create(&cfg, &rt) != ACCEL_OK)
            _exit(255);
        unsigned w = accel_runtime_workers(rt);
        accel_runtime_stats st;
        if (accel_runtime_get_stats(rt, &st, sizeof(st)) != ACCEL_OK || st.workers != w)
            _exit(255);
        accel_runtime_destroy(rt);
        _exit((int)w);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* The tightest cgroup v2 CPU quota on this process's path, in whole CPUs
 * rounded up; 0 if none. Written apart from cpu_limits.c (a plain sscanf
 * walk of the files), so the expectation does not come from the code
 * under test. */
static long quota_cpus_independent(void)
{
    char line[PATH_MAX + 64], rel[PATH_MAX] = "";
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return 0;
    bool found = false;
    while (!found && fgets(line, sizeof(line), f))
        if (strncmp(line, "0::", 3) == 0 &&
            sscanf(line + 3, "%4095[^\n]", rel) == 1)
            found = true;
    fclose(f);
    if (!found)
        return 0;
    long best = 0;
    for (;;) {
        char path[PATH_MAX + 64], q[32];
        long long period = 0;
        snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpu.max",
                 strcmp(rel, "/") == 0 ? "" : rel);
        FILE *m = fopen(path, "r");
        if (m) {
            if (fscanf(m, "%31s %lld", q, &period) == 2 && period > 0 &&
                strcmp(q, "max") != 0) {
                long long quota = atoll(q);
                long c = (long)((quota + period - 1) / period);
                if (c < 1)
                    c = 1;
                if (quota > 0 && (best == 0 || c < best))
                    best = c;
            }
            fclose(m);
        }
        char *slash = strrchr(rel, '/');
        if (!slash || strcmp(rel, "/") == 0)
            break;
        if (slash == rel)
            strcpy(rel, "/");
        else
            *slash = '\0';
    }
    return best;
}

Test(cpu_limits, default_workers_follow_the_affinity_mask, .timeout = 30)
{
    cr_assert_eq(child_workers(1, 0), 1, "one allowed CPU: one worker");
    cpu_set_t cur;
    cr_assert_eq(sched_getaffinity(0, sizeof(cur), &cur), 0);
    unsigned avail = (unsigned)CPU_COUNT(&cur);
    if (avail >= 2) {
        /* expected 2 unless this process's cgroup quota is tighter */
        long q = quota_cpus_independent();
        int want = q > 0 && q < 2 ? (int)q : 2;
        cr_assert_eq(child_workers(2, 0), want, "cgroup quota %ld", q);
    }
    cr_assert_eq(child_workers(1, 3), 3, "an explicit count wins");
}

/* Thread names and Cpus_allowed_list of this process's threads. */
static int find_thread(const char *name, char *cpus, size_t cap)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[300], buf[256] = {0};
        snprintf(p, sizeof(p), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(p, "r");
        if (!f)
            continue;
        if (!fgets(buf, sizeof(buf), f))
            buf[0] = 0;
        fclose(f);
        buf[strcspn(buf, "\n")] = 0;
        if (strcmp(buf, name) != 0)
            continue;
        found = 1;
        snprintf(p, sizeof(p), "/proc/self/task/%s/status", e->d_name);
        f = fopen(p, "r");
        while (f && fgets(buf, sizeof(buf), f))
            if (strncmp(buf, "Cpus_allowed_list:", 18) == 0) {
                char *v = buf + 18;
                while (*v == ' ' || *v == '\t')
                    v++;
                v[strcspn(v, "\n")] = 0;
                snprintf(cpus, cap, "%s", v);
            }
        if (f)
            fclose(f);
        break;
    }
    closedir(d);
    return found;
}

Test(cpu_limits, thread_names_and_pinning, .timeout = 30)
{
    unsigned cpu;
    cpu_set_t set;
    cr_assert_eq(first_cpus(1, &set, &cpu), 1);
    accel_runtime_config cfg = {.workers = 3, .short_lane_workers = 1,
                                .worker_cpus = &cpu, .worker_cpus_count = 1};
    accel_runtime *rt;
    cr_assert_eq(accel_runtime_create(&cfg, &rt), ACCEL_OK);
    cr_assert_eq(accel_runtime_workers(rt), 3);
    char want[16], got[256];
    snprintf(want, sizeof(want), "%u", cpu);
    const char *names[] = {"accel-short0", "accel-w0", "accel-w1"};
    for (int i = 0; i < 3; i++) {
        got[0] = 0;
        cr_assert(find_thread(names[i], got, sizeof(got)), "%s", names[i]);
        cr_assert_str_eq(got, want, "%s pinned", names[i]);
    }
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

Test(cpu_limits, bad_pinning_is_einval)
{
    unsigned bad = 1u << 19; /* not in any real mask */
    accel_runtime *rt = NULL;
    accel_runtime_config cfg = {.worker_cpus = &bad, .worker_cpus_count = 1};
    cr_assert_eq(accel_runtime_create(&cfg, &rt), ACCEL_EINVAL);
    cr_assert_null(rt);
    accel_runtime_config nul = {.worker_cpus_count = 2};
    cr_assert_eq(accel_runtime_create(&nul, &rt), ACCEL_EINVAL);
}

static int nop(accel_ctx *ctx, void *arg)
{
    (void)ctx, (void)arg;
    return 0;
}

Test(cpu_limits, runtime_stats_count_visits, .timeout = 30)
{
    accel_runtime *rt = tu_runtime(2);
    accel_runtime_stats st;
    cr_assert_eq(accel_runtime_get_stats(NULL, &st, sizeof(st)), ACCEL_EINVAL);
    cr_assert_eq(accel_runtime_get_stats(rt, NULL, sizeof(st)), ACCEL_EINVAL);
    cr_assert_eq(accel_runtime_get_stats(rt, &st, 8), ACCEL_EINVAL);
    accel_session *s = tu_open(rt, "rt-stats", 0, 0);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(accel_submit_wait(s, nop, NULL, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_runtime_get_stats(rt, &st, sizeof(st)), ACCEL_OK);
    cr_assert_eq(st.workers, 2);
    cr_assert_eq(st.sessions, 1);
    cr_assert_geq(st.visits, 1);
    cr_assert_geq(st.picks, st.visits);
    cr_assert_leq(st.parked, 2);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
