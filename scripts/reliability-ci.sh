#!/usr/bin/env bash
# Reliability tiers (docs/reliability.md), called by .ci/run.
# Prints the time each tier took and one summary line per tier.
#
# Env:
#   RELIABILITY_QUICK=1   quick mode (~3 min): fewer ops, seeds, fuzz time
#   RELIABILITY_TIERS     space-separated subset of:
#                         plain tsan asan clang yield models fuzz
#   RELIABILITY_FUZZ_SECONDS  fuzz run length (default 120; quick 20)
#   JOBS                  build parallelism (default nproc)
#   RELIABILITY_YIELD_SEEDS   random-yield seeds (default 200; quick 20)
#   RELIABILITY_SEED_TIMEOUT  seconds a stress seed, or a Criterion suite
#                         of the tier, may take (default 600; random-yield
#                         seeds: RELIABILITY_YIELD_TIMEOUT, 60)
#   RELIABILITY_ALLOW_SKIP=1  a tier whose tool is missing (clang, spin)
#                         reports SKIPPED and does not fail the run; by
#                         default a missing tool fails it (deps.sh installs
#                         them all)
# Build dirs: build-rel, build-rel-tsan, build-rel-asan, build-rel-clang,
# build-rel-yield, build-rel-fuzz (all under the repo root).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
JOBS=${JOBS:-$(nproc)}
Q=${RELIABILITY_QUICK:-0}
TIERS=${RELIABILITY_TIERS:-"plain tsan asan clang yield models fuzz"}
if [ "$Q" = 1 ]; then
  PLAIN_OPS=400000; SAN_OPS=150000; YIELD_SEEDS=20; FUZZ_S=${RELIABILITY_FUZZ_SECONDS:-20}
else
  PLAIN_OPS=3400000; SAN_OPS=2000000; YIELD_SEEDS=200; FUZZ_S=${RELIABILITY_FUZZ_SECONDS:-120}
fi
YIELD_SEEDS=${RELIABILITY_YIELD_SEEDS:-$YIELD_SEEDS}
SEED_T=${RELIABILITY_SEED_TIMEOUT:-600}
YIELD_T=${RELIABILITY_YIELD_TIMEOUT:-60}
STRESS=tests/accel_stress_exactly_once
COMMON=(-DACCEL_WITH_CUDA=OFF -DACCEL_BUILD_BENCH=OFF)
export TSAN_OPTIONS="halt_on_error=1 suppressions=$root/tests/tsan.supp"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=()
skipped=()
summary=()

tier() { # name command...   (command exit 77: its tool is missing)
  local name=$1; shift
  local t0=$SECONDS rc
  echo "=== tier $name"
  "$@"; rc=$?
  if [ $rc = 0 ]; then r=ok
  elif [ $rc = 77 ]; then r=SKIPPED; skipped+=("$name")
  else r=FAILED; failed+=("$name"); fi
  local dt=$((SECONDS - t0))
  summary+=("$(printf '%-8s %-6s %4ds' "$name" "$r" "$dt")")
  echo "=== tier $name: $r in ${dt}s"
}

build() { # dir cmake-args...
  local d=$1; shift
  cmake -S . -B "$d" "${COMMON[@]}" "$@" >/dev/null &&
  cmake --build "$d" -j"$JOBS" --target accel_stress_exactly_once "${EXTRA_TARGETS[@]}" 2>&1 |
    grep -E "error|warning" ; return "${PIPESTATUS[0]}"
}

# Every stress run must end well AND print its result: a run that hangs,
# crashes or says nothing fails its tier by name (an empty count must never
# reach the arithmetic, where bash would abandon the whole tier loop).
ran_ok() { # label rc output: 0 if the run exited 0 and printed its count
  local label=$1 rc=$2 out=$3
  case $rc in
    0) ;;
    124) echo "$label: FAILED: hung (killed by timeout)"; return 1 ;;
    *) if [ "$rc" -gt 128 ]; then
         echo "$label: FAILED: killed by signal $((rc - 128))"
       else echo "$label: FAILED: exit status $rc"; fi
       return 1 ;;
  esac
  ops_of "$out" >/dev/null || { echo "$label: FAILED: no \"ops accepted\" result"; return 1; }
}

ops_of() { # output: prints its "N ops accepted" count; fails without one
  local n
  n=$(sed -n 's/.*: \([0-9][0-9]*\) ops accepted.*/\1/p;T;q' <<<"$1")
  [ -n "$n" ] && echo "$n"
}

stress_seeds() { # dir ops-per-seed seeds...
  local d=$1 ops=$2; shift 2
  local total=0 s out rc
  for s in "$@"; do
    # timeout: a lost wake-up shows as a hang; fail it instead of CI
    out=$(timeout "$SEED_T" "$d/$STRESS" --ops "$ops" --seconds 900 --seed "$s" --quiet); rc=$?
    echo "$out"
    ran_ok "seed $s" "$rc" "$out" || return 1
    total=$((total + $(ops_of "$out")))
  done
  echo "total ops accepted: $total"
}

