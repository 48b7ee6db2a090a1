#!/usr/bin/env bash
# Whole plans ranked as they run (issue 32 item 6): `fuseplan compare
# --rounds` on each model at the given batch sizes, every strategy's plan
# predicted and measured in interleaved rounds, one JSON per model; then
# scripts/ranking_table.py writes the markdown table.
#   scripts/ranking.sh [OUT_DIR] [SECONDS_PER_MODEL] [BATCHES]
# Env: FUSEPLAN (binary, default build/cli/fuseplan); THREADS (default 1:
# the kernels on one pinned core, priced on a device probed with --threads 1
# into OUT_DIR; 0 = every core, priced on the cached host device host-cpu);
# ROUNDS (interleaved rounds, default 5); REPEAT (repetitions per run,
# default 3); TIME_LIMIT (seconds for the exact strategy, default 10);
# MODELS (example or shared-model names, default below);
# REPORT_ONLY=1 (only rebuild the table from OUT_DIR).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/model_dims.sh
out=${1:-ranking-work}
limit=${2:-1200}
batches=${3:-1,8}
fuseplan=${FUSEPLAN:-build/cli/fuseplan}
threads=${THREADS:-1}
models=${MODELS:-"resnet50_bottleneck mobilenetv2_inverted_residual bert_base_layer gpt2_block vit_block
  trt_residual_block light_squeezenet zoo_shufflenet-v2-12 zoo_mobilenetv2-12 zoo_efficientnet-lite4-11
  light_inception_v2 zoo_resnet50-v1-12 distilbert_tiny_optimum zoo_bertsquad-12 zoo_gpt2-10"}
mkdir -p "$out"

pin=()
device=host-cpu
if [ "$threads" != 0 ]; then
  # Online CPUs, not nproc: GNU nproc honours OMP_NUM_THREADS.
  last=$(( $(getconf _NPROCESSORS_ONLN) - 1 ))
  export OMP_NUM_THREADS=$threads
  pin=(taskset -c "$(( last - threads + 1 ))-$last")
  device=$out/host-${threads}thread.json
  if [ -z "${REPORT_ONLY:-}" ] && [ ! -f "$device" ]; then
    "${pin[@]}" "$fuseplan" probe --threads "$threads" -o "$device" || exit 1
  fi
fi

if [ -z "${REPORT_ONLY:-}" ]; then
  for m in $models; do
    f=examples/$m.onnxtxt
    [ -f "$f" ] || f=../shared/models/onnx/$m.onnx
    [ -f "$f" ] || { echo "skip $m: no such model" >&2; continue; }
    echo "$(date +%T) $m" >&2
    # shellcheck disable=SC2046
    run="$out/$m@b${batches//,/-}"
    timeout -s INT -k 30 "$limit" "${pin[@]}" "$fuseplan" compare "$f" --device "$device" --batch "$batches" \
      --strategies all $(model_dims "$m") --rounds "${ROUNDS:-5}" --repeat "${REPEAT:-3}" \
      --time-limit "${TIME_LIMIT:-10}" --chart "$run.svg" --json > "$run.json.part" 2> "$run.log" &&
      mv "$run.json.part" "$run.json" || { rm -f "$run.json.part"; echo "$m: failed, see $run.log" >&2; }
  done
fi
python3 scripts/ranking_table.py "$out" "$threads"
