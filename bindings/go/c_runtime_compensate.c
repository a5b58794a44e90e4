/* Compiles runtime/compensate.c into the Go package (cgo builds every .c here). */
#include "../../runtime/compensate.c"
