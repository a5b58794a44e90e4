#!/usr/bin/env bash
# The cost of the USDT probes with no tracer attached: bench_throughput
# (accel only) from two Release builds, with and without ACCEL_WITH_USDT,
# run interleaved (ON, OFF, ON, OFF, ...) so that machine noise hits both
# alike; prints each cell's median ns/op per build and the ratio.
# Usage: bench/usdt-overhead.sh [pairs] [extra bench_throughput flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-8}; shift || true
cells=(--systems accel --ops 0,1 --producers 1,4 --sessions 4,17 --workers 2
       --modes 1,32 --reps 3 --rounds 1 "$@")
for v in ON OFF; do
  cmake -S . -B build-rel-usdt$v -DCMAKE_BUILD_TYPE=Release -DACCEL_BUILD_TESTS=OFF \
        -DACCEL_WITH_CUDA=OFF -DACCEL_WITH_USDT=$v >/dev/null
  cmake --build build-rel-usdt$v -j2 --target accel_bench_throughput >/dev/null
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$pairs"); do
  for v in ON OFF; do
    build-rel-usdt$v/bench/accel_bench_throughput "${cells[@]}" | grep '^RESULT' |
      grep '"system":"accel"' >> "$out/$v"
  done
done
python3 - "$out/ON" "$out/OFF" <<'PY'
import json, statistics, sys
def load(p):
    d = {}
    for line in open(p):
        r = json.loads(line.split(' ', 1)[1])
        d.setdefault(r['name'], []).append(r['ns_per_op'])
    return d
on, off = load(sys.argv[1]), load(sys.argv[2])
print(f"{'cell':28} {'probes ns/op':>12} {'none ns/op':>11} {'ratio':>7}")
ratios = []
for k in on:
    a, b = statistics.median(on[k]), statistics.median(off[k])
    ratios.append(a / b)
    print(f"{k:28} {a:12.1f} {b:11.1f} {a / b:7.3f}")
print(f"geometric mean ratio (probes / none): "
      f"{statistics.geometric_mean(ratios):.3f} over {len(ratios)} cells, "
      f"{len(next(iter(on.values())))} runs each")
PY
