#!/usr/bin/env bash
# The libFuzzer API fuzzer (fuzz/api_fuzz.c).
#
#   fuzz/run.sh build            build fuzz/api_fuzz into $FUZZ_BUILD (clang,
#                                -fsanitize=fuzzer,address,undefined)
#   fuzz/run.sh replay           run every seed in fuzz/corpus once (CI)
#   fuzz/run.sh fuzz [SECONDS]   fuzz for SECONDS (default 120), starting from
#                                the seeds; new inputs go to a scratch corpus
#                                ($FUZZ_BUILD/corpus), never into the repo
#
# Longer runs: fuzz/run.sh fuzz 3600, or run the binary yourself, e.g.
#   build-rel-fuzz/api_fuzz -jobs=2 -workers=2 -max_len=512 \
#       build-rel-fuzz/corpus fuzz/corpus
# A crash leaves crash-<sha1> in the current directory: replay it with
#   build-rel-fuzz/api_fuzz crash-<sha1>
# and, once fixed, add it to fuzz/corpus/ as a regression seed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
B=${FUZZ_BUILD:-$root/build-rel-fuzz}
CLANG=${CLANG:-$(command -v clang || command -v clang-14)}
mode=${1:-replay}

build() {
  mkdir -p "$B"
  # The library, sanitized and with fuzzer coverage, as the static test
  # archive (internal symbols visible); no tests, no benchmarks.
  cmake -S "$root" -B "$B/lib" -DCMAKE_C_COMPILER="$CLANG" \
        -DACCEL_WITH_CUDA=OFF -DACCEL_BUILD_BENCH=OFF -DACCEL_WERROR=ON \
        -DACCEL_SANITIZE=address,undefined \
        -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" >/dev/null
  cmake --build "$B/lib" -j"$(nproc)" --target accel_testlib >/dev/null
  "$CLANG" -g -O1 -std=c11 -Wall -Wextra -Werror \
      -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
      -I"$root/include" "$root/fuzz/api_fuzz.c" \
      "$B/lib/tests/libaccel_testlib.a" \
      $(pkg-config --libs liburcu-memb liburcu-cds) -lpthread \
      -o "$B/api_fuzz"
}

[ -x "$B/api_fuzz" ] && [ "$mode" != build ] || build
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
case "$mode" in
  build) echo "built $B/api_fuzz" ;;
  replay)
    n=$(ls "$root/fuzz/corpus" | wc -l)
    "$B/api_fuzz" -runs=1 "$root"/fuzz/corpus/* 2>"$B/replay.log" \
      || { tail -40 "$B/replay.log"; exit 1; }
    echo "fuzz replay: $n seeds, 0 failures" ;;
  fuzz)
    secs=${2:-120}
    mkdir -p "$B/corpus"
    # A crash input lands in the build folder (not the caller's cwd); the
    # log's "INFO: Seed:" line replays the run.
    "$B/api_fuzz" -max_total_time="$secs" -max_len=512 -timeout=20 -artifact_prefix="$B/" \
        -print_final_stats=1 "$B/corpus" "$root/fuzz/corpus" 2>"$B/fuzz.log" \
      || { tail -60 "$B/fuzz.log"; exit 1; }
    grep -E "stat::number_of_executed_units|stat::peak_rss|cov:" "$B/fuzz.log" | tail -3
    echo "fuzz run: ${secs}s, no failure" ;;
  *) echo "usage: $0 build|replay|fuzz [seconds]" >&2; exit 2 ;;
esac
