/* Compiles runtime/arena.c into the Go package (cgo builds every .c here). */
#include "../../runtime/arena.c"
