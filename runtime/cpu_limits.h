/*
 * How many CPUs the process may really use: its affinity mask and the
 * cgroup v2 CPU quota (cpu.max of its cgroup and every ancestor), not the
 * online count. The runtime sizes its default worker pool with it.
 *
 * The parsers are pure functions over a string or a directory so that tests
 * can feed them sample contents (tests/unit_cpu_limits.c).
 */
#ifndef ACCEL_RUNTIME_CPU_LIMITS_H
#define ACCEL_RUNTIME_CPU_LIMITS_H

#include <pthread.h>
#include <stddef.h>

/* Parses the contents of a cgroup v2 cpu.max file ("$MAX $PERIOD", MAX may
 * be "max"). Returns the CPUs the quota allows, ceil(quota / period) and at
 * least 1; 0 when unlimited ("max"); -1 when the text is malformed. */
long accel__cpu_max_parse(const char *text);

/* The path of the process's cgroup v2 from the contents of
 * /proc/self/cgroup (the "0::/path" line), copied into out (cap bytes).
 * Returns 0, or -1 when there is none (cgroup v1 only) or it does not fit. */
int accel__cgroup_path_parse(const char *proc_self_cgroup, char *out,
                             size_t cap);

/* The tightest quota on the cgroup `rel` (as from accel__cgroup_path_parse)
 * under the cgroup2 mount `root`: the minimum over cpu.max of the cgroup
 * and each ancestor. A missing or unreadable file limits nothing. Returns
 * CPUs (>= 1), or 0 when unlimited. */
long accel__cgroup_cpu_limit(const char *root, const char *rel);

/* CPUs in the calling thread's affinity mask (>= 1). */
unsigned accel__affinity_cpus(void);

/* The default worker count: min(affinity CPUs, cgroup quota CPUs), at
 * least 1. Reads /proc/self/cgroup and /sys/fs/cgroup. Cold path. */
unsigned accel__default_workers(void);

/* ACCEL_OK when each of cpus[0..n) is in the process's affinity mask,
 * else ACCEL_EINVAL. */
int accel__cpus_allowed(const unsigned *cpus, unsigned n);

/* Pins thread t to one CPU: ACCEL_OK or ACCEL_EINVAL. */
int accel__thread_pin(pthread_t t, unsigned cpu);

#endif
