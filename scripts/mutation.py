#!/usr/bin/env python3
"""The mutation run of docs/reliability.md: plants small, plausible bugs
one at a time in a scratch copy of the committed tree and checks that the
test named for each one fails.

Usage: scripts/mutation.py [--list] [--keep] [NAME...]
  (no NAME: every mutant; JOBS=n for the build, default 2)

Each mutant is one exact text replacement in one file. A mutant whose
text is not found fails the run (the code moved: update the table). A
mutant that survives (its test passes) fails the run. Exit 0 only when
every mutant run was killed by its test.
"""
import os
import shutil
import subprocess
import sys
import tempfile

# name, file, old text, new text, ctest target, command (from the build
# dir), what it plants
MUTANTS = [
    ("room-off-by-one", "runtime/ring.h",
     "return (t & ACCEL__RING_POS) - h <= p->mask;",
     "return (t & ACCEL__RING_POS) - h < p->mask;",
     "accel_unit_ring",
     "tests/accel_unit_ring --jobs 1 --filter ring/room_at_exactly_one_free_slot",
     "a room waiter with exactly one free slot sees the ring full"),
    ("park-no-second-pick", "runtime/park.c",
     "    accel__park_announce(rt, lane);\n    e = accel__sched_pick(rt->sched, lane);",
     "    accel__park_announce(rt, lane);\n    e = NULL;",
     "accel_unit_regressions",
     "tests/accel_unit_regressions --jobs 1 --filter regressions/submit_in_the_park_window_is_not_lost",
     "park() sleeps without picking again after announcing itself"),
    ("wake-never-sent", "runtime/park.c",
     "    atomic_fetch_add_explicit(word, 1, memory_order_release);\n"
     "    accel__futex_wake(word, 1);",
     "    atomic_fetch_add_explicit(word, 1, memory_order_release);",
     "accel_unit_regressions",
     "tests/accel_unit_regressions --jobs 1 --filter "
     "regressions/waker_stopped_between_claim_and_wake_delays_not_loses",
     "a claimed wake bumps park_seq but never wakes the parked worker"),
    ("set-priority-no-weight", "runtime/session.c",
     "    atomic_store_explicit(&s->se.weight, priority, memory_order_relaxed);\n",
     "",
     "accel_unit_sched",
     "tests/accel_unit_sched --jobs 1 --filter sched/set_priority_changes_the_scheduler_share",
     "set_priority stores the priority but not the scheduler's weight"),
    ("budget-check-then-add", "runtime/budget.c",
     "        if (atomic_compare_exchange_weak_explicit(&b->used, &cur, cur + bytes,\n"
     "                                                  memory_order_relaxed,\n"
     "                                                  memory_order_relaxed))\n"
     "            return ACCEL_OK;\n    }\n}\n\nint accel__budget_refund",
     "        atomic_fetch_add_explicit(&b->used, bytes, memory_order_relaxed);\n"
     "        return ACCEL_OK;\n    }\n}\n\nint accel__budget_refund",
     "accel_unit_budget",
     "tests/accel_unit_budget --jobs 1 --filter budget/charge_racing_in_the_check_window",
     "the budget charge as check-then-add, no CAS retry"),
    ("visit-no-requeue", "runtime/visit.c",
     "    if (pending || accel__ring_sc_ready(ACCEL__RING(s), h))\n"
     "        return accel__sched_enqueue(rt->sched, &s->se, false);",
     "    if (pending || accel__ring_sc_ready(ACCEL__RING(s), h))\n"
     "        return 0;",
     "accel_stress_exactly_once",
     "tests/accel_stress_exactly_once --seconds 1 --quiet",
     "a visit that does not re-queue a session with ops left (a hang: the "
     "stress watchdog names the step and exits 124)"),
    ("visit-clears-current", "runtime/visit.c",
     "    accel__tls_current = v->outer;",
     "    accel__tls_current = NULL;",
     "accel_unit_host",
     "tests/accel_unit_host --jobs 1 --filter host/*keeps_the_op_current",
     "a visit clears the thread's current op instead of restoring it"),
    ("eexist-listed", "runtime/session.c",
     "    if (rc == ACCEL_OK)\n        list_link(rt, s);\n    else\n        list_unreserve(rt);",
     "    list_link(rt, s);\n    if (rc != ACCEL_OK)\n        list_del(rt, s);\n"
     "    (void)list_unreserve;",
     "accel_unit_metrics",
     "tests/accel_unit_metrics --jobs 1 --filter metrics/an_open_failing_eexist_is_never_listed",
     "an open failing with EEXIST is listed before its insert fails"),
    ("label-raw-bytes", "runtime/metrics.c",
     "        if (n == 0) {\n            put(o, \"\\xef\\xbf\\xbd\", 3);",
     "        if (n == 0) {\n            put(o, (const char *)p, 1);",
     "accel_unit_metrics",
     "tests/accel_unit_metrics --jobs 1 --filter metrics/non_utf8_ids_are_replaced",
     "non-UTF-8 bytes of an id written raw into the label"),
    ("module-from-cwd", "runtime/backend_module.c",
     "    if (!file)\n        return NULL; /* nowhere known: not the working directory */",
     "    if (!file)\n        return try_dir(\".\", 1, name, kind);\n"
     "    if (info.dli_fname && !strchr(info.dli_fname, '/'))\n"
     "        return try_dir(\".\", 1, name, kind);",
     "accel_backend_module_test",
     "ctest -R backend_module_not_from_cwd --output-on-failure",
     "a bare argv[0] makes the loader look in the working directory"),
    ("fork-module-lock", "runtime/backend_registry.c",
     "    (void)pthread_atfork(module_prepare, module_parent, module_child);",
     "    (void)module_prepare, (void)module_parent, (void)module_child;",
     "accel_unit_fork",
     "tests/accel_unit_fork --jobs 1 --filter fork/fork_while_the_module_lock_is_held",
     "the backend-module lock left out of the fork handlers"),
    ("fork-arena-reclaim", "runtime/session.c",
     "    if (accel__fork_stale(s->rt->fork_gen)) {\n        accel__rcu_reclaim_end();\n        return;\n    }\n",
     "",
     "accel_unit_fork",
     "tests/accel_unit_fork --jobs 1 --filter fork/fork_while_the_arena_lock_is_held",
     "a fork child runs the parent's reclamation into the parent's arena lock"),
    ("destroy-one-walk", "runtime/runtime.c",
     "            if (!accel_session_is_closed(next))\n                again = true;\n",
     "",
     "accel_unit_lifecycle",
     "tests/accel_unit_lifecycle --jobs 1 --filter lifecycle/destroy_closes_sessions_opened_during_its_walk",
     "destroy walks the session list once"),
    ("monitor-second-look", "runtime/compensate.c",
     "        w->m_visits = vis;\n        w->m_busy0 = busy_ns(w, &ok);",
     "        if (w->m_visits != vis) {\n            w->m_visits = vis;\n"
     "            w->m_phase = 0;\n            return true;\n        }\n"
     "        w->m_busy0 = busy_ns(w, &ok);",
     "accel_unit_blocking",
     "tests/accel_unit_blocking --jobs 1 --filter blocking/a_wait_is_detected_a_tick_after_it_is_found",
     "the monitor samples a visit only at the second tick that finds it"),
    ("monitor-drop-no-sample", "runtime/compensate.c",
     "        st &= ~ACCEL__BLOCK_DETECTED; /* a new visit is sampled at this tick */",
     "        return false;",
     "accel_unit_blocking",
     "tests/accel_unit_blocking --jobs 1 --filter blocking/a_wait_is_detected_a_tick_after_it_is_found",
     "a worker whose mark the monitor drops for a new visit is sampled a tick late"),
    ("monitor-keeps-mark", "runtime/compensate.c",
     "            if (ok && d * 2 < win && (d * 64 < win || !thread_runnable(w))) {",
     "            if (ok || d * 2 < win || win || true) {",
     "accel_unit_blocking",
     "tests/accel_unit_blocking --jobs 1 --filter blocking/a_detected_worker_that_computes_again_is_undetected",
     "a counted worker keeps its mark for the whole visit, computing or not"),
    ("monitor-bank-lost", "runtime/compensate.c",
     "    if (ts == 0)\n        return; /* nothing published at the count: no credit */",
     "    if (ts == 0 || 1)\n        return; /* nothing published at the count: no credit */",
     "accel_unit_blocking_share",
     "tests/accel_unit_blocking_share --jobs 1 --filter blocking_share/detected_wait_then_cpu_work_keeps_its_credit",
     "the time asleep of a mark taken back is not credited"),
    # Batching (runtime/batch.c), one mutant per rule of docs/batching.md.
    ("batch-no-claim", "runtime/batch.c",
     "    if (*ex & (UINT32_C(1) << i))\n        return accel__visit_claim(v, h0, i, ex, k);",
     "    if (0 && (*ex & (UINT32_C(1) << i)))\n        return accel__visit_claim(v, h0, i, ex, k);",
     "accel_unit_batch",
     "tests/accel_unit_batch --jobs 1 --filter batch/canceled_before_forming_never_runs",
     "a forming batch takes a canceled op without claiming it"),
    ("batch-expired-runs", "runtime/batch.c",
     "    if (*ex & (UINT32_C(1) << i))\n        return accel__visit_claim(v, h0, i, ex, k);",
     "    if (0 && (*ex & (UINT32_C(1) << i)))\n        return accel__visit_claim(v, h0, i, ex, k);",
     "accel_unit_batch",
     "tests/accel_unit_batch --jobs 1 --filter batch/expired_before_forming_left_out",
     "a forming batch runs an op whose deadline passed"),
    ("batch-close-cancel-runs", "runtime/batch.c",
     "    if (atomic_load_explicit(&v->s->close_cancels, memory_order_relaxed))\n        return ACCEL_ECLOSED;\n    return 0;",
     "    return 0;",
     "accel_unit_batch",
     "tests/accel_unit_batch --jobs 1 --filter batch/close_cancel_while_batch_runs",
     "a batch forming after close(CANCEL) runs the plain ops it takes"),
    ("batch-one-status", "runtime/batch.c",
     "                accel__visit_op_done(s, &ops[i], status[j++], true);",
     "                accel__visit_op_done(s, &ops[i], status[j], true);",
     "accel_unit_batch",
     "tests/accel_unit_batch --jobs 1 --filter batch/statuses_and_budget_reach_each_op",
     "every op of a batch completes with the first op's status"),
    ("batch-over-max-ops", "runtime/batch.c",
     "        uint32_t n = form_take(v, ops, unrun, c.max_ops);",
     "        uint32_t n = form_take(v, ops, unrun, c.max_ops + 1);",
     "accel_unit_batch",
     "tests/accel_unit_batch --jobs 1 --filter batch/takes_what_is_queued_up_to_max_ops",
     "a batch takes one op more than max_ops"),
    ("batch-max-ops-zero", "runtime/batch.c",
     "        if (!cfg.fn || cfg.max_ops == 0 || cfg.max_ops > ACCEL_BATCH_MAX ||",
     "        if (!cfg.fn || cfg.max_ops > ACCEL_BATCH_MAX ||",
     "accel_unit_batch",
     "tests/accel_unit_batch --jobs 1 --filter batch/bad_configuration_changes_nothing",
     "set_batch accepts max_ops 0"),
    ("batch-max-ops-bound", "runtime/batch.c",
     "        if (!cfg.fn || cfg.max_ops == 0 || cfg.max_ops > ACCEL_BATCH_MAX ||",
     "        if (!cfg.fn || cfg.max_ops == 0 || cfg.max_ops > ACCEL_BATCH_MAX + 1 ||",
     "accel_unit_batch",
     "tests/accel_unit_batch --jobs 1 --filter batch/bad_configuration_changes_nothing",
     "set_batch accepts max_ops one over ACCEL_BATCH_MAX"),
    ("batch-cost-without-delay", "runtime/batch.c",
     "        if (!cfg.max_delay_ns && (cfg.cost_fixed_ns || cfg.cost_per_op_ns))\n"
     "            return ACCEL_EINVAL; /* a cost serves only the hold-back */",
     "",
     "accel_unit_batch",
     "tests/accel_unit_batch --jobs 1 --filter batch/bad_configuration_changes_nothing",
     "set_batch accepts a batch cost without a delay"),
    ("batch-hold-ignores-cost", "runtime/batch.c",
     "            uint64_t rd = (uint64_t)d > cost ? (uint64_t)d - cost : 0;\n            if (rd < r)",
     "            uint64_t rd = (uint64_t)d + 0 * cost;\n            if (rd < r)",
     "accel_unit_batch_hold",
     "tests/accel_unit_batch_hold --jobs 1 --filter batch_hold/deadline_minus_cost_releases_early",
     "a hold is released at the earliest deadline, not the deadline less the batch's cost"),
    ("batch-hold-ignores-fill", "runtime/batch.c",
     "    if (pos - h >= fill_of(s, c))\n        return HOLD_RUN;",
     "    if (pos - h > fill_of(s, c))\n        return HOLD_RUN;",
     "accel_unit_batch_hold",
     "tests/accel_unit_batch_hold --jobs 1 --filter batch_hold/held_until_max_ops",
     "a hold goes on with a full batch queued"),
    ("batch-hold-keeps-canceled", "runtime/batch.c",
     "        if (seq & ACCEL__SEQ_CANCELED)\n            return HOLD_RUN;",
     "",
     "accel_unit_batch_hold",
     "tests/accel_unit_batch_hold --jobs 1 --filter batch_hold/cancel_of_a_held_op",
     "a hold goes on with a canceled op queued (its done waits for the delay)"),
    ("batch-timer-not-woken", "runtime/batch.c",
     "    if (release_at < atomic_load_explicit(&tm->target, memory_order_seq_cst)) {",
     "    if (0 && release_at < atomic_load_explicit(&tm->target, memory_order_seq_cst)) {",
     "accel_unit_batch_hold",
     "tests/accel_unit_batch_hold --jobs 1 --filter batch_hold/a_hold_wakes_the_sleeping_timer",
     "a hold due before the timer's next wake does not wake it"),
    ("batch-host-over-cap", "runtime/batch.c",
     "    uint32_t max_ops = c.max_ops < cap ? c.max_ops : cap;",
     "    uint32_t max_ops = c.max_ops + 0 * cap;",
     "accel_unit_batch_host",
     "tests/accel_unit_batch_host --jobs 1 --filter batch_host/a_visit_hands_out_one_batch",
     "a host visit forms a batch past the host's cap"),
    ("batch-sync-undercount", "runtime/batch.c",
     "        if (!device)\n            accel__waiters_finished(&s->waiters, n);",
     "        if (!device)\n            accel__waiters_finished(&s->waiters, m);",
     "accel_unit_batch",
     "tests/accel_unit_batch --jobs 1 --filter batch/expired_before_forming_left_out",
     "a batch counts only the ops that ran as finished for sync (its watchdog names the stuck sync)"),
    ("batch-time-uncharged", "runtime/batch.c",
     "            t1 = accel__now_ns();\n            if (called) {",
     "            t1 = accel__now_ns();\n            v->t0 = t1;\n            if (called) {",
     "accel_unit_batch",
     "tests/accel_unit_batch --jobs 1 --filter batch/batch_time_charged_fair_share",
     "a batch's time is left out of its visit's charge"),
    ("batch-counts-its-ops", "runtime/batch.c",
     "        v->n += 1;\n        if (!t1)",
     "        v->n += m ? m : 1;\n        if (!t1)",
     "accel_unit_batch_hold",
     "tests/accel_unit_batch_hold --jobs 1 --filter batch_hold/long_batch_is_one_long_op_to_the_lanes",
     "a batch counts as its ops to the scheduler (a long batch looks short to the lanes)"),
    ("batch-release-new-place", "runtime/sched_wfq.c",
     "    uint64_t v = place < 0 && (uint64_t)-place > V ? 0\n"
     "                                                   : V + (uint64_t)place;",
     "    uint64_t v = place < 0 && (uint64_t)-place > V ? 0 : V;",
     "accel_unit_batch_hold",
     "tests/accel_unit_batch_hold --jobs 1 --filter batch_hold/sched_held_entity_keeps_its_place",
     "a released session re-enters at the virtual time, losing the place it held"),
    # The Go Batcher (bindings/go/batch.go): target None, the command runs
    # `go test` in the scratch copy's package ($ACCEL_GO: the repository's
    # .tools/go when it has one).
    ("go-batch-ctx-unchecked", "bindings/go/batch.go",
     "	if ctx, done := r.opCtx(); chanDone(done) || pastDeadline(ctx, done) {",
     "	if ctx, done := r.opCtx(); false && (chanDone(done) || pastDeadline(ctx, done)) {",
     None,
     "cd ../src/bindings/go && $ACCEL_GO test -count=1 -run 'TestBatchItemPastDeadlineWhenHandedOutNeverReachesFn' .",
     "an item whose deadline passed after its batch formed reaches fn"),
    ("go-batch-one-error", "bindings/go/batch.go",
     "		finish(r, errs[k], d)",
     "		finish(r, errs[0], d)",
     None,
     "cd ../src/bindings/go && $ACCEL_GO test -count=1 -run 'TestBatchEachItemGetsItsOwnResult' .",
     "every item of a batch gets the first item's error"),
    ("go-batch-panic-first", "bindings/go/batch.go",
     "			for i := range errs {\n				errs[i] = pe\n			}",
     "			errs[0] = pe",
     None,
     "cd ../src/bindings/go && $ACCEL_GO test -count=1 -run 'TestBatchPanicFailsItsBatch' .",
     "a panic in fn fails only the batch's first item"),
    ("go-batch-status-slot", "bindings/go/batch.go",
     "				d.b.status[idx[k]] = 1",
     "				d.b.status[k] = 1",
     None,
     "cd ../src/bindings/go && $ACCEL_GO test -count=1 -run 'TestBatchItemStatusesReachTheirOps' .",
     "a failed item's C status lands on the visit's k-th op, not the item's"),
    # Other Go paths: combining SubmitAsyncs, a wait away, waits for room.
    ("go-combine-append-sealed", "bindings/go/combine.go",
     "		if w>>grpGenSh != gen || w&grpClosed != 0 || w&grpCount >= max {",
     "		if w>>grpGenSh != gen || w&grpCount >= max {",
     None,
     "cd ../src/bindings/go && $ACCEL_GO test -count=1 -run 'TestAsyncCombine' .",
     "a SubmitAsync appends to a sealed group (its op never runs)"),
    ("go-combine-over-cap", "bindings/go/combine.go",
     "		if w>>grpGenSh != gen || w&grpClosed != 0 || w&grpCount >= max {",
     "		if w>>grpGenSh != gen || w&grpClosed != 0 || w&grpCount > max {",
     None,
     "cd ../src/bindings/go && $ACCEL_GO test -count=1 -run 'TestAsyncCombine' .",
     "a combined group takes one op more than its cap"),
    ("go-postclose-noop", "bindings/go/combine.go",
     "	if o := v.open.Load(); o != 0 {\n		closeGroup(o)\n	}\n}",
     "	_ = v.open.Load()\n}",
     None,
     "cd ../src/bindings/go && $ACCEL_GO test -count=1 -run 'TestAsyncCombineFIFO' .",
     "a submit leaves the open group appendable (a later SubmitAsync runs before it)"),
    ("go-away-not-own", "bindings/go/away.go",
     "	if awayWaits.n.Load() == 0 {\n		return false\n	}\n	w, ok := awayWaits.m.Load(c)",
     "	if true {\n		return false\n	}\n	w, ok := awayWaits.m.Load(c)",
     None,
     "cd ../src/bindings/go && $ACCEL_GO test -count=1 -run 'TestBlockingWaitAway' .",
     "a wait away no longer counts as inside its op (Submit to its own session waits for itself)"),
    ("go-room-no-pass-on", "bindings/go/room.go",
     "			w.waiters.Add(-1)\n"
     "			// A release may have freed more than this one's room (a\n"
     "			// visit takes several ops) and sent one token: pass it on.\n"
     "			w.freed()\n",
     "			w.waiters.Add(-1)\n",
     None,
     "cd ../src/bindings/go && $ACCEL_GO test -count=1 -run 'TestRoomWait' .",
     "a waiter for room that got in does not pass the wake on"),
    # the C core beyond batching: deadlines, cancel, close, sync, submit
    # validation, budget, the scheduler's placement and lanes, the table
    ("expired-runs", "runtime/visit.c",
     "    if (deadline && (int64_t)accel__now_ns() >= deadline)\n        return ACCEL_EEXPIRED;",
     "    (void)deadline;",
     "accel_unit_cancel",
     "tests/accel_unit_cancel --jobs 1 --filter cancel/deadline_past_expires_unrun",
     "an op past its deadline runs"),
    ("close-cancel-runs-plain", "runtime/visit.c",
     "        else if (atomic_load_explicit(&s->close_cancels, memory_order_relaxed))\n            status = ACCEL_ECLOSED;",
     "",
     "accel_unit_close",
     "tests/accel_unit_close --jobs 1 --filter close/cancel_completes_queued_ops_with_eclosed",
     "close(CANCEL) runs queued plain ops"),
    ("close-no-wait", "runtime/session.c",
     "    return accel__waiters_wait_finished(&s->waiters, final, UINT64_MAX);\n}",
     "    (void)final;\n    return ACCEL_OK;\n}",
     "accel_unit_close",
     "tests/accel_unit_close --jobs 1 --filter close/drain_runs_queued_ops",
     "close returns before its ops complete"),
    ("sync-no-edeadlk", "runtime/session.c",
     "    if (accel__tls_current == s)\n        return ACCEL_EDEADLK;\n    if (accel__fork_stale(s->rt->fork_gen))\n        return ACCEL_ECLOSED;\n    uint64_t target",
     "    if (accel__fork_stale(s->rt->fork_gen))\n        return ACCEL_ECLOSED;\n    uint64_t target",
     "accel_unit_submit",
     "tests/accel_unit_submit --jobs 1 --filter submit/sync_and_submit_wait_inside_own_op_edeadlk",
     "sync from inside its own op waits for itself"),
    ("submit-wait-no-edeadlk", "runtime/submit.c",
     "    if (accel__tls_current == s)\n        return ACCEL_EDEADLK;\n    wait_op w",
     "    wait_op w",
     "accel_unit_submit",
     "tests/accel_unit_submit --jobs 1 --filter submit/sync_and_submit_wait_inside_own_op_edeadlk",
     "submit_wait from inside its own op waits for itself"),
    ("cancel-after-close", "runtime/cancel.c",
     "    if (tail & ACCEL__RING_CLOSED)\n        return ACCEL_ECLOSED;",
     "",
     "accel_unit_cancel",
     "tests/accel_unit_cancel --jobs 1 --filter cancel/close_drain_with_canceled_and_expired",
     "accel_cancel after close begins is not ECLOSED"),
    ("cancel-unissued", "runtime/cancel.c",
     "    if (t->position >= (tail & ACCEL__RING_POS))",
     "    if (t->position > (tail & ACCEL__RING_POS))",
     "accel_unit_cancel",
     "tests/accel_unit_cancel --jobs 1 --filter cancel/ticket_for_the_next_position_is_einval",
     "a ticket at the next position (never issued) accepted"),
    ("cancel-serial", "runtime/cancel.c",
     "    if (t->serial != s->serial) /* not made by submit on this session */\n        return ACCEL_EINVAL;",
     "",
     "accel_unit_bad_input",
     "tests/accel_unit_bad_input --jobs 1 --filter bad_input/table",
     "a ticket of another session generation accepted"),
    ("charge-ignores-weight", "runtime/sched_wfq.c",
     "    (void)s;\n    uint64_t served = blocked_ns < service_ns ? service_ns - blocked_ns : 0;\n    uint64_t t = served + e->vrem;\n    uint64_t v = atomic_load_explicit(&e->vtime, memory_order_relaxed);\n    /* relaxed: only the holder writes; stats read approximately. */\n    atomic_store_explicit(&e->vtime, v + t / e->w, memory_order_relaxed);",
     "    (void)s;\n    uint64_t served = blocked_ns < service_ns ? service_ns - blocked_ns : 0;\n    uint64_t t = served + e->vrem;\n    uint64_t v = atomic_load_explicit(&e->vtime, memory_order_relaxed);\n    /* relaxed: only the holder writes; stats read approximately. */\n    atomic_store_explicit(&e->vtime, v + t, memory_order_relaxed);",
     "accel_unit_sched",
     "tests/accel_unit_sched --jobs 1 --filter sched/set_priority_changes_the_scheduler_share",
     "a visit charged without its weight"),
    ("sleeper-credit", "runtime/sched_wfq.c",
     "        if (v < V)\n            v = V; /* no credit for sleeping */",
     "",
     "accel_unit_sched_model",
     "tests/accel_unit_sched_model --jobs 1 --filter sched_model/sleeper_gets_no_more_than_its_share",
     "a woken session keeps credit for its sleep"),
    ("lag-cap-off", "runtime/sched_wfq.c",
     "        if (v + cap < V)\n            v = V - cap;",
     "        (void)cap;",
     "accel_unit_sched_model",
     "tests/accel_unit_sched_model --jobs 1 --filter sched_model/credit_beyond_the_lag_cap_is_dropped",
     "a backlogged session's lag is not capped"),
    ("sync-one-early", "runtime/waiters.c",
     "    return atomic_load_explicit(&p->finished, memory_order_acquire) >= target;",
     "    return atomic_load_explicit(&p->finished, memory_order_acquire) + 1 >= target;",
     "accel_unit_submit",
     "tests/accel_unit_submit --jobs 1 --filter submit/sync_times_out_behind_a_blocked_op",
     "sync returns one op early"),
    ("expired-counted-canceled", "runtime/visit.c",
     "            accel__bump(status == ACCEL_EEXPIRED ? &s->expired : &s->canceled,\n                        1);",
     "            accel__bump(&s->canceled, 1);",
     "accel_unit_cancel",
     "tests/accel_unit_cancel --jobs 1 --filter cancel/stats_and_metrics_count_canceled_and_expired",
     "an expired op counted as canceled"),
    ("submit-ex-neg-deadline", "runtime/submit.c",
     "    if (!s || !op || !op->fn || timeout_ns < ACCEL_FOREVER || deadline_ns < 0)",
     "    if (!s || !op || !op->fn || timeout_ns < ACCEL_FOREVER)",
     "accel_unit_bad_input",
     "tests/accel_unit_bad_input --jobs 1 --filter bad_input/table",
     "a negative deadline accepted"),
    ("batch-invalid-tail", "runtime/submit.c",
     "    if (rc == ACCEL_OK && valid < n)\n        rc = ACCEL_EINVAL;",
     "",
     "accel_unit_bad_input",
     "tests/accel_unit_bad_input --jobs 1 --filter bad_input/table",
     "a batch with a NULL fn op returns OK for its valid prefix"),
    ("set-priority-range", "runtime/session.c",
     "    if (!s || priority > ACCEL_PRIORITY_MAX)",
     "    if (!s)",
     "accel_unit_bad_input",
     "tests/accel_unit_bad_input --jobs 1 --filter bad_input/table",
     "set_priority above the max accepted"),
    ("refund-over", "runtime/budget.c",
     "        if (bytes > cur)\n            return ACCEL_EINVAL;",
     "",
     "accel_unit_budget",
     "tests/accel_unit_budget --jobs 1 --filter budget/reserve_release_cap",
     "a refund above what is charged accepted (used goes negative)"),
    ("depth-max", "runtime/session.c",
     "    if (d > ACCEL_QUEUE_DEPTH_MAX)\n        return ACCEL_EINVAL;",
     "",
     "accel_unit_bad_input",
     "tests/accel_unit_bad_input --jobs 1 --filter bad_input/table",
     "a queue depth above the max accepted"),
    ("close-kick-hold", "runtime/session.c",
     "    /* A session held back to fill a batch runs its ops now. */\n    accel__session_kick_hold(s);\n    if (accel__tls_current == s)",
     "    if (accel__tls_current == s)",
     "accel_unit_batch_hold",
     "tests/accel_unit_batch_hold --jobs 1 --filter batch_hold/close_drain_runs_held_ops",
     "close does not release a held session (its drain waits the delay)"),
    ("every-session-short", "runtime/sched_wfq.c",
     "    unsigned cls = s->ncls > 1 && e->op_cost_ns <= s->cfg.short_op_ns;",
     "    unsigned cls = s->ncls > 1;",
     "accel_unit_sched_lanes",
     "tests/accel_unit_sched_lanes --jobs 1 --filter sched_lanes/class_move_keeps_vtime",
     "every session classed short: long ops run on the short lane"),
    ("alloc-fail-no-refund", "runtime/op_ctx.c",
     "    if (rc != ACCEL_OK)\n        (void)accel__budget_refund(&s->budget, (int64_t)charge);",
     "",
     "accel_unit_faults",
     "tests/accel_unit_faults --jobs 1 --filter faults/alloc_fail_during_ops",
     "a failed backend alloc keeps its budget charge"),
    ("free-no-refund", "runtime/op_ctx.c",
     "    (void)accel__budget_refund(&s->budget, (int64_t)refund);",
     "    (void)refund;",
     "accel_unit_budget",
     "tests/accel_unit_budget --jobs 1 --filter budget/ctx_alloc_races_with_reservers",
     "accel_ctx_free does not refund the budget"),
    ("accepted-all", "runtime/submit.c",
     "    if (accepted)\n        *accepted = done;\n    return rc;",
     "    if (accepted)\n        *accepted = n;\n    return rc;",
     "accel_unit_submit",
     "tests/accel_unit_submit --jobs 1 --filter submit/batch_prefix_and_accepted",
     "a partly accepted batch reports every op accepted"),
    ("depth-next-pow2", "runtime/session.c",
     "    while (p < v)\n        p <<= 1;",
     "    while (p <= v)\n        p <<= 1;",
     "accel_unit_bad_input",
     "tests/accel_unit_bad_input --jobs 1 --filter bad_input/queue_depths",
     "a power-of-two depth doubled"),
    ("room-flag-lost", "runtime/waiters.c",
     "    atomic_store_explicit(&p->room_waiters, 1, memory_order_relaxed);\n    accel__fence_cold();\n    int rc = ACCEL_OK;",
     "    accel__fence_cold();\n    int rc = ACCEL_OK;",
     "accel_unit_regressions",
     "tests/accel_unit_regressions --jobs 1 --filter regressions/room_waiter_woken_by_the_take_that_frees_a_slot",
     "a room waiter never announces itself (its wake is lost)"),
    ("close-keeps-id", "runtime/session.c",
     "    accel__rcu_read_lock();\n    accel__table_remove(s->rt->table, &s->table_node);\n    accel__rcu_read_unlock();",
     "",
     "accel_unit_lifecycle",
     "tests/accel_unit_lifecycle --jobs 1 --filter lifecycle/release_of_last_handle_closes_with_drain",
     "close leaves the id in the table (lookup finds a closed session, reopen EEXIST)"),
    ("priority-zero-kept", "runtime/session.c",
     "    if (priority == 0)\n        priority = ACCEL_PRIORITY_NORMAL;\n    /* relaxed: \"from the next visit\"",
     "    /* relaxed: \"from the next visit\"",
     "accel_unit_bad_input",
     "tests/accel_unit_bad_input --jobs 1 --filter bad_input/priority_zero_is_normal",
     "set_priority(0) stores 0, not the default"),
    ("set-priority-after-close", "runtime/session.c",
     "    if (accel_session_is_closed(s))\n        return ACCEL_ECLOSED;\n    if (priority == 0)",
     "    if (priority == 0)",
     "accel_unit_bad_input",
     "tests/accel_unit_bad_input --jobs 1 --filter bad_input/table",
     "set_priority on a closed session accepted"),
    ("cancel-fork-child", "runtime/cancel.c",
     "    if (accel__fork_stale(s->rt->fork_gen))\n        return ACCEL_ECLOSED;",
     "",
     "accel_unit_fork",
     "tests/accel_unit_fork --jobs 1 --filter fork/cancel_in_the_child_of_a_parent_ticket_is_eclosed",
     "accel_cancel in a fork child writes the parent's ring"),
    ("lookup-closed", "runtime/session.c",
     "    if (s && accel__session_tryhandle(s)) {",
     "    if (s && (accel__session_tryhandle(s) || 1)) {",
     "accel_unit_lifecycle",
     "tests/accel_unit_lifecycle --jobs 1 --filter lifecycle/a_lookup_as_the_last_handle_goes_finds_nothing",
     "lookup hands out a session whose last handle went, without a handle"),
]


