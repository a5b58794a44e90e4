/* Compiles runtime/metrics.c into the Go package (cgo builds every .c here). */
#include "../../runtime/metrics.c"
