#!/usr/bin/env python3
"""Tables of results/contraction-classes.md from scripts/contraction_classes.sh OUTDIR:
the probe's class throughput (fastest and median run) and, per contraction group of
each model's unfused plan, predicted on host-cpu-1thread against the fastest and the
median round. Usage: scripts/contraction_classes_table.py OUTDIR (repository root)."""
import json, os, re, statistics, subprocess, sys

out = sys.argv[1]
fuseplan = os.environ.get("FUSEPLAN", "build/cli/fuseplan")
probes = [json.load(open(os.path.join(out, f))) for f in sorted(os.listdir(out)) if re.fullmatch(r"probe\.r\d+\.json", f)]
print("| class | fastest run | median run |\n|---|---:|---:|")
for c in probes[0]["contraction_GFLOPs"]:
    v = [p["contraction_GFLOPs"][c] for p in probes]
    print(f"| {c} | {max(v):.1f} | {statistics.median(v):.1f} |")
calls = [p["contraction_call_us"] for p in probes]
print(f"\ncontraction_call_us: least {min(calls):.2f}, median {statistics.median(calls):.2f}\n")
rows = []
for line in open(os.path.join(out, "models.txt")):
    name, model, dims = line.strip().split("|")
    plan_file = os.path.join(out, name + ".priced.plan.json")
    subprocess.run([fuseplan, "search", model, *dims.split(), "--device", "host-cpu-1thread", "--strategy", "unfused",
                    "-o", plan_file], check=True, stdout=subprocess.DEVNULL)
    plan = json.load(open(plan_file))
    runs = [json.load(open(os.path.join(out, f))) for f in sorted(os.listdir(out))
            if re.fullmatch(re.escape(name) + r"\.r\d+\.json", f)]
    for i, g in enumerate(plan["groups"]):
        if g["kind"] != "contraction":
            continue
        m = re.search(r"contraction \((\w+) (\d+) / ", g["cost"]["breakdown"])
        meas = [r["groups"][i]["measured_us"] for r in runs]
        rows.append((name, runs[0]["groups"][i]["label"], m.group(1), float(m.group(2)), g["cost"]["predicted_us"],
                     min(meas), statistics.median(meas), max(meas)))
print("| model | group | class | MFLOP | predicted µs | measured µs, fastest round | ratio "
      "| measured µs, median round (slowest) | ratio |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
fast = med = 0
for name, label, cls, flops, pred, lo, mid, hi in rows:
    ok_fast, ok_med = abs(pred - lo) <= 0.2 * lo, abs(pred - mid) <= 0.2 * mid
    fast, med = fast + ok_fast, med + ok_med
    print(f"| {name} | {label} | {cls} | {flops / 1e6:.1f} | {pred:.0f} | {lo:.0f} | {lo / pred:.2f}{'' if ok_fast else ' ✗'} "
          f"| {mid:.0f} ({hi:.0f}) | {mid / pred:.2f}{'' if ok_med else ' ✗'} |")
print(f"\nwithin 20% of measured: fastest round {fast} of {len(rows)}, median round {med} of {len(rows)}")
