#!/usr/bin/env bash
# scripts/reliability-ci.sh must fail loudly on a missing result: its tiers
# run against stand-in programs (a fake cmake, stress programs that pass,
# hang, crash or print nothing) in a scratch copy of the tree, and each bad
# case must end the script with a failure that names the seed and why,
# while the tiers after it still run. Usage: check_reliability_ci.sh REPO
set -u
repo=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts" "$tmp/bin"
cp "$repo/scripts/reliability-ci.sh" "$tmp/scripts/"
printf '#!/bin/sh\nexit 0\n' > "$tmp/bin/cmake"
# The stand-in stress program: $STANDIN says how seed 3 behaves.
stub='#!/usr/bin/env bash
seed=${ACCEL_YIELD_SEED:-0}
for ((i = 1; i <= $#; i++)); do [ "${!i}" = --seed ] && { j=$((i + 1)); seed=${!j}; }; done
if [ "$seed" = 3 ]; then
  case $STANDIN in
    hang) exec sleep 600 ;;
    crash) kill -SEGV $$ ;;
    silent) exit 0 ;;
    fail) echo "seed 3: lost an op"; exit 1 ;;
  esac
fi
echo "stress seed $seed: 1000 ops accepted, 1000 done"'
unit='#!/bin/sh
echo "Synthesis: Tested: 1 | Passing: 1 | Failing: 0 | Crashing: 0"'
for d in build-rel build-rel-yield; do
  mkdir -p "$tmp/$d/tests"
  printf '%s\n' "$stub" > "$tmp/$d/tests/accel_stress_exactly_once"
  printf '%s\n' "$stub" > "$tmp/$d/tests/accel_stress_cancel"
  printf '%s\n' "$unit" > "$tmp/$d/tests/accel_unit_bad_input"
  printf '%s\n' "$unit" > "$tmp/$d/tests/accel_unit_faults"
done
chmod +x "$tmp"/bin/* "$tmp"/build-rel*/tests/*

fails=0
run() { # standin tiers want(0|1) expected-text...
  local standin=$1 tiers=$2 want=$3; shift 3
  local out rc
  out=$(STANDIN=$standin PATH="$tmp/bin:$PATH" RELIABILITY_QUICK=1 \
        RELIABILITY_TIERS="$tiers" RELIABILITY_YIELD_SEEDS=4 \
        RELIABILITY_SEED_TIMEOUT=8 RELIABILITY_YIELD_TIMEOUT=8 JOBS=1 \
        timeout 120 bash "$tmp/scripts/reliability-ci.sh" 2>&1); rc=$?
  local ok=1
  if [ "$want" = 0 ] && [ $rc != 0 ]; then ok=0; fi
  if [ "$want" = 1 ] && { [ $rc = 0 ] || [ $rc = 124 ]; }; then ok=0; fi
  for t in "$@"; do printf '%s\n' "$out" | grep -qF -- "$t" || { ok=0; echo "missing: $t"; }; done
  if [ $ok = 1 ]; then echo "ok: $standin ($tiers): exit $rc"
  else echo "WRONG: $standin ($tiers): exit $rc"; printf '%s\n' "$out" | tail -20; fails=$((fails + 1)); fi
}
run pass "yield plain" 0 "reliability: all tiers passed"
for tiers in "yield plain" "plain yield"; do
  run hang "$tiers" 1 "seed 3: FAILED: hung" "=== tier plain: FAILED" "=== tier yield: FAILED" "reliability: FAILED tiers"
  run crash "$tiers" 1 "seed 3: FAILED: killed by signal 11" "=== tier plain: FAILED" "=== tier yield: FAILED"
  run silent "$tiers" 1 "seed 3: FAILED: no \"ops accepted\" result" "=== tier plain: FAILED" "=== tier yield: FAILED"
  run fail "$tiers" 1 "seed 3: FAILED: exit status 1" "=== tier plain: FAILED" "=== tier yield: FAILED"
done
[ $fails = 0 ] && echo "reliability-ci.sh: every bad run fails loudly"
exit $((fails > 0))
