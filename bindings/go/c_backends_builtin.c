/* The backend table that CMake generates from cmake/backends_builtin.c.in,
 * written out for the Go package: the CPU backend built in, CUDA as the
 * loadable module "cuda" (found as the library's own build would find it). */
#include "../../runtime/backend_registry.h"

extern const accel__backend_ops accel__backend_cpu;
const accel__backend_ops *const accel__builtin_backends[] = {&accel__backend_cpu, NULL};

const char *const accel__module_backends[ACCEL__BACKEND_KINDS] = {[ACCEL_BACKEND_CUDA] = "cuda"};
