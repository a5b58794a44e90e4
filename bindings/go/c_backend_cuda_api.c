/* Compiles backends/cuda/cuda_api.c (the CUDA accessors, free of CUDA
 * headers: a CPU-only build answers NULL / -1 / ACCEL_ENOBACKEND). */
#include "../../backends/cuda/cuda_api.c"
