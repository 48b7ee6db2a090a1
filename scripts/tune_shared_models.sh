#!/usr/bin/env bash
# Runs `fuseplan tune --measure` on every shared model (../shared/models/onnx)
# at the given batch sizes, smallest models first, one process per model with
# a time limit (SIGINT: tune keeps the batch sizes already finished), and
# prints one markdown row per model and batch size.
#   scripts/tune_shared_models.sh [OUT_DIR] [SECONDS_PER_MODEL] [BATCHES]
# Env: FUSEPLAN (binary, default build/cli/fuseplan), DEVICE (host-cpu: this
# machine, probed and cached, docs/devices.md),
# TUNE_ARGS (extra tune options, default "--repeat 3 --rounds 2 --peer-time-limit 5"),
# MODELS (names without .onnx, default: all, smallest first), REPORT_ONLY=1
# (rebuild the table from OUT_DIR without running).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-tune-shared}
limit=${2:-600}
batches=${3:-1,8,64}
fuseplan=${FUSEPLAN:-build/cli/fuseplan}
device=${DEVICE:-host-cpu}
read -r -a extra <<< "${TUNE_ARGS:---repeat 3 --rounds 2 --peer-time-limit 5}"
models=../shared/models/onnx
mkdir -p "$out"

. scripts/model_dims.sh

# Roughly by work at batch 1, smallest first, so a time limit cuts the big ones.
order="mnist_wonnx trt_residual_block trt_attention_head gpt2_tiny_ortfused_genai distilbert_tiny_optimum
  light_squeezenet ultraface_version-RFB-320 light_shufflenet zoo_shufflenet-v2-12 zoo_mobilenetv2-12
  zoo_mobilenetv2-12-qdq zoo_efficientnet-lite4-11 zoo_candy-9 light_inception_v2 light_resnet50
  zoo_resnet50-v1-12 light_densenet121 zoo_tiny-yolov3-11 light_vgg19 zoo_t5-encoder-12 zoo_roberta-base-11
  zoo_bertsquad-12 zoo_gpt2-10 zoo_gpt2-lm-head-10 zoo_fcn-resnet50-11"
order=${MODELS:-$order}

echo "| model | batch | kernels | predicted_us | measured_us | rounds | wall s | status |"
echo "|---|---|---|---|---|---|---|---|"
for m in $order; do
  f=$models/$m.onnx
  [ -f "$f" ] || continue
  start=$(date +%s)
  rc=0
  if [ -z "${REPORT_ONLY:-}" ]; then
    # shellcheck disable=SC2046
    timeout -s INT -k 30 "$limit" "$fuseplan" tune "$f" --device "$device" --batch "$batches" --measure \
      $(model_dims "$m") "${extra[@]}" --no-svg -o "$out/$m" > "$out/$m.log" 2>&1
    rc=$?
  fi
  wall=$(( $(date +%s) - start ))
  case $rc in
    0) status=complete ;;
    130 | 124) status="time limit ${limit}s" ;;
    137) status="time limit ${limit}s (killed: did not stop within 30 s of SIGINT)" ;;
    *) status="failed: $(grep -m1 'fuseplan:' "$out/$m.log" | cut -c1-120)" ;;
  esac
  # One row per finished batch size, from summary.md (written after each).
  rows=$(awk '/^## batch /{b=$3} /^Tuned plan:/{k=$3; p=$0; sub(/.*predicted /,"",p); sub(/ .*/,"",p);
           me="-"; if ($0 ~ /measured [0-9]/) {me=$0; sub(/.*measured /,"",me); sub(/ .*/,"",me)}
           r=$0; sub(/.*µs; /,"",r); sub(/ round.*/,"",r); print b"|"k"|"p"|"me"|"r}' "$out/$m/summary.md" 2>/dev/null)
  have=$(grep -c . <<< "$rows")
  want=$(tr ',' '\n' <<< "$batches" | grep -c .)
  if [ -n "${REPORT_ONLY:-}" ]; then
    wall=-
    status="$have of $want batch sizes"
  fi
  if [ -z "$rows" ]; then
    echo "| $m | - | - | - | - | - | $wall | $status |"
  else
    while IFS='|' read -r b k p me r; do
      echo "| $m | $b | $k | $p | $me | $r | $wall | $status |"
    done <<< "$rows"
  fi
done