def run(cmd, cwd, timeout=None):
    # errors="replace": a mutant may print bytes that are not UTF-8
    return subprocess.run(cmd, cwd=cwd, shell=True, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          encoding="utf-8", errors="replace")


def main(argv):
    keep = "--keep" in argv
    names = [a for a in argv if not a.startswith("--")]
    if "--list" in argv:
        for m in MUTANTS:
            print(f"{m[0]:24} {m[1]:28} {m[6]}")
        return 0
    chosen = [m for m in MUTANTS if not names or m[0] in names]
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"],
                          stdout=subprocess.PIPE, text=True,
                          check=True).stdout.strip()
    tmp = tempfile.mkdtemp(prefix="accel-mutation-")
    src, build = os.path.join(tmp, "src"), os.path.join(tmp, "build")
    os.makedirs(src)
    subprocess.run(f"git -C {root} archive HEAD | tar -x -C {src}",
                   shell=True, check=True)
    jobs = os.environ.get("JOBS", "2")
    tools_go = os.path.join(root, ".tools", "go", "bin", "go")
    os.environ.setdefault("ACCEL_GO", tools_go if os.path.exists(tools_go) else "go")
    os.environ.setdefault("GOTOOLCHAIN", "local")
    os.environ.setdefault("GOPROXY", "off")
    os.environ.setdefault("GOFLAGS", "-mod=mod")
    r = run(f"cmake -S {src} -B {build} -DACCEL_WERROR=ON "
            "-DACCEL_WITH_CUDA=OFF -DACCEL_BUILD_BENCH=OFF", tmp)
    if r.returncode:
        print(r.stdout)
        return 1
    bad = 0
    for name, f, old, new, target, cmd, what in chosen:
        path = os.path.join(src, f)
        text = open(path).read()
        if text.count(old) != 1:
            print(f"{name}: NOT PLANTED: its text is not in {f} once")
            bad += 1
            continue
        open(path, "w").write(text.replace(old, new))
        try:
            b = run(f"cmake --build {build} -j{jobs} --target {target}"
                    if target else "true", tmp)
            if b.returncode:
                print(f"{name}: does not build (a mutant must):\n{b.stdout[-2000:]}")
                bad += 1
                continue
            try:
                t = run(cmd, build, timeout=600)
                rc = t.returncode
                tail = "\n".join(t.stdout.strip().splitlines()[-4:])
            except subprocess.TimeoutExpired:
                rc, tail = -1, "(over 600 s)"
            if rc == 0:
                print(f"{name}: SURVIVED ({what}): {cmd}")
                bad += 1
            else:
                print(f"{name}: killed (exit {rc}) by: {cmd}\n    {what}\n    "
                      + tail.replace("\n", "\n    "))
        finally:
            open(path, "w").write(text)
    if not keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"scratch tree kept: {tmp}")
    print(f"mutation: {len(chosen) - bad} of {len(chosen)} killed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
