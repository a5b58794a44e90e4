/* The runner of criterion_shim/criterion/criterion.h: one child process
 * per test, in registration order; exit 1 if any failed. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "criterion/criterion.h"

#define MAXT 64
static struct {
    const char *suite, *name;
    void (*fn)(void);
    int timeout;
} tests[MAXT];
static int ntests;

void accel_shim_register(const char *suite, const char *name, void (*fn)(void),
                         const struct accel_shim_opts *opts)
{
    if (ntests == MAXT)
        abort();
    tests[ntests].suite = suite;
    tests[ntests].name = name;
    tests[ntests].fn = fn;
    tests[ntests].timeout = opts->timeout;
    ntests++;
}

void accel_shim_fail(const char *file, int line, const char *expr,
                     const char *fmt, ...)
{
    fprintf(stderr, "%s:%d: assertion failed: %s", file, line, expr);
    if (*fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    exit(1);
}

int main(int argc, char **argv)
{
    (void)argc, (void)argv; /* Criterion's options (--jobs 1) are ignored */
    int failed = 0;
    for (int i = 0; i < ntests; i++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            alarm(tests[i].timeout > 0 ? (unsigned)tests[i].timeout : 60);
            tests[i].fn();
            fflush(NULL);
            _exit(0);
        }
        int st = 0;
        while (waitpid(pid, &st, 0) < 0)
            ;
        int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        printf("[%s] %s::%s", ok ? "PASS" : "FAIL", tests[i].suite,
               tests[i].name);
        if (WIFSIGNALED(st))
            printf(" (signal %d%s)", WTERMSIG(st),
                   WTERMSIG(st) == SIGALRM ? ": timeout" : "");
        else if (!ok)
            printf(" (exit %d)", WEXITSTATUS(st));
        printf("\n");
        failed += !ok;
    }
    printf("shim: %d tests, %d failed\n", ntests, failed);
    return failed != 0;
}
