/* Compiles runtime/progress.c into the Go package (cgo builds every .c here). */
#include "../../runtime/progress.c"
