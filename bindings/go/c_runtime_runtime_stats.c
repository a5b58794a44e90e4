/* Compiles runtime/runtime_stats.c into the Go package (cgo builds every .c here). */
#include "../../runtime/runtime_stats.c"
