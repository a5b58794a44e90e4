/* Compiles runtime/waitstat.c into the Go package (cgo builds every .c here). */
#include "../../runtime/waitstat.c"
