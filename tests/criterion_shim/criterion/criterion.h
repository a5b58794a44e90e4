/*
 * A minimal stand-in for <criterion/criterion.h>: the macros the fault
 * sweep (tests/unit_faults.c) uses, so that it can run where Criterion is
 * not installed (the GPU bundle, scripts/build-gpu-bundle.sh). Like
 * Criterion, each test runs in a child process of its own (shim.c's main,
 * which never calls CUDA itself); any failed assertion ends that child
 * with a message and exit 1; .timeout ends it with SIGALRM.
 */
#ifndef ACCEL_TESTS_CRITERION_SHIM_H
#define ACCEL_TESTS_CRITERION_SHIM_H

#include <stdbool.h>
#include <stddef.h>

struct accel_shim_opts {
    int timeout;
};

void accel_shim_register(const char *suite, const char *name, void (*fn)(void),
                         const struct accel_shim_opts *opts);
_Noreturn void accel_shim_fail(const char *file, int line, const char *expr,
                               const char *fmt, ...);

#define Test(suite, name, ...)                                                \
    static void suite##_##name(void);                                         \
    static const struct accel_shim_opts suite##_##name##_opts = {__VA_ARGS__}; \
    __attribute__((constructor)) static void suite##_##name##_reg(void)       \
    {                                                                         \
        accel_shim_register(#suite, #name, suite##_##name,                    \
                            &suite##_##name##_opts);                          \
    }                                                                         \
    static void suite##_##name(void)

#define cr_assert(c, ...)                                                     \
    do {                                                                      \
        if (!(c))                                                             \
            accel_shim_fail(__FILE__, __LINE__, #c, "" __VA_ARGS__);          \
    } while (0)
#define cr_expect cr_assert
#define cr_assert_eq(a, b, ...) cr_assert((a) == (b), __VA_ARGS__)
#define cr_assert_neq(a, b, ...) cr_assert((a) != (b), __VA_ARGS__)
#define cr_assert_gt(a, b, ...) cr_assert((a) > (b), __VA_ARGS__)
#define cr_assert_geq(a, b, ...) cr_assert((a) >= (b), __VA_ARGS__)
#define cr_assert_lt(a, b, ...) cr_assert((a) < (b), __VA_ARGS__)
#define cr_assert_leq(a, b, ...) cr_assert((a) <= (b), __VA_ARGS__)
#define cr_assert_null(p, ...) cr_assert((p) == NULL, __VA_ARGS__)
#define cr_assert_not_null(p, ...) cr_assert((p) != NULL, __VA_ARGS__)
#define cr_expect_gt cr_assert_gt
#define cr_expect_eq cr_assert_eq

#endif
