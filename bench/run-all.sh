#!/bin/sh
# Runs the benchmark suite (a few minutes), writes bench/results/latest.json
# (one JSON object per line, every RESULT of every program), each
# program's text output and bench/results/summary.md (all of them in one).
#   bench/run-all.sh [build-dir]      (default: build)
# Run it on a quiet machine: absolute figures from a shared machine are noise.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-"$root/build"}
out="$here/results"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for p in accel_bench_throughput accel_bench_sessions_scale accel_bench_idle \
         accel_bench_fairness accel_bench_latency accel_bench_pick_scale accel-nodesim; do
    [ -x "$build/bench/$p" ] || { echo "run-all: $build/bench/$p not built" >&2; exit 1; }
done

cmd="bench/run-all.sh $*"
{
    echo "command: $cmd"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "nproc: $(nproc)"
    echo "kernel: $(uname -sr)"
    lscpu | head -n 15
} > "$tmp/machine.txt"

run() { # name, then the command
    name=$1; shift
    echo "== $name: $*"
    "$@" --json "$tmp/$name.json" > "$tmp/$name.txt"
    grep -v '^RESULT ' "$tmp/$name.txt"
}
# Three passes over the matrix, 2 repetitions each: a cell's median is
# over 6 samples spread across the run, so one noisy minute on this VM
# cannot own a cell.
run throughput "$build/bench/accel_bench_throughput" --reps 2 --rounds 3
run sessions_scale "$build/bench/accel_bench_sessions_scale"
run idle "$build/bench/accel_bench_idle"
run fairness "$build/bench/accel_bench_fairness" --seconds 2
# Each weight-1 session keeps 16 ops queued (its backlog): the FIFO pool's
# wait grows with it, accel's is bounded by one running op.
run latency "$build/bench/accel_bench_latency" --backlog 16
run pick_scale "$build/bench/accel_bench_pick_scale"
run nodesim "$build/bench/accel-nodesim" --format quiet

cat "$tmp/throughput.json" "$tmp/sessions_scale.json" "$tmp/idle.json" \
    "$tmp/fairness.json" "$tmp/latency.json" "$tmp/pick_scale.json" "$tmp/nodesim.json" \
    > "$out/latest.json"
cp "$tmp/machine.txt" "$out/machine.txt"
grep -h '^TARGET' "$tmp"/*.txt > "$out/targets.txt" || true
# (nodesim's "JSON lines: FILE" names this script's scratch folder: dropped)
for n in throughput sessions_scale idle fairness latency pick_scale nodesim; do
    grep -v -e '^RESULT ' -e '^JSON lines: ' "$tmp/$n.txt" > "$out/$n.txt"
done

# The summary of every program, in one file.
{
    echo '# bench/run-all.sh: the summary of every program (generated; do not edit)'
    echo
    echo '```'
    cat "$out/machine.txt"
    echo
    echo "# Targets"
    cat "$out/targets.txt"
    echo
    echo "# accel-nodesim (all scenarios; the summary tables)"
    sed -n '/^== /,$p' "$out/nodesim.txt"
    echo
    echo "# bench_throughput: empty ops, selected cells (ns/op; speedup = baseline/accel)"
    grep '^empty/' "$out/throughput.txt" | grep -E '/P(1|4|8)/S(1|4)/W2' || true
    echo
    echo "# bench_sessions_scale"
    sed -n '/^sessions/,/^$/p' "$out/sessions_scale.txt"
    echo "# bench_idle"
    grep -E '^(idle|wake-up)' "$out/idle.txt"
    echo
    echo "# bench_fairness --seconds 2"
    grep -v '^#' "$out/fairness.txt" | grep -v '^TARGET' || true
    echo
    echo "# bench_latency --backlog 16"
    grep -v '^#' "$out/latency.txt" | grep -v '^TARGET' || true
    echo
    echo "# bench_pick_scale"
    grep -v '^#' "$out/pick_scale.txt" | grep -v '^TARGET' || true
    echo '```'
} > "$out/summary.md"
echo "run-all: wrote $out/latest.json and $out/summary.md"
