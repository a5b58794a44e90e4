/*
 * CPU limits of the process (see cpu_limits.h). Cold path: runs once per
 * runtime creation.
 */
#include "cpu_limits.h"

#include "accel/accel.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long accel__cpu_max_parse(const char *text)
{
    if (!text)
        return -1;
    while (*text == ' ' || *text == '\t')
        text++;
    long long quota;
    char *end;
    if (strncmp(text, "max", 3) == 0) {
        quota = -1;
        end = (char *)text + 3;
    } else {
        errno = 0;
        quota = strtoll(text, &end, 10);
        if (end == text || errno || quota <= 0)
            return -1;
    }
    if (*end != ' ' && *end != '\t')
        return -1;
    char *pend;
    errno = 0;
    long long period = strtoll(end, &pend, 10);
    if (pend == end || errno || period <= 0)
        return -1;
    while (*pend == ' ' || *pend == '\t' || *pend == '\n')
        pend++;
    if (*pend)
        return -1;
    if (quota < 0)
        return 0;
    long long cpus = quota / period + (quota % period != 0);
    if (cpus > INT_MAX)
        cpus = INT_MAX;
    return cpus < 1 ? 1 : (long)cpus;
}

int accel__cgroup_path_parse(const char *text, char *out, size_t cap)
{
    if (!text || !out || cap == 0)
        return -1;
    const char *line = text;
    while (*line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        /* cgroup v2 is hierarchy 0 with no controllers: "0::/path" */
        if (len >= 4 && strncmp(line, "0::", 3) == 0 && line[3] == '/') {
            size_t plen = len - 3;
            if (plen >= cap)
                return -1;
            memcpy(out, line + 3, plen);
            out[plen] = '\0';
            return 0;
        }
        if (!nl)
            break;
        line = nl + 1;
    }
    return -1;
}

/* Reads a small file into buf (NUL-terminated). -1 if it cannot. */
static int read_small(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return 0;
}

long accel__cgroup_cpu_limit(const char *root, const char *rel)
{
    if (!root || !rel)
        return 0;
    char dir[PATH_MAX];
    int n = snprintf(dir, sizeof(dir), "%s%s%s", root,
                     rel[0] == '/' ? "" : "/", rel);
    if (n < 0 || (size_t)n >= sizeof(dir))
        return 0;
    size_t rootlen = strlen(root);
    long best = 0;
    for (;;) {
        /* strip a trailing slash (except the root's own) */
        size_t len = strlen(dir);
        while (len > rootlen && dir[len - 1] == '/')
            dir[--len] = '\0';
        char path[PATH_MAX + 16];
        char buf[128];
        snprintf(path, sizeof(path), "%s/cpu.max", dir);
        if (read_small(path, buf, sizeof(buf)) == 0) {
            long c = accel__cpu_max_parse(buf);
            if (c > 0 && (best == 0 || c < best))
                best = c;
        }
        if (len <= rootlen)
            break;
        char *slash = strrchr(dir + rootlen, '/');
        if (!slash)
            break;
        *slash = '\0';
    }
    return best;
}

unsigned accel__affinity_cpus(void)
{
    /* Sized for hosts beyond CPU_SETSIZE: grow until the kernel accepts. */
    for (size_t ncpu = 1024; ncpu <= (1u << 20); ncpu *= 2) {
        size_t bytes = CPU_ALLOC_SIZE(ncpu);
        cpu_set_t *set = CPU_ALLOC(ncpu);
        if (!set)
            break;
        if (sched_getaffinity(0, bytes, set) == 0) {
            int c = CPU_COUNT_S(bytes, set);
            CPU_FREE(set);
            return c > 0 ? (unsigned)c : 1u;
        }
        CPU_FREE(set);
        if (errno != EINVAL)
            break;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1u;
}

unsigned accel__default_workers(void)
{
    unsigned cpus = accel__affinity_cpus();
    char text[4096], rel[PATH_MAX];
    if (read_small("/proc/self/cgroup", text, sizeof(text)) == 0 &&
        accel__cgroup_path_parse(text, rel, sizeof(rel)) == 0) {
        long q = accel__cgroup_cpu_limit("/sys/fs/cgroup", rel);
        if (q > 0 && (unsigned long)q < cpus)
            cpus = (unsigned)q;
    }
    return cpus ? cpus : 1u;
}

#define ACCEL__CPU_NUM_MAX (1u << 20)

int accel__cpus_allowed(const unsigned *cpus, unsigned n)
{
    for (size_t ncpu = 1024; ncpu <= ACCEL__CPU_NUM_MAX; ncpu *= 2) {
        size_t bytes = CPU_ALLOC_SIZE(ncpu);
        cpu_set_t *set = CPU_ALLOC(ncpu);
        if (!set)
            return ACCEL_ENOMEM;
        if (sched_getaffinity(0, bytes, set) != 0) {
            CPU_FREE(set);
            if (errno == EINVAL)
                continue;
            return ACCEL_EINVAL;
        }
        int rc = ACCEL_OK;
        for (unsigned i = 0; i < n && rc == ACCEL_OK; i++)
            if (cpus[i] >= ncpu || !CPU_ISSET_S(cpus[i], bytes, set))
                rc = ACCEL_EINVAL;
        CPU_FREE(set);
        return rc;
    }
    return ACCEL_EINVAL;
}

int accel__thread_pin(pthread_t t, unsigned cpu)
{
    if (cpu >= ACCEL__CPU_NUM_MAX)
        return ACCEL_EINVAL;
    size_t bytes = CPU_ALLOC_SIZE(cpu + 1);
    cpu_set_t *set = CPU_ALLOC(cpu + 1);
    if (!set)
        return ACCEL_ENOMEM;
    CPU_ZERO_S(bytes, set);
    CPU_SET_S(cpu, bytes, set);
    int rc = pthread_setaffinity_np(t, bytes, set) == 0 ? ACCEL_OK
                                                        : ACCEL_EINVAL;
    CPU_FREE(set);
    return rc;
}
