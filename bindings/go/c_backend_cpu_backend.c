/* Compiles backends/cpu/cpu_backend.c into the Go package (CPU backend only). */
#include "../../backends/cpu/cpu_backend.c"
