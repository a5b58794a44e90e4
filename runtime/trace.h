/*
 * USDT tracepoints (provider "accel"), see docs/tracing.md for the list,
 * their arguments and bpftrace one-liners.
 *
 * Built in when the library is configured with ACCEL_WITH_USDT (the
 * default where <sys/sdt.h> exists: Debian's systemtap-sdt-dev). A probe
 * is a single nop in the code plus a note in .note.stapsdt; a tracer that
 * attaches turns the nop into a trap. With no tracer attached the cost is
 * the nop and keeping the arguments live in registers (bench_throughput,
 * docs/tracing.md). Without ACCEL_WITH_USDT the macros expand to nothing.
 */
#ifndef ACCEL_RUNTIME_TRACE_H
#define ACCEL_RUNTIME_TRACE_H

#if defined(ACCEL_WITH_USDT)
#include <sys/sdt.h>
#define ACCEL_TRACE1(name, a) DTRACE_PROBE1(accel, name, a)
#define ACCEL_TRACE2(name, a, b) DTRACE_PROBE2(accel, name, a, b)
#define ACCEL_TRACE3(name, a, b, c) DTRACE_PROBE3(accel, name, a, b, c)
#define ACCEL_TRACE4(name, a, b, c, d) DTRACE_PROBE4(accel, name, a, b, c, d)
#else
#define ACCEL_TRACE1(name, a) ((void)0)
#define ACCEL_TRACE2(name, a, b) ((void)0)
#define ACCEL_TRACE3(name, a, b, c) ((void)0)
#define ACCEL_TRACE4(name, a, b, c, d) ((void)0)
#endif

#endif
