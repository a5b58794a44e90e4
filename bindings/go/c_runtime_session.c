/* Compiles runtime/session.c into the Go package (cgo builds every .c here). */
#include "../../runtime/session.c"
