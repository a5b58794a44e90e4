/* Built instead of backends/cuda/ when the library has no CUDA backend. */
#include "../../runtime/backend.h"

const accel__backend_ops *const accel__backend_cuda_ops = NULL;
