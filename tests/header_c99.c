/* The public header compiles as C99 on its own. */
#include <accel/accel.h>
int accel_header_c99_check(void) { return ACCEL_OK; }
