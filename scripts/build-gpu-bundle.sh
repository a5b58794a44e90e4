#!/usr/bin/env bash
# Builds the CUDA test and measurement programs as self-contained binaries
# for scripts/gpu-check.sh on a GPU machine that has only the NVIDIA driver
# (no liburcu, no Criterion, no CUDA runtime library needed there): the
# device tests, the figures, the fault test, the fault-site sweep
# (Criterion replaced by tests/criterion_shim) and the production set-up
# (accel_cuda_module_run with libaccel-backend-cuda.so beside it):
#   - CUDA runtime linked statically (cudart_static; the driver's libcuda is
#     loaded at run time),
#   - liburcu-memb/-cds/-common from their static archives (ACCEL_CUDA_BUNDLE),
#   - libstdc++ and libgcc static; glibc stays dynamic (the MANIFEST lists
#     the newest GLIBC symbol version each binary needs); anything else
#     dynamic fails the build.
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
progs=(accel_cuda_device accel_cuda_fault accel_cuda_nodevice accel_gpu_check
       accel_cuda_fault_sweep accel_cuda_module_run)
module=libaccel-backend-cuda.so
t0=$(date +%s)

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
      -DACCEL_WITH_CUDA=ON -DACCEL_CUDA_BUNDLE=ON -DACCEL_BUILD_BENCH=OFF \
      -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${progs[@]}" accel-backend-cuda

rm -rf "$out"
mkdir -p "$out"
for p in "${progs[@]}" "$module"; do
  cp "$build/$p" "$out/"
done
strip --strip-unneeded "$out"/* # smaller to carry; symbols are not needed
chmod +x "$out"/accel_*
{
  echo "accel gpu bundle"
  echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo ' (dirty tree)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm)"
  echo "nvcc: $(nvcc --version | tail -1)"
  for p in "${progs[@]}" "$module"; do
    needs=$(objdump -T "$out/$p" | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -1)
    libs=$(ldd "$out/$p" | awk '{print $1}' | grep -v vdso | tr '\n' ' ')
    echo "$p: needs ${needs:-?}; shared libs: $libs"
  done
} > "$out/MANIFEST"
# Nothing but glibc (libc, libm, the loader and its split-off parts) may
# remain dynamic; the driver's libcuda is loaded by the CUDA runtime.
bad=$(for f in "$out"/accel_* "$out/$module"; do
        ldd "$f" | awk '{print $1}' | grep -vE \
          '^(linux-vdso\.so\.1|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|/lib64/ld-linux-x86-64\.so\.2|/lib/ld-linux-aarch64\.so\.1)$' |
          sed "s|^|$(basename "$f"): |"
      done || true)
if [ -n "$bad" ]; then
  printf '%s\n' "$bad" >&2
  echo "build-gpu-bundle: a dependency is still dynamic (see above)" >&2
  exit 1
fi
echo "size: $(du -sh "$out" | cut -f1)" >> "$out/MANIFEST"
cat "$out/MANIFEST"
echo "bundle: $out (built in $(($(date +%s) - t0)) s)"
