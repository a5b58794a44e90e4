/* Compiles backends/cpu/no_cuda.c into the Go package (CPU backend only). */
#include "../../backends/cpu/no_cuda.c"
