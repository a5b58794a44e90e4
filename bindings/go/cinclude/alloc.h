/* Forwards to runtime/alloc.h for the backend sources compiled into the Go
 * package: CMake gives them runtime/ as a quote-only include path, which
 * cgo does not allow (-iquote), and as -I runtime/sched.h would shadow the
 * system <sched.h>. */
#include "../../../runtime/alloc.h"
