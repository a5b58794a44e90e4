/* Compiles runtime/submit.c into the Go package (cgo builds every .c here). */
#include "../../runtime/submit.c"
