/* Compiles runtime/backend_registry.c into the Go package (cgo builds every .c here). */
#include "../../runtime/backend_registry.c"
