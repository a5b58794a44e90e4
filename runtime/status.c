#include "accel/accel.h"

const char *accel_strerror(int status)
{
    switch (status) {
#define ACCEL_STATUS_CASE_(name, value, msg)                                   \
    case ACCEL_##name:                                                         \
        return msg;
        ACCEL_STATUS_MAP(ACCEL_STATUS_CASE_)
#undef ACCEL_STATUS_CASE_
    }
    return "unknown status";
}
