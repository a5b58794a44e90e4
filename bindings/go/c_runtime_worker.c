/* Compiles runtime/worker.c into the Go package (cgo builds every .c here). */
#include "../../runtime/worker.c"
