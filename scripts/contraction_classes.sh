#!/bin/bash
# Interleaved rounds: contraction probe, then every model's unfused plan, one thread on core 0.
# results/contraction-classes.md. Usage (repository root, after cmake --build build):
#   scripts/contraction_classes.sh OUTDIR ROUNDS MODEL...
# then scripts/contraction_classes_table.py OUTDIR (the tables).
set -e
F=${FUSEPLAN:-build/cli/fuseplan}
out=$1; rounds=$2; shift 2
mkdir -p $out; : > $out/models.txt
for m in "$@"; do
  name=$(basename $(dirname $m))
  [[ $m == *.onnxtxt ]] && name=$(basename $m .onnxtxt)
  dims="--batch 1"
  [[ $name == bert_base_layer || $name == gpt2_block ]] && dims="$dims --dim S=128"
  echo "$name|$m|$dims" >> $out/models.txt
  $F search $m $dims --device host-cpu-1thread --strategy unfused -o $out/$name.plan.json > /dev/null
done
for r in $(seq 1 $rounds); do
  uptime >> $out/load.txt
  OMP_NUM_THREADS=1 taskset -c 0 $F probe --threads 1 -o $out/probe.r$r.json > $out/probe.r$r.log 2>&1
  while IFS='|' read name m dims; do
    OMP_NUM_THREADS=1 taskset -c 0 $F run $m $dims --plan $out/$name.plan.json --device host-cpu-1thread \
      --threads 1 --repeat 15 --json > $out/$name.r$r.json
  done < $out/models.txt
done
uptime >> $out/load.txt
