/*
 * A stress program's failure reports: threads cannot stop the run, so a
 * failed check is counted in stress_failures and the first 20 are printed;
 * main exits nonzero when the count is not 0.
 */
#ifndef ACCEL_TESTS_STRESS_FAIL_H
#define ACCEL_TESTS_STRESS_FAIL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

static _Atomic uint64_t stress_failures;

__attribute__((format(printf, 1, 2))) static void failf(const char *fmt, ...)
{
    if (atomic_fetch_add(&stress_failures, 1) < 20) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "FAIL: ");
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

#endif
