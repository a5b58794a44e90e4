#!/usr/bin/env bash
# Builds the CUDA test and measurement programs as self-contained binaries
# for scripts/gpu-check.sh on a GPU machine that has only the NVIDIA driver
# (no liburcu, no Criterion, no CUDA runtime library needed there):
#   - CUDA runtime linked statically (cudart_static; the driver's libcuda is
#     loaded at run time),
#   - liburcu-memb/-cds/-common from their static archives (ACCEL_CUDA_BUNDLE),
#   - libstdc++ and libgcc static; glibc stays dynamic (the MANIFEST lists
#     the newest GLIBC symbol version each binary needs).
# Kernels are built for sm_90 (Hopper: H100/H200) with compute_90 PTX.
#
# Usage: scripts/build-gpu-bundle.sh [BUNDLE_DIR]
#   BUNDLE_DIR defaults to build-gpu-bundle/bundle (ignored by git; carry it
#   to the device next to the repository). Build directory:
#   $ACCEL_BUNDLE_BUILD or build-gpu-bundle.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ACCEL_BUNDLE_BUILD:-$root/build-gpu-bundle}
out=${1:-$build/bundle}
progs=(accel_cuda_device accel_cuda_fault accel_cuda_nodevice accel_gpu_check)

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
      -DACCEL_WITH_CUDA=ON -DACCEL_CUDA_BUNDLE=ON -DACCEL_BUILD_BENCH=OFF \
      -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${progs[@]}"

rm -rf "$out"
mkdir -p "$out"
for p in "${progs[@]}"; do
  cp "$build/$p" "$out/"
done
{
  echo "accel gpu bundle"
  echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo ' (dirty tree)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm)"
  echo "nvcc: $(nvcc --version | tail -1)"
  for p in "${progs[@]}"; do
    needs=$(objdump -T "$out/$p" | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -1)
    libs=$(ldd "$out/$p" | awk '{print $1}' | grep -v vdso | tr '\n' ' ')
    echo "$p: needs ${needs:-?}; shared libs: $libs"
  done
} > "$out/MANIFEST"
# Nothing but the C library may remain dynamic.
if ldd "$out"/* 2>/dev/null | grep -E 'liburcu|libcudart|libstdc\+\+|libcriterion'; then
  echo "build-gpu-bundle: a dependency is still dynamic (see above)" >&2
  exit 1
fi
cat "$out/MANIFEST"
echo "bundle: $out"
