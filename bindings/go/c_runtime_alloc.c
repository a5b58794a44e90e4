/* Compiles runtime/alloc.c into the Go package (cgo builds every .c here). */
#include "../../runtime/alloc.c"
