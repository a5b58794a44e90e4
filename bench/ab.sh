#!/bin/sh
# Before/after pairs of the benchmark suite: runs each program of
# bench/run-all.sh from two builds in turn (A B A B ..., the order
# alternating per repetition so a drifting machine hits both alike) and
# prints, for every TARGET line, the median of each build and new/old.
#   [AB_FAST=1] bench/ab.sh OLD_BUILD NEW_BUILD [REPS]   (REPS default 2)
# OLD_BUILD and NEW_BUILD are build folders with bench/ built (Release).
# A ratio is only as good as the spread beside it: each cell also shows
# the lowest and highest sample of each build.
set -eu
if [ $# -lt 2 ] || [ "$1" = "--help" ]; then
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
old=$1 new=$2 reps=${3:-2}
for b in "$old" "$new"; do
    for p in accel_bench_throughput accel_bench_sessions_scale accel_bench_idle \
             accel_bench_fairness accel_bench_latency accel_bench_pick_scale; do
        [ -x "$b/bench/$p" ] || { echo "ab: $b/bench/$p not built" >&2; exit 1; }
    done
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The suite's programs and arguments (bench/run-all.sh), one line each.
# AB_FAST=1: the throughput matrix once per run instead of three passes
# (each pass is minutes on 2 cores).
rounds=3
[ "${AB_FAST:-0}" = 1 ] && rounds=1
cat > "$tmp/progs" <<EOF
throughput accel_bench_throughput --reps 2 --rounds $rounds
sessions_scale accel_bench_sessions_scale
idle accel_bench_idle
fairness accel_bench_fairness --seconds 2
latency accel_bench_latency --backlog 16
pick_scale accel_bench_pick_scale
EOF

i=0
while [ "$i" -lt "$reps" ]; do
    if [ $((i % 2)) -eq 0 ]; then order="old new"; else order="new old"; fi
    while read -r name prog args; do
        for side in $order; do
            eval "b=\$$side"
            echo "== rep $((i + 1))/$reps $name ($side)" >&2
            # shellcheck disable=SC2086
            "$b/bench/$prog" $args > "$tmp/$side.$name.$i.txt" 2>&1 ||
                echo "ab: $side $name exited $?" >&2
        done
    done < "$tmp/progs"
    i=$((i + 1))
done

python3 - "$tmp" "$reps" <<'EOF'
import glob, os, re, statistics, sys
tmp, reps = sys.argv[1], int(sys.argv[2])
pat = re.compile(r'^TARGET\s+(.*?)\s{2,}([-0-9.e+]+)\s+(\S*)\s+\(target')
cells = {}  # (name, what) -> {side: [values]}
order = []
for path in sorted(glob.glob(os.path.join(tmp, '*.txt'))):
    side, name, _, _ = os.path.basename(path).split('.')
    for line in open(path, errors='replace'):
        m = pat.match(line)
        if not m:
            continue
        key = (name, m.group(1).strip(), m.group(3))
        if key not in cells:
            cells[key] = {'old': [], 'new': []}
            order.append(key)
        cells[key][side].append(float(m.group(2)))
print(f"{'benchmark':<15} {'figure':<58} {'old (min..max)':>24} {'new (min..max)':>24} {'new/old':>8}")
for key in order:
    o, n = cells[key]['old'], cells[key]['new']
    if not o or not n:
        continue
    mo, mn = statistics.median(o), statistics.median(n)
    r = f"{mn / mo:.3f}" if mo else "-"
    fo = f"{mo:.4g} ({min(o):.4g}..{max(o):.4g})"
    fn = f"{mn:.4g} ({min(n):.4g}..{max(n):.4g})"
    print(f"{key[0]:<15} {(key[1] + ' [' + key[2] + ']')[:58]:<58} {fo:>24} {fn:>24} {r:>8}")
print(f"\n{reps} repetitions per build, interleaved; medians of the TARGET lines' measured values.")
EOF
