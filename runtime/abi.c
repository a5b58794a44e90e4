/*
 * ABI helpers: the library version, growable config structs read by size,
 * stats written by size (docs/abi.md).
 */
#include "abi.h"

#include <string.h>

#include "accel/accel.h"
#include "session.h"

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

int accel_session_get_stats_ex(const accel_session *s,
                               accel_session_stats *out, size_t size)
{
    if (!s || !out || size < ACCEL_SESSION_STATS_SIZE_0_1)
        return ACCEL_EINVAL;
    accel_session_stats full;
    accel__session_fill_stats(s, &full);
    memcpy(out, &full, size < sizeof(full) ? size : sizeof(full));
    return ACCEL_OK;
}

int accel_session_get_stats(const accel_session *s, accel_session_stats *out)
{
    return accel_session_get_stats_ex(s, out, ACCEL_SESSION_STATS_SIZE_0_1);
}
