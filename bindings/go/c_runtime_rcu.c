/* Compiles runtime/rcu.c into the Go package (cgo builds every .c here). */
#include "../../runtime/rcu.c"
