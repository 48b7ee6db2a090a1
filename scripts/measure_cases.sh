#!/usr/bin/env bash
# Measures the held-out cases of docs/calibration.md (results/README.md): the
# shared cases (../shared/cases/*.onnxtxt) with N = 1, C = S = D = SIZE
# (default 256), V = 1024, B = 8 (each case gets the dims it has), unfused,
# cost and xla plans on host-cpu-reference, measured as scripts/measure_calibration.sh
# measures the calibration models.
# Records: results/calibration/cases/run1..run5 (SIZE 256) and
# results/calibration/cases-SIZE/run1..run5 for SIZE 64, 128, 512, 1024,
# 2048, 4096 (five runs back to back each).
# Usage: scripts/measure_cases.sh FUSEPLAN OUTDIR [SIZE]
set -euo pipefail
# DEVICE: the device that prices the searched plans and the records
# (default host-cpu-reference, the figure the committed records were priced
# with); a probed one-thread prior of this host to measure another machine.
device=${DEVICE:-host-cpu-reference}
fuseplan=${1:?usage: $0 FUSEPLAN OUTDIR}
out=${2:?usage: $0 FUSEPLAN OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
size=${3:-256}
declare -A value=([N]=1 [C]=$size [S]=$size [V]=1024 [D]=$size [B]=8)
mkdir -p "$out"
for m in "$here"/../shared/cases/*.onnxtxt; do
  name=$(basename "${m%.*}")
  dims=()
  # The symbolic dims of the case: the names inside its shapes.
  for d in $(grep -o '\[[^]]*\]' "$m" | tr -c 'A-Za-z0-9_\n' ' ' | tr ' ' '\n' | grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | sort -u); do
    [[ -n ${value[$d]:-} ]] && dims+=(--dim "$d=${value[$d]}")
  done
  echo "$(date -u +%H:%M:%S) $name ${dims[*]} (load $(cut -d' ' -f1-3 /proc/loadavg))"
  OMP_NUM_THREADS=1 nice -n 5 "$fuseplan" measure "$m" --device "$device" "${dims[@]}" \
    --strategies unfused,cost,xla --repeat 21 --min-time 1 --warmup 2 -o "$out/$name.jsonl" > "$out/$name.log" 2>&1 ||
    echo "  skipped: $(tail -1 "$out/$name.log")"  # e.g. an op the CPU backend cannot run
done
echo "$(date -u +%H:%M:%S) done (load $(cut -d' ' -f1-3 /proc/loadavg))"
