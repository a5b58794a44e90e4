/* Compiles runtime/cpu_limits.c into the Go package (cgo builds every .c here). */
#include "../../runtime/cpu_limits.c"
