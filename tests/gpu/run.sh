#!/usr/bin/env bash
# One prepared GPU session for the CUDA backend (issue 7). NOT RUN YET: the
# session that wrote it had no GPU. Run from the repository root on a machine
# with an NVIDIA GPU and the CUDA 13 toolkit, in a single call:
#   bash results/gpu/run_gpu_checks.sh
# It builds test_cuda and fuseplan, runs every CUDA test (GPU tests included:
# fused vs unfused bit-identity, max relative error vs the CPU reference),
# times the unfused and cost plans of every example at batch 1 and 64, and
# writes the NVRTC resource tables of the shared models; results land in
# results/gpu/*.md. Budget: ~6 min build + ~3 min tests on 16 cores.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-gpu}
OUT=$ROOT/results/gpu
export FUSEPLAN_CACHE_DIR=${FUSEPLAN_CACHE_DIR:-$BUILD/nvrtc-cache}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/device.txt" 2>&1 || true
cmake -S "$ROOT" -B "$BUILD" -DFUSEPLAN_BENCH=OFF -DCMAKE_BUILD_TYPE=Release > "$OUT/cmake.log" 2>&1
make -C "$BUILD" -j"$(nproc)" test_cuda fuseplan > "$OUT/build.log" 2>&1
FUSEPLAN_GPU_RESULTS="$OUT/timings.md" timeout 420 "$BUILD/tests/test_cuda" --gtest_brief=1 \
  > "$OUT/test_cuda.log" 2>&1 || echo "test_cuda failed: see $OUT/test_cuda.log"
{
  echo "# NVRTC registers/spills vs estimate (h200, cost plans)"
  for m in "$ROOT"/examples/*.onnxtxt "$ROOT"/../shared/models/onnx/*.onnx; do
    name=$(basename "$m")
    echo; echo "## $name"; echo
    timeout 120 "$BUILD/cli/fuseplan" search "$m" --batch 1 --dim S=128 --device h200 \
      -o "$BUILD/plan-$name.json" --measure-registers > /dev/null 2>&1 \
      && tail -n +3 "$BUILD/plan-$name.resources.md" || echo "(failed)"
  done
} > "$OUT/resources.md"
tail -3 "$OUT/test_cuda.log"; ls "$OUT"
