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

stress_seeds() { # dir ops-per-seed seeds...
  local d=$1 ops=$2; shift 2
  local total=0 s out
  for s in "$@"; do
    # timeout: a lost wake-up shows as a hang; fail it instead of CI
    out=$(timeout 600 "$d/$STRESS" --ops "$ops" --seconds 900 --seed "$s" --quiet) || { echo "$out"; return 1; }
    echo "$out"
    total=$((total + $(echo "$out" | sed -n 's/.*: \([0-9]*\) ops accepted.*/\1/p')))
  done
  echo "total ops accepted: $total"
}

unit() { # binary: a Criterion suite; a LeakSanitizer report fails it (Criterion
         # itself ignores the report its test process prints at exit)
  local out rc
  out=$("$1" --jobs 1 2>&1); rc=$?
  echo "$out" | tail -3
  if echo "$out" | grep -q "LeakSanitizer"; then echo "$out" | grep -A12 "LeakSanitizer" | head -40; return 1; fi
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
  local s fails=0 ops=0 out
  for s in $(seq 1 "$YIELD_SEEDS"); do
    if ! out=$(ACCEL_YIELD_SEED=$s timeout 60 build-rel-yield/$STRESS --seconds 0.25 --seed "$s" --quiet); then
      echo "yield seed $s FAILED:"; echo "$out"; fails=$((fails + 1))
    fi
    ops=$((ops + $(echo "$out" | sed -n 's/.*: \([0-9]*\) ops accepted.*/\1/p' | head -1)))
  done
  echo "random-yield: $YIELD_SEEDS seeds, $ops ops accepted, $fails failed"
  # cancel vs take: the yields widen the window between the two RMWs
  for s in 1 2 3 4; do
    if ! out=$(ACCEL_YIELD_SEED=$s ACCEL_STRESS_SECONDS=0.5 timeout 60 build-rel-yield/tests/accel_stress_cancel); then
      echo "yield cancel seed $s FAILED:"; echo "$out"; fails=$((fails + 1))
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
if [ ${#failed[@]} -gt 0 ]; then echo "reliability: FAILED tiers: ${failed[*]}"; exit 1; fi
if [ ${#skipped[@]} -gt 0 ]; then
  echo "reliability: SKIPPED tiers (tool missing): ${skipped[*]}"
  [ "${RELIABILITY_ALLOW_SKIP:-0}" = 1 ] || exit 1
  echo "reliability: the other tiers passed (RELIABILITY_ALLOW_SKIP=1)"
  exit 0
fi
echo "reliability: all tiers passed"
