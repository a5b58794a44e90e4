/* Compiles runtime/ring.c into the Go package (cgo builds every .c here). */
#include "../../runtime/ring.c"
