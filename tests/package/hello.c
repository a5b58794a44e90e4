/* Built against an installed libaccel-dev package (scripts/package-test.sh):
 * runs one op and prints the version and a line of metrics. */
#include <accel/accel.h>
#include <stdio.h>
#include <string.h>

static int add_one(accel_ctx *ctx, void *arg)
{
    (void)ctx;
    ++*(int *)arg;
    return 0;
}

int main(void)
{
    accel_runtime_config rc = {.workers = 1};
    accel_runtime *rt;
    if (accel_runtime_create(&rc, &rt) != ACCEL_OK)
        return 1;
    accel_session_config sc = {.id = "pkg", .backend = ACCEL_BACKEND_CPU};
    accel_session *s;
    int v = 41;
    if (accel_session_open(rt, &sc, &s) != ACCEL_OK ||
        accel_submit_wait(s, add_one, &v, ACCEL_FOREVER) != 0 || v != 42)
        return 1;
    char buf[8192];
    size_t len;
    if (accel_runtime_write_prometheus(rt, buf, sizeof(buf), &len) != ACCEL_OK ||
        len >= sizeof(buf) ||
        !strstr(buf, "accel_session_ops_completed_total{session=\"pkg\",priority=\"5\"} 1\n"))
        return 1;
    printf("hello from libaccel %s (header %s): %d\n", accel_version(),
           ACCEL_VERSION_STRING, v);
    accel_session_release(s);
    return accel_runtime_destroy(rt) == ACCEL_OK ? 0 : 1;
}
