/* Compiles runtime/futex.c into the Go package (cgo builds every .c here). */
#include "../../runtime/futex.c"