unit() { # binary: a Criterion suite; a LeakSanitizer report fails it (Criterion
         # itself ignores the report its test process prints at exit)
  local out rc
  # timeout: a hang fails the tier, named, instead of running to CI's limit
  out=$(timeout "$SEED_T" "$1" --jobs 1 2>&1); rc=$?
  [ $rc = 124 ] && echo "$1: FAILED: hung (over ${SEED_T}s)"
  echo "$out" | tail -3
  # a here-string, not a pipe: under pipefail an echo cut off by grep -q's
  # early exit would make a found report read as none
  if grep -q "LeakSanitizer" <<<"$out"; then grep -m1 -A12 "LeakSanitizer" <<<"$out"; return 1; fi
  return $rc
}

t_plain() {
  EXTRA_TARGETS=(accel_unit_bad_input accel_unit_faults)
  build build-rel -DACCEL_WERROR=ON || return 1
  unit build-rel/tests/accel_unit_bad_input && unit build-rel/tests/accel_unit_faults &&
  stress_seeds build-rel "$PLAIN_OPS" 1 2 3
}
t_tsan() { # gcc TSan (no -Werror: gcc warns that TSan ignores fences)
  EXTRA_TARGETS=()
  build build-rel-tsan -DACCEL_SANITIZE=thread -DACCEL_WERROR=OFF || return 1
  stress_seeds build-rel-tsan "$SAN_OPS" 11
}
t_asan() {
  EXTRA_TARGETS=(accel_unit_bad_input accel_unit_faults)
  build build-rel-asan -DACCEL_SANITIZE=address,undefined -DACCEL_WERROR=ON || return 1
  unit build-rel-asan/tests/accel_unit_bad_input &&
  unit build-rel-asan/tests/accel_unit_faults &&
  stress_seeds build-rel-asan "$SAN_OPS" 21
}
t_clang() { # clang TSan, then clang ASan+UBSan
  EXTRA_TARGETS=()
  local cc; cc=$(command -v clang || command -v clang-14) ||
    { echo "clang tier: no clang found (scripts/deps.sh installs it)"; return 77; }
  build build-rel-clang-tsan -DCMAKE_C_COMPILER="$cc" -DACCEL_SANITIZE=thread -DACCEL_WERROR=ON &&
  stress_seeds build-rel-clang-tsan "$((SAN_OPS / 2))" 31 &&
  build build-rel-clang-asan -DCMAKE_C_COMPILER="$cc" -DACCEL_SANITIZE=address,undefined -DACCEL_WERROR=ON &&
  stress_seeds build-rel-clang-asan "$((SAN_OPS / 2))" 41
}
t_yield() {
  EXTRA_TARGETS=(accel_stress_cancel)
  build build-rel-yield -DACCEL_RANDOM_YIELD=ON -DACCEL_WERROR=ON || return 1
  local s fails=0 ops=0 out rc
  for s in $(seq 1 "$YIELD_SEEDS"); do
    out=$(ACCEL_YIELD_SEED=$s timeout "$YIELD_T" build-rel-yield/$STRESS --seconds 0.25 --seed "$s" --quiet); rc=$?
    if ran_ok "yield seed $s" "$rc" "$out"; then
      ops=$((ops + $(ops_of "$out")))
    else
      echo "$out"; fails=$((fails + 1))
    fi
  done
  echo "random-yield: $YIELD_SEEDS seeds, $ops ops accepted, $fails failed"
  # cancel vs take: the yields widen the window between the two RMWs
  for s in 1 2 3 4; do
    out=$(ACCEL_YIELD_SEED=$s ACCEL_STRESS_SECONDS=0.5 timeout "$YIELD_T" build-rel-yield/tests/accel_stress_cancel); rc=$?
    if [ $rc != 0 ]; then
      echo "$out"; ran_ok "yield cancel seed $s" "$rc" "$out"; fails=$((fails + 1))
    fi
  done
  echo "random-yield cancel: 4 seeds, $fails failed in all"
  [ $fails = 0 ]
}
t_models() { models/run.sh; }
t_fuzz() {
  FUZZ_BUILD=$root/build-rel-fuzz fuzz/run.sh build &&
  FUZZ_BUILD=$root/build-rel-fuzz fuzz/run.sh replay &&
  FUZZ_BUILD=$root/build-rel-fuzz fuzz/run.sh fuzz "$FUZZ_S"
}

for t in $TIERS; do tier "$t" "t_$t"; done
echo "=== reliability summary (quick=$Q)"
printf '%s\n' "${summary[@]}"
# A tier loop cut short (an expansion error abandons it in bash) leaves
# tiers without a line: that is a failure, never "all passed".
want=$(echo $TIERS | wc -w)
if [ ${#summary[@]} != "$want" ]; then
  echo "reliability: FAILED: ${#summary[@]} of $want tiers reported a result"
  exit 1
fi
if [ ${#failed[@]} -gt 0 ]; then echo "reliability: FAILED tiers: ${failed[*]}"; exit 1; fi
if [ ${#skipped[@]} -gt 0 ]; then
  echo "reliability: SKIPPED tiers (tool missing): ${skipped[*]}"
  [ "${RELIABILITY_ALLOW_SKIP:-0}" = 1 ] || exit 1
  echo "reliability: the other tiers passed (RELIABILITY_ALLOW_SKIP=1)"
  exit 0
fi
echo "reliability: all tiers passed"
