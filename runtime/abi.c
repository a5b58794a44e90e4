/*
 * ABI helpers: the library version, growable config structs read by size,
 * the reading of stats written by size lives with what it reads
 * (session.c; docs/abi.md).
 */
#include "abi.h"

#include <string.h>

#include "accel/accel.h"

const char *accel_version(void)
{
    return ACCEL_VERSION_STRING;
}

int accel_version_number(void)
{
    return ACCEL_VERSION_NUMBER;
}

int accel__config_copy(void *dst, size_t dst_size, const void *src,
                       uint32_t user_size, size_t base_size)
{
    size_t n = user_size ? user_size : base_size;
    if (n < base_size)
        return -1;
    /* A newer caller: every byte past what we know must be zero. */
    const unsigned char *p = src;
    for (size_t i = dst_size; i < n; i++)
        if (p[i])
            return -1;
    memset(dst, 0, dst_size);
    memcpy(dst, src, n < dst_size ? n : dst_size);
    return 0;
}
