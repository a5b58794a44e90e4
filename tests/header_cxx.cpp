// The public header compiles as C++ on its own (extern "C" guards).
#include <accel/accel.h>
int accel_header_cxx_check() { return ACCEL_EINVAL; }
