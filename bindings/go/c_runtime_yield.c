/* Compiles runtime/yield.c into the Go package (cgo builds every .c here). */
#include "../../runtime/yield.c"
