/* Compiles runtime/backend_module.c into the Go package (cgo builds every .c here). */
#include "../../runtime/backend_module.c"
