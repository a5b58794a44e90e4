/*
 * Reading growable public structs (include/accel/accel.h, "Growing
 * structs"; docs/abi.md).
 */
#ifndef ACCEL_RUNTIME_ABI_H
#define ACCEL_RUNTIME_ABI_H

#include <stddef.h>
#include <stdint.h>

/* Copies a caller's config struct into dst (the library's layout, dst_size
 * bytes), zero-filling what the caller's layout lacks. user_size is the
 * caller's struct_size; 0 means base_size (the layout through struct_size
 * of the release that introduced the field). Returns 0, or -1 (EINVAL)
 * when user_size is below base_size, or when the caller's struct is larger
 * than ours and a byte we do not know is non-zero. */
int accel__config_copy(void *dst, size_t dst_size, const void *src,
                       uint32_t user_size, size_t base_size);

/* The base layout of each config: through its struct_size field. */
#define ACCEL__BASE_SIZE(type)                                                 \
    (offsetof(type, struct_size) + sizeof(uint32_t))

#endif
