/* Compiles runtime/abi.c into the Go package (cgo builds every .c here). */
#include "../../runtime/abi.c"
