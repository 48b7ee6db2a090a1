#!/usr/bin/env bash
# Measures the calibration records of results/calibration/ (docs/calibration.md):
# the 12 models' unfused, cost and xla plans on host-cpu-reference (the fixed figure the
# committed records were priced with, docs/devices.md) at batch 1, each
# group the minimum/median of at least 21 repetitions on one thread, repeated
# until a plan's repetitions have taken 1 s (--min-time: docs/calibration.md).
# Usage: scripts/measure_calibration.sh FUSEPLAN OUTDIR
set -euo pipefail
# DEVICE: the device that prices the searched plans and the records
# (default host-cpu-reference, the figure the committed records were priced
# with); a probed one-thread prior of this host to measure another machine.
device=${DEVICE:-host-cpu-reference}
fuseplan=${1:?usage: $0 FUSEPLAN OUTDIR}
out=${2:?usage: $0 FUSEPLAN OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
models="$here/../shared/models/onnx"
mkdir -p "$out"
for m in "$here"/examples/{bert_base_layer,gpt2_block,mobilenetv2_inverted_residual,resnet50_bottleneck,vit_block}.onnxtxt \
         "$models"/{distilbert_tiny_optimum,light_shufflenet,light_squeezenet,light_vgg19,mnist_wonnx,trt_residual_block,zoo_candy-9}.onnx; do
  name=$(basename "${m%.*}")
  # Sequence length 128 where the model has one (a --dim the model lacks is refused).
  case $name in
    bert_base_layer | gpt2_block) dims=(--dim S=128) ;;
    distilbert_tiny_optimum) dims=(--dim sequence=128) ;;
    *) dims=() ;;
  esac
  echo "$(date -u +%H:%M:%S) $name (load $(cut -d' ' -f1-3 /proc/loadavg))"
  OMP_NUM_THREADS=1 nice -n 5 "$fuseplan" measure "$m" --device "$device" --batch 1 "${dims[@]}" \
    --strategies unfused,cost,xla --repeat 21 --min-time 1 --warmup 2 -o "$out/$name.jsonl" > "$out/$name.log" 2>&1
done
echo "$(date -u +%H:%M:%S) done (load $(cut -d' ' -f1-3 /proc/loadavg))"
