/* Compiles runtime/budget.c into the Go package (cgo builds every .c here). */
#include "../../runtime/budget.c"
