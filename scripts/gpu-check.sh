#!/usr/bin/env bash
# GPU check: the CUDA device tests, the figures, the module set-up, the
# fault-site sweep and the fault test, on a machine with an NVIDIA GPU
# (Hopper: the kernels are sm_90) and only its driver. Every step has its
# own limit (timeout -k): the worst case of all steps is WORST_S below,
# under 9 minutes; a normal run takes about 2. Each step's output is
# written as it comes (line-buffered), so a caller that tees it keeps what
# a killed run printed. Summary lines start with "gpu-check ".
#
# Usage: scripts/gpu-check.sh [BUNDLE_DIR] 2>&1 | tee SOMEWHERE/gpu-check.log
# BUNDLE_DIR: the programs of scripts/build-gpu-bundle.sh (default
# build-gpu-bundle/bundle, or $ACCEL_GPU_BUNDLE). docs/cuda.md has the
# exact commands of a device run.
#
# Order: cheap checks first, then the figures (a fault could cost them),
# then the module set-up and the sweep, the fault test last (it poisons
# its process's CUDA context; under a sandboxed driver it may do worse).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=${1:-${ACCEL_GPU_BUNDLE:-$root/build-gpu-bundle/bundle}}
t_start=$(date +%s)
WORST_S=519 # the limits below (430) + 5 s kill grace per step (13) + nvidia-smi (24)

if [ ! -d "$bundle" ] || [ ! -f "$bundle/accel_gpu_check" ]; then
  echo "gpu-check: no bundle at $bundle: build it with scripts/build-gpu-bundle.sh"
  exit 2
fi
chmod +x "$bundle"/accel_* 2>/dev/null # modes may be lost in transfer
echo "gpu-check start $(date -u +%H:%M:%SZ) bundle=$bundle worst_case_s=$WORST_S"
[ -f "$bundle/MANIFEST" ] && sed 's/^/gpu-check bundle: /' "$bundle/MANIFEST"

gpu_present=0
if command -v nvidia-smi >/dev/null &&
   timeout -k 2 10 nvidia-smi -L >/dev/null 2>&1; then
  gpu_present=1
  timeout -k 2 10 nvidia-smi \
    --query-gpu=name,driver_version,memory.total,compute_mode --format=csv,noheader |
    sed 's/^/gpu-check gpu: /'
else
  echo "gpu-check gpu: none visible (nvidia-smi absent or failed): every device step should skip"
fi

# Line-buffered output from the programs when stdbuf exists (they are
# dynamic against glibc only, so its preload works).
lb=()
command -v stdbuf >/dev/null && lb=(stdbuf -oL -eL)

fails=0
declare -A verdict_of
logs=$(mktemp -d) # each step's output also lands in $logs/NAME.log
trap 'rm -rf "$logs"' EXIT
# step NAME LIMIT_S COMMAND...: streams the output indented, then one
# summary line. 77 is a skip: a failure where a GPU is visible.
step() {
  local name=$1 limit=$2; shift 2
  local t0 rc v
  t0=$(date +%s%N)
  echo "gpu-check step $name start (limit ${limit}s)"
  timeout -k 5 "$limit" ${lb[@]+"${lb[@]}"} "$@" 2>&1 | tee "$logs/$name.log" |
    sed -u 's/^/    /'
  rc=${PIPESTATUS[0]}
  case $rc in
    0) v=PASS ;;
    77) v=SKIP; [ $gpu_present = 1 ] && { v=SKIP-WITH-GPU; fails=$((fails + 1)); } ;;
    124|137) v=TIMEOUT; fails=$((fails + 1)) ;;
    *) v=FAIL; fails=$((fails + 1)) ;;
  esac
  verdict_of[$name]=$v
  printf 'gpu-check test %s %s rc=%d ms=%d elapsed_s=%d\n' "$name" "$v" "$rc" \
         $((($(date +%s%N) - t0) / 1000000)) $(($(date +%s) - t_start))
}

# risk NAME STEP WHAT: a first-run risk, answered by a step's verdict.
risk() {
  echo "gpu-check risk $1: ${verdict_of[$2]:-NOT-RUN} ($2: $3)"
}

step nodevice 15 "$bundle/accel_cuda_nodevice"
step device_fifo 25 "$bundle/accel_cuda_device" fifo
risk mapped-host-memory-written-by-device device_fifo \
  "the log kernel appends to cudaHostAllocMapped memory, done sees it"
step device_budget 25 "$bundle/accel_cuda_device" budget
risk pool-placement-2MiB-maxSize device_budget \
  "EBUDGET before the pool refuses; 1 MiB contiguous after 240 frees of 4,097 bytes"
for sub in shared priority close sessions17; do
  step "device_$sub" 25 "$bundle/accel_cuda_device" "$sub"
done
step device_batch 25 "$bundle/accel_cuda_device" batch
risk one-launch-per-batch device_batch \
  "200 queued ops of a batched session: one call, one kernel launch, dones in order"
# Figures: launch, event, alloc, throughput, node (priorities off/on),
# budget, batch (a launch per op vs per batch). About a minute.
step figures 90 "$bundle/accel_gpu_check"
step module 30 env ACCEL_BACKEND_DIR="$bundle" "$bundle/accel_cuda_module_run"
risk two-static-cuda-runtimes-module module \
  "libaccel-backend-cuda.so's CUDA runtime and the program's share streams"
step fault_sweep 50 "$bundle/accel_cuda_fault_sweep"
# Without a device the sweep covers the CPU sites only and says so.
if grep -q 'skipped (no device)' "$logs/fault_sweep.log" 2>/dev/null; then
  if [ $gpu_present = 1 ]; then
    verdict_of[fault_sweep_cuda_sites]=FAIL; fails=$((fails + 1))
  else
    verdict_of[fault_sweep_cuda_sites]=SKIP
  fi
elif [ "${verdict_of[fault_sweep]}" = PASS ]; then
  verdict_of[fault_sweep_cuda_sites]=PASS
else
  verdict_of[fault_sweep_cuda_sites]=${verdict_of[fault_sweep]}
fi
echo "gpu-check test fault_sweep_cuda_sites ${verdict_of[fault_sweep_cuda_sites]}"
risk cuda-fault-sites-on-device fault_sweep_cuda_sites \
  "stream, event, pool and device-allocation failures at every CUDA site"
step fault 35 "$bundle/accel_cuda_fault"
risk faulting-kernel-under-this-driver fault \
  "sticky error seen, ops complete with EBACKEND, nothing hangs"
step fault_batch 35 "$bundle/accel_cuda_fault" batch
risk faulting-batch-launch fault_batch \
  "a batch's one launch faults: each of its ops EBACKEND once, in order"

echo "gpu-check done failures=$fails seconds=$(($(date +%s) - t_start))"
[ $fails -eq 0 ]
