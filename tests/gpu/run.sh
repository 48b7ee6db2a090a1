#!/usr/bin/env bash
# The one prepared GPU run of the CUDA backend. Run from
# anywhere on a machine with an NVIDIA GPU, its driver and the CUDA 13
# toolkit, in a single call:
#   bash tests/gpu/run.sh
# Steps, each under its own time limit (total about 8 minutes on 16 cores):
#   1. device facts (nvidia-smi)
#   2. Release build of only test_exec, test_emit and test_gpu (the CLI test skips without the fuseplan binary)
#   3. every CUDA test (NVRTC compilation of every group of every strategy's
#      plan of the shared cases, examples and small shared models; on the GPU:
#      fused vs unfused bit-identity, max relative error vs the CPU
#      reference, example timings, and the library route (the default,
#      emit/cuda/lowering.h): cuBLASLt GEMM with a prologue and an epilogue
#      kernel, cuBLASLt fused epilogues, cuDNN conv + epilogue kernel, each
#      fused vs unfused, and the emitted GEMM/conv of --library none)
#   4. test_gpu: a 1 GiB device-to-device copy (bandwidth ceiling), then every
#      shared model at batch 1 and 64, every strategy's plan timed under the
#      default library route (CUDA events, median of 20), outputs compared
#      with the unfused plan, fused memory-bound kernels against the copy
#      bandwidth (target >= 85%) and whether `cost` is fastest; then unfused
#      and cost with --library none (emitted GEMM/conv, bit-identical to each
#      other) and cost with cuBLASLt's fused epilogues; written after every model, so a
#      timeout keeps what was measured
# Results: results/gpu-<device>.md (device = the device config the GPU maps
# to, e.g. gpu-h200.md), logs and the test timings in results/gpu/.
# Knobs (environment): BUILD (build folder, default build-gpu), JOBS,
# TOTAL_S (the whole run's budget, default 470), FUSEPLAN_GPU_MODELS
# (comma-separated substrings of the shared model files to time).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-gpu}
JOBS=${JOBS:-$(nproc)}
TOTAL_S=${TOTAL_S:-470}
LOGS=$ROOT/results/gpu
mkdir -p "$LOGS"
export FUSEPLAN_CACHE_DIR=${FUSEPLAN_CACHE_DIR:-$BUILD/nvrtc-cache}
# libcublasLt / libcudnn are loaded with dlopen (the default library route): the toolkit's libraries on the loader path.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
START=$SECONDS
left() { echo $((TOTAL_S - (SECONDS - START))); }

# step NAME LIMIT_S COMMAND...: runs with a hard limit, log in results/gpu/NAME.log.
step() {
  local name=$1 limit=$2
  shift 2
  if [ "$limit" -lt 5 ]; then
    echo "== $name: skipped (time budget spent)"
    return 124
  fi
  echo "== $name (limit ${limit}s, $(($SECONDS - START))s elapsed)"
  timeout --kill-after=10 "$limit" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  echo "   $name: rc=$rc after $(($SECONDS - START))s (log: results/gpu/$name.log)"
  return $rc
}

# 1. device
step device 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv
cat "$LOGS/device.log" 2>/dev/null | sed 's/^/   /'
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$GPU_NAME" in
  *H200*) DEV=h200 ;;
  *H100*) DEV=h100-sxm ;;
  *A100*) DEV=a100-80gb ;;
  *L4*) DEV=l4 ;;
  *4090*) DEV=rtx4090 ;;
  *) DEV=h100-sxm ;;
esac
export FUSEPLAN_GPU_DEVICE=${FUSEPLAN_GPU_DEVICE:-$DEV}
RESULTS=$ROOT/results/gpu-$FUSEPLAN_GPU_DEVICE.md
echo "   GPU '${GPU_NAME:-none}' -> device config $FUSEPLAN_GPU_DEVICE, results $RESULTS"

# 2. build (Release, only what this run needs; no benchmarks)
step configure 90 cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DFUSEPLAN_BENCH=OFF || {
  echo "configure failed"; tail -20 "$LOGS/configure.log"; exit 1; }
step build $(( $(left) < 260 ? $(left) : 260 )) cmake --build "$BUILD" -j "$JOBS" --target test_exec test_emit test_gpu || {
  echo "build failed"; grep -m5 -E "error|Error" "$LOGS/build.log"; exit 1; }

# 3. CUDA tests. 3a: the ones that touch the GPU (runner, library route,
# cuDNN descriptors), first, so they always run; the example timings go to
# results/gpu/timings.md. 3b: the rest (NVRTC compilation of every group of
# every strategy's plan; also run on the development machines) under what is
# left of its limit.
GPU_TESTS='GpuRun.*:LibraryMode.*:CudnnDescriptors.*:Cublaslt.*'
FUSEPLAN_GPU_RESULTS="$LOGS/timings.md" step test_cuda_gpu $(( $(left) < 120 ? $(left) : 120 )) \
  bash -c "'$BUILD/tests/test_exec' --gtest_filter='$GPU_TESTS' --gtest_brief=1 --gtest_output=xml:'$LOGS/test_exec_gpu.xml' &&
           '$BUILD/tests/test_emit' --gtest_filter='$GPU_TESTS' --gtest_brief=1 --gtest_output=xml:'$LOGS/test_emit_gpu.xml'"
TEST_RC=$?
tail -3 "$LOGS/test_cuda_gpu.log" | sed 's/^/   /'
grep -E "^(library GEMM|cuDNN conv|emitted .* cuBLASLt)" "$LOGS/test_cuda_gpu.log" | sed 's/^/   /'
step test_cuda_rest $(( $(left) < 150 ? $(left) / 3 : 90 )) \
  "$BUILD/tests/test_emit" --gtest_filter="-$GPU_TESTS" --gtest_brief=1 --gtest_output=xml:"$LOGS/test_cuda_rest.xml"
REST_RC=$?
tail -3 "$LOGS/test_cuda_rest.log" | sed 's/^/   /'

# 4. shared models per strategy at batch 1 and 64, copy bandwidth ceiling
BENCH_LIMIT=$(( $(left) - 5 ))
FUSEPLAN_GPU_RESULTS="$RESULTS" FUSEPLAN_GPU_BUDGET_S=$(( BENCH_LIMIT > 90 ? BENCH_LIMIT - 60 : BENCH_LIMIT / 2 )) \
  step test_gpu "$BENCH_LIMIT" "$BUILD/tests/test_gpu" --gtest_brief=1
BENCH_RC=$?

echo "== done in $((SECONDS - START))s: CUDA tests (GPU) rc=$TEST_RC, CUDA tests (rest) rc=$REST_RC, test_gpu rc=$BENCH_RC"
[ -f "$RESULTS" ] && sed -n '/^## Bandwidth ceiling/,/^## Fused/p' "$RESULTS" | head -12
ls -1 "$RESULTS" "$LOGS" 2>/dev/null
