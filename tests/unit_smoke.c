#include <criterion/criterion.h>
#include <stdatomic.h>
#include <accel/accel.h>

static _Atomic int runs;
static int op_inc(accel_ctx *ctx, void *arg) { (void)ctx; (void)arg; atomic_fetch_add(&runs, 1); return 0; }

Test(smoke, open_submit_close, .timeout = 10) {
    accel_runtime *rt;
    accel_runtime_config cfg = {.workers = 2};
    cr_assert_eq(accel_runtime_create(&cfg, &rt), ACCEL_OK);
    accel_session *s;
    accel_session_config sc = {.id = "a"};
    cr_assert_eq(accel_session_open(rt, &sc, &s), ACCEL_OK);
    accel_op op = {.fn = op_inc};
    for (int i = 0; i < 10000; i++)
        cr_assert_eq(accel_submit(s, &op, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(accel_session_sync(s, ACCEL_FOREVER), ACCEL_OK);
    cr_assert_eq(atomic_load(&runs), 10000);
    cr_assert_eq(accel_session_close(s, 0), ACCEL_OK);
    accel_session_release(s);
    cr_assert_eq(accel_runtime_destroy(rt), ACCEL_OK);
}
