/*
 * The ABI rules of include/accel/accel.h ("Growing structs"): version
 * functions agree with the header; config structs are read by their
 * struct_size (0: this release's layout; a newer caller's unknown fields
 * must be zero); stats are written by size and never past it.
 *
 * Promises: 5
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "core_util.h"

Test(abi, version_matches_header)
{
    cr_assert_str_eq(accel_version(), ACCEL_VERSION_STRING);
    cr_assert_eq(accel_version_number(), ACCEL_VERSION_NUMBER);
    char want[32];
    snprintf(want, sizeof(want), "%d.%d.%d", ACCEL_VERSION_MAJOR,
             ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH);
    cr_assert_str_eq(accel_version(), want);
    cr_assert(ACCEL_VERSION_AT_LEAST(0, 1, 0));
    cr_assert(!ACCEL_VERSION_AT_LEAST(ACCEL_VERSION_MAJOR + 1, 0, 0));
}

/* A caller built against a later header: one more field after ours. */
typedef struct future_runtime_config {
    accel_runtime_config base;
    uint64_t added_later;
} future_runtime_config;

typedef struct future_session_config {
    accel_session_config base;
    uint64_t added_later;
} future_session_config;

Test(abi, runtime_config_read_by_size, .timeout = 30)
{
    accel_runtime *rt = NULL;
    accel_runtime_config c = {.workers = 1}; /* struct_size 0 */
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_OK);
    cr_assert_eq(accel_runtime_workers(rt), 1);
    accel_runtime_destroy(rt);

    c.struct_size = sizeof(c);
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_OK);
    accel_runtime_destroy(rt);

    c.struct_size = 8; /* below the first layout that had the field */
    rt = NULL;
    cr_assert_eq(accel_runtime_create(&c, &rt), ACCEL_EINVAL);
    cr_assert_null(rt);

    future_runtime_config f;
    memset(&f, 0, sizeof(f));
    f.base.workers = 1;
    f.base.struct_size = sizeof(f);
    cr_assert_eq(accel_runtime_create(&f.base, &rt), ACCEL_OK,
                 "unknown fields left zero are fine");
    accel_runtime_destroy(rt);
    f.added_later = 1;
    rt = NULL;
    cr_assert_eq(accel_runtime_create(&f.base, &rt), ACCEL_EINVAL,
                 "an unknown field set is refused, not ignored");
    cr_assert_null(rt);
}

Test(abi, session_config_read_by_size, .timeout = 30)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = NULL;
    future_session_config f;
    memset(&f, 0, sizeof(f));
    f.base.id = "abi";
    f.base.struct_size = sizeof(f);
    f.added_later = 7;
    cr_assert_eq(accel_session_open(rt, &f.base, &s), ACCEL_EINVAL);
    f.added_later = 0;
    cr_assert_eq(accel_session_open(rt, &f.base, &s), ACCEL_OK);
    accel_session_release(s);
    accel_session_config c = {.id = "abi", .struct_size = 4};
    cr_assert_eq(accel_session_open(rt, &c, &s), ACCEL_EINVAL);
    c.struct_size = 0;
    cr_assert_eq(accel_session_open(rt, &c, &s), ACCEL_OK);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}

static int nop(accel_ctx *c, void *a)
{
    (void)c, (void)a;
    return 0;
}

Test(abi, stats_written_by_size, .timeout = 30)
{
    accel_runtime *rt = tu_runtime(1);
    accel_session *s = tu_open(rt, "abi-stats", 0, 0);
    cr_assert_eq(accel_submit_wait(s, nop, NULL, ACCEL_FOREVER), 0);

    /* a later caller's bigger struct: bytes past ours are not touched */
    unsigned char big[sizeof(accel_session_stats) + 32];
    memset(big, 0xAB, sizeof(big));
    cr_assert_eq(accel_session_get_stats_ex(s, (accel_session_stats *)big,
                                            sizeof(big)), ACCEL_OK);
    for (size_t i = sizeof(accel_session_stats); i < sizeof(big); i++)
        cr_assert_eq(big[i], 0xAB);
    accel_session_stats st;
    memcpy(&st, big, sizeof(st));
    cr_assert_eq(st.completed, 1);

    /* get_stats writes the 0.1 layout and nothing past it */
    memset(big, 0xAB, sizeof(big));
    cr_assert_eq(accel_session_get_stats(s, (accel_session_stats *)big),
                 ACCEL_OK);
    for (size_t i = ACCEL_SESSION_STATS_SIZE_0_1; i < sizeof(big); i++)
        cr_assert_eq(big[i], 0xAB);
    cr_assert_eq(accel_session_get_stats_ex(s, &st, 8), ACCEL_EINVAL);
    cr_assert_eq(accel_session_get_stats_ex(NULL, &st, sizeof(st)),
                 ACCEL_EINVAL);

    accel_runtime_stats rs;
    memset(big, 0xAB, sizeof(big));
    cr_assert_eq(accel_runtime_get_stats(rt, (accel_runtime_stats *)big,
                                         sizeof(accel_runtime_stats) + 8),
                 ACCEL_OK);
    for (size_t i = sizeof(accel_runtime_stats); i < sizeof(big); i++)
        cr_assert_eq(big[i], 0xAB);
    memcpy(&rs, big, sizeof(rs));
    cr_assert_eq(rs.workers, 1);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
