/* Compiles runtime/fault.c into the Go package (cgo builds every .c here). */
#include "../../runtime/fault.c"
