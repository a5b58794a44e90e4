#!/usr/bin/env bash
# The node example's table (docs/go.md, "The node example's numbers"):
# bindings/go/examples/node run with -reps, every scenario (steady 0.9,
# overload 1.2, blocking 0.9, blocking-hint 0.9, batch-low 0.5, batch 0.9)
# as REPS interleaved pairs
# (accel and the old design on the same arrivals, the order alternating,
# a capacity probe with the submitters running before each pair, a
# discarded warm-up pair first, fixed seeds), then the medians, the work
# ratios and each target, met or missed. For every scenario whose target
# is missed it profiles that scenario once per system (-systems accel,
# then old; -cpuprofile) and appends `go tool pprof -top` of each, whole
# and outside the op bodies (what the system itself spends).
#
#   scripts/go-node-table.sh [OUT]     (OUT default bench/results/go-node.txt)
#   REPS=5 DURATION=4s SEED=42 PROFILE=1 scripts/go-node-table.sh
#   NODE_ARGS='-scenario overload' scripts/go-node-table.sh /tmp/o.txt
#
# About 6 minutes on 2 cores with the defaults (per pair: a 1.3 s probe
# and 2 x (DURATION + up to 1 s of backlog); 263 s for the four scenarios
# before the batch ones on a loaded 2-vCPU machine), plus 12 s per missed
# target with PROFILE=1. Run it on a machine with nothing else running:
# the ratios come from pairs in one process, but a neighbour's load still
# lands on one run of a pair more than on the other.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/bench/results/go-node.txt}
reps=${REPS:-5}
dur=${DURATION:-4s}
seed=${SEED:-42}
profile=${PROFILE:-1}
args=(-reps "$reps" -duration "$dur" -seed "$seed")
# shellcheck disable=SC2206 # NODE_ARGS: extra flags, split on spaces
[ -n "${NODE_ARGS:-}" ] && args+=(${NODE_ARGS})

export PATH="$root/.tools/go/bin:$PATH" GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A stale hash would let go build reuse C compiled from older sources.
python3 "$root/scripts/go_csources_hash.py" --check
(cd "$root/bindings/go" && go build -o "$tmp/node" ./examples/node)

t0=$(date +%s)
{
    echo "command: scripts/go-node-table.sh (bindings/go/examples/node ${args[*]})"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet HEAD -- bindings/go 2>/dev/null || echo ' (bindings/go modified)')"
    echo "machine: nproc $(nproc), $(uname -sr), $(sed -n 's/^model name[[:space:]]*: //p;T;q' /proc/cpuinfo 2>/dev/null)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "go: $(go version)"
    echo
} > "$tmp/out"
"$tmp/node" "${args[@]}" | tee -a "$tmp/out"
t1=$(date +%s)
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); the table took $((t1 - t0)) s" >> "$tmp/out"

if [ "$profile" = 1 ]; then
    # Scenarios whose target row says missed (the summary's first column
    # is "name load").
    missed=$(sed -n 's/^| \([a-z-]*\) [0-9.]* | accel |.*\*\*missed\*\*.*/\1/p' "$tmp/out")
    for s in $missed; do
        for sys in accel old; do
            "$tmp/node" -scenario "$s" -systems "$sys" -duration "$dur" -seed "$seed" -warmup 0 \
                -cpuprofile "$tmp/$s-$sys.prof" > "$tmp/$s-$sys.txt"
            {
                echo "== profile: -scenario $s -systems $sys -duration $dur -warmup 0 =="
                grep -E '^(accel|old VMSession) ' "$tmp/$s-$sys.txt" || true
                go tool pprof -top -nodecount=15 "$tmp/node" "$tmp/$s-$sys.prof" 2>/dev/null |
                    sed -n '/^Duration/,$p'
                # What the system spends outside the op bodies (submit
                # paths, scheduling, timers, GC): the samples with neither
                # main.(*op).run, main.verifyBatch nor the start-up's checks
                # in their stack.
                echo "-- outside the op bodies (samples without main.(*op).run, main.verifyBatch or main.prepare):"
                go tool pprof -top -nodecount=20 -ignore 'main\.\(\*op\)\.run|main\.verifyBatch|main\.prepare' \
                    "$tmp/node" "$tmp/$s-$sys.prof" 2>/dev/null | sed -n '/^Showing nodes/,$p'
                echo
            } >> "$tmp/out"
        done
    done
    echo "profiles done: $(( $(date +%s) - t1 )) s" >> "$tmp/out"
fi
mkdir -p "$(dirname "$out")"
cp "$tmp/out" "$out"
echo "go-node-table: wrote $out ($(( $(date +%s) - t0 )) s)"
