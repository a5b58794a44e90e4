/* Compiles runtime/fork.c into the Go package (cgo builds every .c here). */
#include "../../runtime/fork.c"
