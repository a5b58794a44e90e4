/* Compiles runtime/cancel.c into the Go package (cgo builds every .c here). */
#include "../../runtime/cancel.c"
