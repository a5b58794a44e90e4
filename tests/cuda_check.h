/* Shared by the plain main() CUDA tests (tests/cuda_*.c). */
#ifndef ACCEL_TESTS_CUDA_CHECK_H
#define ACCEL_TESTS_CUDA_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <accel/accel.h>
#include <accel/cuda.h>

#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                    #c);                                                      \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

#define CHECK_EQ(a, b)                                                        \
    do {                                                                      \
        long long a_ = (long long)(a), b_ = (long long)(b);                   \
        if (a_ != b_) {                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld vs %lld)\n", \
                    __FILE__, __LINE__, #a, #b, a_, b_);                      \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

/* A runtime with a usable CUDA device, or exit 77 (skipped). */
static inline accel_runtime *cuda_runtime_or_skip(unsigned workers)
{
    accel_runtime *rt;
    accel_runtime_config cfg = {.workers = workers};
    CHECK_EQ(accel_runtime_create(&cfg, &rt), ACCEL_OK);
    int st = accel_runtime_cuda_status(rt);
    if (st != ACCEL_OK) {
        printf("no usable CUDA device (%s): skipped\n", accel_strerror(st));
        CHECK_EQ(accel_runtime_destroy(rt), ACCEL_OK);
        exit(77);
    }
    return rt;
}

#endif
