#!/usr/bin/env bash
# Model-checks the protocols with Spin: every correct model must verify
# (no assertion violation, search complete), every deliberately broken
# variant must be rejected, and on the violation it was written to cause:
# Spin's first error report must contain the expected text (the assertion,
# or "invalid end state"), not a search-depth or memory limit.
# Exit 0 only if all of this holds for all of them.
# Usage: models/run.sh        (needs spin and a C compiler; ~2 min on 2 cores)
#        MODELS_FULL=1 models/run.sh   (adds the larger instances, ~5 min)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v spin >/dev/null || { echo "models: spin not installed" >&2; exit 77; }
CC=${CC:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

# check <model> <expect: pass | fail:TEXT> [spin -D flags...]
#   fail:TEXT  must be rejected, with TEXT in Spin's error line
check() {
  local model=$1 expect=$2 want=""; shift 2
  case $expect in fail:*) want=${expect#fail:}; expect=fail ;; esac
  local name="$model $*"
  local d="$work/$(echo "$model $*" | tr -c 'A-Za-z0-9' '_')"
  mkdir -p "$d" && cp "$here/$model" "$d/" || return 1
  local t0=$(date +%s.%N)
  ( cd "$d" && spin "$@" -a "$model" >spin.log 2>&1 &&
    $CC -O2 -DSAFETY -DMEMLIM=4096 -w -o pan pan.c >cc.log 2>&1 &&
    ./pan -m1000000 >pan.log 2>&1 )
  local rc=$?
  local t1=$(date +%s.%N)
  local errs states
  # sed quits at its first match: no `| head -1` whose early exit would
  # fail the pipeline (pipefail) with SIGPIPE
  errs=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p;T;q' "$d/pan.log" 2>/dev/null)
  states=$(sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p;T;q' "$d/pan.log" 2>/dev/null)
  local got=error
  if [ -n "$errs" ]; then
    # an incomplete search (depth or memory limit) is not a pass
    if [ "$errs" = 0 ] && ! grep -q "too small\|max search depth\|reached -DMEMLIM" "$d/pan.log"; then got=pass; else got=fail; fi
  fi
  local verdict=OK
  [ "$got" = "$expect" ] || { verdict=WRONG; fail=1; }
  if [ "$got" = fail ] && [ -n "$want" ]; then
    # the first error Spin reports, e.g. "pan:1: assertion violated (met==2)"
    local first
    first=$(grep -m1 '^pan:1:' "$d/pan.log")
    if ! grep -qF -- "$want" <<<"$first"; then
      verdict=WRONG; fail=1
      echo "  expected the violation \"$want\", Spin reported: ${first:-nothing}"
    fi
  fi
  printf 'model %-46s expect %-4s got %-5s states %-9s %5.2fs  %s\n' \
    "$name" "$expect" "$got" "${states:-?}" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" "$verdict"
  if [ "$verdict" = WRONG ]; then
    grep -E "assertion violated|error|too small" "$d/pan.log" "$d/spin.log" "$d/cc.log" 2>/dev/null | head -5
  fi
}

# submit-vs-close handshake (runtime/session.c)
check close.pml pass
check close.pml 'fail:assertion violated  !(close_returned)' -DBROKEN
# the one-RMW submit handshake: SCHED in the tail word, defer (ring.h)
check handoff.pml pass                                # 2 producers x 1 op, 2 workers
check handoff.pml pass -DNPROD=1 -DNOPS=3             # 1 producer x 3 ops
if [ "${MODELS_FULL:-0}" = 1 ]; then   # ~45M/50M states, ~2 min each
  check handoff.pml pass -DNPROD=3 -DNOPS=1           # 3 producers x 1 op
  check handoff.pml pass -DNPROD=2 -DNOPS=2           # 2 producers x 2 ops
fi
check handoff.pml 'fail:assertion violated ((((produced==' -DBROKEN_NODEFER
check handoff.pml 'fail:assertion violated ((((produced==' -DBROKEN_NORECHECK
check handoff.pml 'fail:assertion violated ((((produced==' -DBROKEN_NORECHECK -DNPROD=2 -DNOPS=2
check handoff.pml 'fail:assertion violated (ran[h]==0)' -DBROKEN_ABA -DNPROD=2 -DNOPS=2   # needs 2 deferrals
check handoff.pml 'fail:assertion violated ((((produced==' -DBROKEN_PARK
# completion sleepers: sync/close announce a target in wake_at
check sync.pml pass
check sync.pml 'fail:invalid end state' -DBROKEN_NORECHECK
# the lanes' wake: claims, and passing a claim on (runtime/park.c)
check lanes.pml pass
check lanes.pml 'fail:assertion violated (met==' -DBROKEN_NOCLAIM
check lanes.pml 'fail:assertion violated (met==' -DBROKEN_NOPASS
# 2 general + 1 short-lane worker; two wakers at once; a waker stopped for
# good between its claim and its bump (only its own session may wait)
check lanes.pml pass -DNGEN=2 -DSTALL
check lanes.pml pass -DTWO_WAKERS -DSTALL
check lanes.pml 'fail:assertion violated (owed<=' -DNGEN=2 -DSTALL -DBROKEN_NOCLAIM
check lanes.pml 'fail:assertion violated (owed<=' -DNGEN=2 -DSTALL -DBROKEN_NOPASS
if [ "${MODELS_FULL:-0}" = 1 ]; then   # 5M / 10M states, ~10 / 20 s
  check lanes.pml pass -DNGEN=2 -DTWO_WAKERS
  check lanes.pml pass -DNGEN=2 -DTWO_WAKERS -DSTALL
fi
# producers waiting for room: the take that frees a slot wakes them
check host.pml pass
check host.pml 'fail:assertion violated (met==' -DBROKEN_NORECHECK
check host.pml 'fail:assertion violated (met==' -DBROKEN_UNBUFFERED
# the direct hand-off of accel_host_submit_begin (a helper takes the
# session it made runnable, without queue or wake)
check host.pml pass -DHELPER
check host.pml 'fail:assertion violated (met==' -DHELPER -DBROKEN_DIRECT_NOWAKE

check room.pml pass
check room.pml 'fail:assertion violated ((returned==' -DBROKEN_BATCHED
# per-op cancel vs the consumer's take on a slot's seq (ring.h EX slots)
check cancel.pml pass
check cancel.pml 'fail:assertion violated (cancel_ok[p]==' -DBROKEN_SPLIT
check cancel.pml 'fail:assertion violated (cancel_ok[p]==' -DBROKEN_NOPOS
# batching's hold-back: one release per hold, no fill or close unseen,
# no deferral overwritten by a hold's mark (runtime/batch.c)
check hold.pml pass
check hold.pml pass -DNPROD=3
check hold.pml 'fail:assertion violated  !(((defer==1)&&' -DBROKEN_NORECHECK
check hold.pml 'fail:assertion violated (enqueued<=1)' -DBROKEN_SPLIT_RELEASE
check hold.pml 'fail:assertion violated  !(((defer==1)&&' -DBROKEN_CLOSE_NOKICK
check hold.pml 'fail:assertion violated (defer==0)' -DBROKEN_MARK_AFTER_HOLD
# a blocked worker's hand-off with park/wake and extra retirement
# (runtime/compensate.c)
check blocked.pml pass
check blocked.pml 'fail:invalid end state' -DBROKEN_LOOK_FIRST
check blocked.pml 'fail:invalid end state' -DBROKEN_SURPLUS_ON_WAKE
check blocked.pml 'fail:invalid end state' -DBROKEN_LEAVE_NOWAKE
# ... and the extras' slots: a spawn that finds them all taken by leavers
check blocked.pml pass -DSLOTS -DCAP=2
check blocked.pml 'fail:invalid end state' -DSLOTS -DCAP=2 -DBROKEN_LEAVE_NOLOOK
# the calendar's repair (runtime/sched_calendar.c): a pick that sets a
# bucket's bit back wakes a parked worker; a look that does not pop only
# reads
check repair.pml pass
check repair.pml 'fail:invalid end state' -DBROKEN_NOWAKE
check repair.pml 'fail:invalid end state' -DBROKEN_PEEK
# combining SubmitAsyncs into groups (bindings/go/combine.go): appenders
# (2 + 1 SubmitAsyncs), a plain submit that closes the open group, the worker
check combine.pml pass
check combine.pml 'fail:assertion violated  !(gsealed[r])' -DBROKEN_SEAL_SPLIT
check combine.pml 'fail:assertion violated (x!=0)' -DBROKEN_NOWAIT
check combine.pml 'fail:assertion violated ((pre[x]& ~(ran))==0)' -DBROKEN_NOCLOSE
check combine.pml 'fail:assertion violated ((pre[x]& ~(ran))==0)' -DBROKEN_CLOSE_FIRST
check combine.pml 'fail:assertion violated ((pre[x]& ~(ran))==0)' -DBROKEN_WITHDRAWN_NOCLOSE
check combine.pml 'fail:assertion violated ((pre[x]& ~(ran))==0)' -DBROKEN_PUBLISH_STORE
check combine.pml 'fail:assertion violated gq[r]' -DBROKEN_NOPEND
check combine.pml 'fail:assertion violated  !(stale[p])' -DBROKEN_NOGEN
# the generation's wrap window, with 2 bits and one record: a token loaded
# before 2 reuses is told apart, one loaded before 3 (2^2 - 1) is not
check combine.pml pass -DNREC=1 -DNOPS0=1 -DNOPS1=3
check combine.pml 'fail:assertion violated  !(stale[p])' -DNREC=1 -DNOPS0=1 -DNOPS1=4
if [ "${MODELS_FULL:-0}" = 1 ]; then   # 18M / 30M states, ~25 / 55 s
  check combine.pml pass -DNOPS0=2 -DNOPS1=2          # wraps the generation
  check combine.pml pass -DNOPS0=1 -DNOPS1=1 -DNOPS2=1  # 3 appenders
fi

if [ $fail = 0 ]; then echo "models: all correct models verified, all broken variants rejected"
else echo "models: FAILED"; fi
exit $fail
