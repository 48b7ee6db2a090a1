#!/usr/bin/env bash
# A fuzz campaign: runs each file-reader target for SECONDS from an already
# built fuzz build (the clang build .ci/run makes: build-asan), JOBS targets at
# a time, growing the kept corpus fuzz/corpus/<target>/ (inputs of at most
# 4 KiB, minimised with -merge=1 at the end), and fails (exit 1) on any
# finding, which is copied to fuzz/findings/.
# Usage: fuzz/campaign.sh BUILD_DIR SECONDS [JOBS]
# The seeds are the kept corpus plus what fuzz/smoke.sh seeds from (shared
# models and cases, examples, fuzz/seeds/); only inputs the fuzzer wrote are
# kept, never the seeds themselves.
set -euo pipefail
if [ $# -lt 2 ]; then echo "usage: fuzz/campaign.sh BUILD_DIR SECONDS [JOBS]" >&2; exit 2; fi
build=$1 secs=$2 jobs=${3:-1}
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${FUSEPLAN_SHARED_DIR:-$here/../shared}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seeds() {  # target -> seed folder
  local d=$work/seeds-$1
  mkdir -p "$d"
  case $1 in
    import_binary) cp "$shared"/models/onnx/*.onnx "$d/" 2>/dev/null || true ;;
    import_text) cp "$shared"/cases/*.onnxtxt "$here"/examples/*.onnxtxt "$d/" 2>/dev/null || true ;;
    plan_load) cp "$here"/fuzz/seeds/plan/* "$d/" 2>/dev/null || true ;;
    device_load) cp "$here"/configs/devices/*.json "$here"/fuzz/seeds/device/* "$d/" 2>/dev/null || true ;;
    measurement_read) cp "$here"/fuzz/seeds/measurement/* "$d/" 2>/dev/null || true ;;
    npy_read) cp "$here"/fuzz/seeds/npy/* "$d/" 2>/dev/null || true ;;
  esac
  echo "$d"
}
run_one() {
  local t=$1 exe corpus new
  exe=$(find "$build" -type f -name "fuzz_$t" -perm -u+x | head -1)
  if [ -z "$exe" ]; then echo "fuzz_$t not found under $build" >&2; return 2; fi
  corpus=$here/fuzz/corpus/$t new=$work/new-$t
  mkdir -p "$corpus" "$new" "$work/artifacts-$t"
  local s
  s=$(seeds "$t")
  if "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=4096 \
       -artifact_prefix="$work/artifacts-$t/" "$new" "$corpus" "$s" > "$work/$t.log" 2>&1; then
    # Keep what the fuzzer found, minimised against the kept corpus.
    "$exe" -merge=1 -max_len=4096 "$corpus" "$new" > "$work/$t.merge.log" 2>&1
    echo "== fuzz_$t: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$work/$t.log" | tail -1); 0 findings;" \
         "corpus $(ls "$corpus" | wc -l) inputs"
  else
    echo "== fuzz_$t: FINDING"; tail -40 "$work/$t.log"
    mkdir -p "$here/fuzz/findings" && cp "$work/artifacts-$t"/* "$here/fuzz/findings/" 2>/dev/null || true
    return 1
  fi
}
status=0
pids=()
for t in import_binary import_text plan_load device_load measurement_read npy_read; do
  run_one "$t" > "$work/out-$t" 2>&1 &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
cat "$work"/out-*
exit $status
