#!/usr/bin/env bash
# GPU check: runs the CUDA tests and measures the device figures, in well
# under 5 minutes, on a machine with an NVIDIA GPU (Hopper: the kernels are
# sm_90), CUDA and CMake, without internet and without accel's apt
# dependencies. Prints one line per figure ("gpu-check ...").
#
# Usage: scripts/gpu-check.sh [BUNDLE_DIR]
# BUNDLE_DIR holds the programs made by scripts/build-gpu-bundle.sh on a
# build machine (default: build-gpu-bundle/bundle, or $ACCEL_GPU_BUNDLE).
# Without a bundle the script builds from the repository, which needs
# liburcu (pkg-config liburcu-memb); the raw CUDA figures alone need only
# nvcc (they are part of accel_gpu_check, so build the bundle elsewhere).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=${1:-${ACCEL_GPU_BUNDLE:-$root/build-gpu-bundle/bundle}}
t_start=$(date +%s)

if [ ! -x "$bundle/accel_gpu_check" ]; then
  if command -v cmake >/dev/null && command -v nvcc >/dev/null &&
     pkg-config --exists liburcu-memb liburcu-cds 2>/dev/null; then
    echo "gpu-check: no bundle at $bundle: building from source"
    bdir=$root/build-gpu-check
    cmake -S "$root" -B "$bdir" -DCMAKE_BUILD_TYPE=Release -DACCEL_WITH_CUDA=ON \
          -DACCEL_BUILD_BENCH=OFF -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null &&
      cmake --build "$bdir" -j"$(nproc)" --target accel_cuda_device \
            accel_cuda_fault accel_cuda_nodevice accel_gpu_check >/dev/null ||
      { echo "gpu-check: build failed"; exit 2; }
    bundle=$bdir
  else
    echo "gpu-check: no bundle at $bundle and liburcu/nvcc/cmake missing here;"
    echo "  build one with scripts/build-gpu-bundle.sh on a machine with the deps"
    exit 2
  fi
fi
[ -f "$bundle/MANIFEST" ] && sed 's/^/gpu-check bundle: /' "$bundle/MANIFEST"
gpu_present=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  gpu_present=1
fi
if [ $gpu_present = 1 ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader |
    sed 's/^/gpu-check gpu: /'
fi

fails=0
run_test() { # name, timeout, command...
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s%N) rc verdict
  out=$(timeout "$limit" "$@" 2>&1); rc=$?
  case $rc in
    0) verdict=PASS ;;
    77) verdict=SKIP
        # A GPU is there but unusable: e.g. a driver older than the bundle's
        # CUDA runtime (error 35); see docs/cuda.md.
        [ $gpu_present = 1 ] && fails=$((fails + 1)) ;;
    124) verdict=TIMEOUT; fails=$((fails + 1)) ;;
    *) verdict=FAIL; fails=$((fails + 1)) ;;
  esac
  printf 'gpu-check test %s %s rc=%d ms=%d\n' "$name" "$verdict" "$rc" \
         $((($(date +%s%N) - t0) / 1000000))
  [ "$verdict" = PASS ] || printf '%s\n' "$out" | tail -20 | sed 's/^/    /'
}

run_test nodevice 60 "$bundle/accel_cuda_nodevice"
for sub in fifo shared priority budget close sessions17; do
  run_test "device_$sub" 90 "$bundle/accel_cuda_device" "$sub"
done
run_test fault 120 "$bundle/accel_cuda_fault"

# Figures: launch, event, alloc, throughput (x4), node (off/on), budget (x3).
timeout 200 "$bundle/accel_gpu_check"
rc=$?
case $rc in
  0) ;;
  77) echo "gpu-check figures: skipped (no usable device)"
      [ $gpu_present = 1 ] && fails=$((fails + 1)) ;;
  *) echo "gpu-check figures: rc=$rc"; fails=$((fails + 1)) ;;
esac

echo "gpu-check done failures=$fails seconds=$(($(date +%s) - t_start))"
[ $fails -eq 0 ]
