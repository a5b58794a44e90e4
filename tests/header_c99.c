/* The public headers compile as C99 on their own. */
#include <accel/accel.h>
#include <accel/host.h>
int accel_header_c99_check(void) { return ACCEL_OK; }
