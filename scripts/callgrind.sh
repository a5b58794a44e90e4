#!/usr/bin/env bash
# Instruction and cache-miss counts per op of the submit path, with
# callgrind's cache simulation (repeatable, unlike wall-clock figures on a
# shared machine). Usage: scripts/callgrind.sh [build-dir]   (a Release
# build with the benchmarks; ~1 min)
#
# Two runs:
#  submit   accel_bench_throughput, 4 producers -> 4 sessions, 2 workers,
#           single empty submits (20000 ops, a warm-up pass of as many).
#           Per op: accel_submit (inclusive: reserve, publish, kick) and
#           run_visit (inclusive: takes, the op, done, completion, idling)
#           divided by the calls of accel_submit.
#  scale    accel_bench_pick_scale's runtime part (quantum_ops = 1: every
#           op is one visit; each completion resubmits from its done
#           callback) with 16 and with 100000 sessions. Per op: run_visit
#           (inclusive, so with the resubmit) / its calls, plus
#           accel__sched_pick / its calls and accel__sched_peek (the
#           worker's look at the next session, to prefetch it) / its calls.
# Columns: Ir instructions, D1mr/D1mw L1 data read/write misses, DLmr/DLmw
# last-level misses. callgrind simulates one cache for all threads: no
# coherence traffic between cores, so the miss counts measure how many
# lines an op touches that were not recently touched (the footprint that
# grows with 100k sessions), not cache-line ping-pong.
set -euo pipefail
B=${1:-build-release}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cg() { valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file="$1" "${@:2}" >/dev/null 2>&1; }

# per_op <file> <fn> [<count-fn>]: inclusive cost of fn / calls of count-fn
per_op() {
python3 - "$@" <<'PY'
import re, subprocess, sys
f, fn = sys.argv[1], sys.argv[2]
cnt = sys.argv[3] if len(sys.argv) > 3 else fn
ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", f],
                     capture_output=True, text=True).stdout
ev = None; cost = None
for line in ann.splitlines():
    if line.startswith("Events shown:"):
        ev = line.split(":", 1)[1].split()
    m = re.match(r"\s*([\d,]+) .*\?\?\?:(\S+) \[", line)
    if m and m.group(2) == fn and cost is None:
        nums = re.findall(r"([\d,]+|\.)(?: \([^)]*\))?", line.split("???:")[0])
        cost = [0 if x == "." else int(x.replace(",", "")) for x in nums]
# calls: sum of "calls=N" lines following a cfn= naming cnt
names = {}; calls = 0; cur = None
for line in open(f):
    m = re.match(r"(c?)fn=\((\d+)\)(?: (.*))?", line)
    if m:
        if m.group(3): names[m.group(2)] = m.group(3).strip()
        cur = names.get(m.group(2)) if m.group(1) else None
        continue
    if line.startswith("calls=") and cur == cnt:
        calls += int(line.split("=")[1].split()[0])
if cost is None or not calls:
    print(f"{fn}: not found"); sys.exit(0)
d = dict(zip(ev, cost))
print(f"  {fn:<18} per {cnt} call ({calls} calls): Ir {d['Ir']/calls:7.1f}  "
      f"D1mr {d['D1mr']/calls:5.2f}  D1mw {d['D1mw']/calls:5.2f}  "
      f"DLmr {d['DLmr']/calls:5.3f}  DLmw {d['DLmw']/calls:5.3f}")
PY
}

echo "# submit: P4 S4 W2 single, empty ops"
cmd=("$B/bench/accel_bench_throughput" --producers 4 --sessions 4 --workers 2 --ops 0
     --modes 1 --systems accel --reps 1 --ops-empty 20000 --max-rep-ms 100000)
echo "  valgrind --tool=callgrind --cache-sim=yes ${cmd[*]}"
cg "$out/submit" "${cmd[@]}"
per_op "$out/submit" accel_submit
per_op "$out/submit" run_visit accel_submit

for n in 16 100000; do
  echo "# scale: $n sessions, quantum_ops 1, 2 workers"
  cmd=("$B/bench/accel_bench_pick_scale" --sessions "$n" --workers 2 --reps 1 --seconds 2
       --loops 1)
  echo "  valgrind --tool=callgrind --cache-sim=yes ${cmd[*]}"
  cg "$out/scale$n" "${cmd[@]}"
  per_op "$out/scale$n" run_visit
  per_op "$out/scale$n" accel__sched_pick
  per_op "$out/scale$n" accel__sched_peek
done
