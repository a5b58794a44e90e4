/* Compiles runtime/host.c into the Go package (cgo builds every .c here). */
#include "../../runtime/host.c"
