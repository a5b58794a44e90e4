/* Compiles runtime/table.c into the Go package (cgo builds every .c here). */
#include "../../runtime/table.c"
