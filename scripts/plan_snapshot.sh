#!/usr/bin/env bash
# Writes the plan JSON of every strategy on every configured device for the
# shared models (../shared/models/onnx), the examples and the shared cases
# into OUT/<device>/<strategy>/<model>.json, for a byte-for-byte comparison
# of two builds (a refactoring must leave every plan unchanged; the search's
# wall time, totals.search_ms, is dropped):
#   bash scripts/plan_snapshot.sh build/cli/fuseplan /tmp/plans-after
#   diff -r /tmp/plans-before /tmp/plans-after
# Env: BATCH (default 1), JOBS (parallel searches, default nproc),
# DEVICES / STRATEGIES (space-separated subsets), MODELS (a grep -E pattern
# on the file names: only those). A search that fails writes
# OUT/.../<model>.err with its message instead (compared the same way).
# The shared cases bind their dims from ../shared/cases/expected.json.
set -euo pipefail
bin=$(realpath "$1"); out=$2
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${FUSEPLAN_SHARED:-$here/../shared}
batch=${BATCH:-1}
devices=${DEVICES:-$(ls "$here/configs/devices" | sed 's/\.json$//' | tr '\n' ' ')}
strategies=${STRATEGIES:-"unfused elementwise tvm xla inductor optimal cost"}
# dims each shared model needs beyond --batch (tests/shared_models.h)
dims() {
  case "$1" in
    *roberta*) echo "--dim seq_len=128" ;;
    *t5-encoder*|*distilbert*) echo "--dim sequence=128" ;;
    *gpt2-*) echo "--dim input1_dynamic_axes_2=1 --dim input1_dynamic_axes_3=128" ;;
    *fcn-resnet*) echo "--dim height=224 --dim width=224" ;;
    *tiny-yolov3*) echo "--dim input_1:2=416 --dim input_1:3=416" ;;
    *gpt2_tiny*) echo "--dim seq_len=16 --dim past_seq_len=16 --dim total_seq_len=32" ;;
    *attention_head*) echo "--dim sequence_len=100 --dim batch=100" ;;
    *gpt2_block*|*bert_base_layer*) echo "--dim S=128" ;;
    *) [ -f "$shared/cases/$1.onnxtxt" ] && python3 -c '
import json, sys
for c in json.load(open(sys.argv[1]))["cases"]:
    if c["file"] == sys.argv[2] + ".onnxtxt":
        print(" ".join("--dim %s=%s" % kv for kv in c.get("dims", {}).items()))
        break' "$shared/cases/expected.json" "$1" ;;
  esac
}
models=$(ls "$shared"/models/onnx/*.onnx "$here"/examples/*.onnxtxt "$shared"/cases/*.onnxtxt 2>/dev/null |
         grep -E "${MODELS:-.}")
jobs_file=$(mktemp)
for d in $devices; do for s in $strategies; do
  mkdir -p "$out/$d/$s"
  for m in $models; do
    stem=$(basename "$m"); stem=${stem%.*}
    echo "$d $s $m $stem $(dims "$stem")" >> "$jobs_file"
  done
done; done
run_one() {
  read -r d s m stem rest <<< "$1"
  # shellcheck disable=SC2086
  if ! "$bin" search "$m" --device "$d" --strategy "$s" --batch "$batch" $rest --time-limit 600 \
       -o "$out/$d/$s/$stem.json" > /dev/null 2> "$out/$d/$s/$stem.err.tmp"; then
    mv "$out/$d/$s/$stem.err.tmp" "$out/$d/$s/$stem.err"
  else
    rm -f "$out/$d/$s/$stem.err.tmp"
  fi
}
export -f run_one; export bin out batch
xargs -P "${JOBS:-$(nproc)}" -I{} bash -c 'run_one "$@"' _ {} < "$jobs_file"
rm -f "$jobs_file"
# The search's own wall time (totals.search_ms) differs run to run: drop it.
python3 - "$out" <<'PY'
import pathlib, re, sys
for f in pathlib.Path(sys.argv[1]).rglob("*.json"):
    t = f.read_text()
    u = re.sub(r',\n\s*"search_ms": [-+0-9.eE]+\n', "\n", t)
    if u != t:
        f.write_text(u)
PY
echo "$(find "$out" -name '*.json' | wc -l) plans, $(find "$out" -name '*.err' | wc -l) refusals in $out"
