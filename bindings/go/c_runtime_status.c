/* Compiles runtime/status.c into the Go package (cgo builds every .c here). */
#include "../../runtime/status.c"
