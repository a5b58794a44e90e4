/* Compiles runtime/runtime.c into the Go package (cgo builds every .c here). */
#include "../../runtime/runtime.c"
