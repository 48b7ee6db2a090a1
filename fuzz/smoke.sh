#!/usr/bin/env bash
# Runs each file-reader fuzz target for SECONDS from an already configured and
# built fuzz build dir (cmake -DFUSEPLAN_FUZZ=ON with clang; this script builds
# nothing). Seeds are copied from ../shared models and cases, fuzz/seeds/ and
# the corpus fuzz/campaign.sh kept (fuzz/corpus/) into a temp dir.
# Fails (exit 1) on any crash, leak, sanitizer report or timeout finding.
set -euo pipefail
if [ $# -ne 2 ]; then echo "usage: fuzz/smoke.sh BUILD_DIR SECONDS" >&2; exit 2; fi
build=$1 secs=$2
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${FUSEPLAN_SHARED_DIR:-$here/../shared}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/txt" "$work/artifacts"
cp "$shared"/models/onnx/*.onnx "$work/bin/" 2>/dev/null || true
cp "$shared"/cases/*.onnxtxt "$work/txt/" 2>/dev/null || true
cp "$here"/examples/*.onnxtxt "$work/txt/" 2>/dev/null || true
mkdir -p "$work/plan" "$work/device" "$work/measurement" "$work/npy"
cp "$here"/fuzz/seeds/plan/* "$work/plan/" 2>/dev/null || true
cp "$here"/configs/devices/*.json "$here"/fuzz/seeds/device/* "$work/device/" 2>/dev/null || true
cp "$here"/fuzz/seeds/measurement/* "$work/measurement/" 2>/dev/null || true
cp "$here"/fuzz/seeds/npy/* "$work/npy/" 2>/dev/null || true
# The corpus a campaign kept (fuzz/campaign.sh) seeds each target too.
for t in import_binary:bin import_text:txt plan_load:plan device_load:device measurement_read:measurement npy_read:npy; do
  cp "$here/fuzz/corpus/${t%%:*}"/* "$work/${t##*:}/" 2>/dev/null || true
done
status=0
for t in import_binary import_text plan_load device_load measurement_read npy_read; do
  exe=$(find "$build" -type f -name "fuzz_$t" -perm -u+x | head -1)
  if [ -z "$exe" ]; then echo "fuzz_$t not found under $build" >&2; exit 2; fi
  case $t in
    import_binary) corpus=$work/bin ;;
    import_text) corpus=$work/txt ;;
    plan_load) corpus=$work/plan ;;
    device_load) corpus=$work/device ;;
    measurement_read) corpus=$work/measurement ;;
    npy_read) corpus=$work/npy ;;
  esac
  echo "== fuzz_$t for ${secs}s"
  if ! "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -max_len=2000000 \
       -artifact_prefix="$work/artifacts/" "$corpus" > "$work/$t.log" 2>&1; then
    tail -40 "$work/$t.log"; status=1
    mkdir -p "$here/fuzz/findings" && cp "$work"/artifacts/* "$here/fuzz/findings/" 2>/dev/null || true
  else
    tail -2 "$work/$t.log"
  fi
done
exit $status
