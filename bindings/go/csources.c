/*
 * The library's C sources, compiled into the Go package as one unit (as
 * SQLite's amalgamation is): cgo builds every .c file of the package, and
 * this is the one that pulls the runtime and the backends in, so `go
 * build` needs no installed libaccel. The list is the library's own
 * (CMakeLists.txt ACCEL_SOURCES): csources_test.go keeps the two equal.
 */
#if defined(__has_include)
#if !__has_include(<urcu/urcu-memb.h>)
#error "accel: liburcu's headers are missing: install liburcu-dev (apt install liburcu-dev)"
#endif
#endif

#include "../../runtime/abi.c"
#include "../../runtime/alloc.c"
#include "../../runtime/arena.c"
#include "../../runtime/backend_module.c"
#include "../../runtime/backend_registry.c"
#include "../../runtime/batch.c"
#include "../../runtime/budget.c"
#include "../../runtime/cancel.c"
#include "../../runtime/compensate.c"
#include "../../runtime/cpu_limits.c"
#include "../../runtime/fault.c"
#include "../../runtime/fork.c"
#include "../../runtime/futex.c"
#include "../../runtime/host.c"
#include "../../runtime/metrics.c"
#include "../../runtime/op_ctx.c"
#include "../../runtime/park.c"
#include "../../runtime/waiters.c"
#include "../../runtime/rcu.c"
#include "../../runtime/runtime.c"
#include "../../runtime/runtime_stats.c"
#include "../../runtime/sched_calendar.c"
#include "../../runtime/sched_wfq.c"
#include "../../runtime/session.c"
#include "../../runtime/status.c"
#include "../../runtime/submit.c"
#include "../../runtime/table.c"
#include "../../runtime/visit.c"
#include "../../runtime/waitstat.c"
#include "../../runtime/worker.c"
#include "../../runtime/yield.c"
#include "../../backends/cpu/cpu_backend.c"
#include "../../backends/cuda/cuda_api.c"

/* The backend table that CMake generates from cmake/backends_builtin.c.in,
 * written out for the Go package: the CPU backend built in, CUDA as the
 * loadable module "cuda" (found as the library's own build would find it). */

extern const accel__backend_ops accel__backend_cpu;
const accel__backend_ops *const accel__builtin_backends[] = {&accel__backend_cpu, NULL};

const char *const accel__module_backends[ACCEL__BACKEND_KINDS] = {[ACCEL_BACKEND_CUDA] = "cuda"};
