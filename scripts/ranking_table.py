#!/usr/bin/env python3
"""Markdown tables from scripts/ranking.sh's JSON (one `fuseplan compare
--rounds --json` per model): per model and batch, the rank correlation of
predicted against measured whole-plan time, and whether `cost` measured
best, tied with the best (interquartile ranges overlap) or behind; then
every plan's predicted and measured time.
Usage: ranking_table.py OUT_DIR [THREADS]"""
import glob
import json
import math
import os
import sys


def main():
    out = sys.argv[1]
    threads = sys.argv[2] if len(sys.argv) > 2 else "?"
    runs = []
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        if path.endswith("thread.json"):
            continue  # the probed device file
        with open(path) as f:
            j = json.load(f)
        runs.append((os.path.basename(path)[:-5].split("@")[0], j))
    if not runs:
        sys.exit(f"ranking_table.py: no compare JSON in {out}")
    rows = [(name, r) for name, j in runs for r in j.get("rankings", [])]
    n = len(rows)
    rho_ok = sum(1 for _, r in rows if r["spearman"] is not None and r["spearman"] >= 0.9)
    rho_rows = sum(1 for _, r in rows if r["spearman"] is not None)
    best_ok = sum(1 for _, r in rows if r["cost_verdict"] in ("best", "tied"))
    worst = max((r["cost_behind_pct"] for _, r in rows), default=0)
    print(f"Threads: {threads}; plans priced on the device named {runs[0][1]['device']} (probed on this machine).\n")
    print(f"- Spearman ≥ 0.9 on {rho_ok} of {rho_rows} rows with ≥ 3 distinct plans"
          f" ({100 * rho_ok / max(rho_rows, 1):.0f}%; target ≥ 90%).")
    print(f"- `cost` measured best or tied-best on {best_ok} of {n} rows"
          f" ({100 * best_ok / max(n, 1):.0f}%; target ≥ 90%); at most {worst:.1f}% behind the best (target ≤ 5%).\n")
    print("| model | batch | distinct plans | Spearman | predicted best | measured best | cost | cost behind best | load |")
    print("|---|---:|---:|---:|---|---|---|---:|---|")
    for name, r in rows:
        rho = "–" if r["spearman"] is None else f"{r['spearman']:.2f}"
        print(f"| {name} | {r['batch']} | {len(r['plans'])} | {rho} | {r['predicted_best']} | {r['measured_best']} "
              f"| {r['cost_verdict'] or '–'} | {r['cost_behind_pct']:.1f}% | {r['load_before']:.2f} → {r['load_after']:.2f} |")
    print("\n### Every plan: predicted and measured whole-plan time (ms; measured: median of the rounds, IQR)\n")
    print("| model | batch | strategy | kernels | predicted | measured | IQR |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for name, j in runs:
        for r in j["rows"]:
            if "measured_us" not in r:
                continue
            print(f"| {name} | {r['batch']} | {r['strategy']} | {r['kernels']} | {r['predicted_us'] / 1e3:.3f} "
                  f"| {r['measured_us'] / 1e3:.3f} | {r.get('measured_iqr_us', math.nan) / 1e3:.3f} |")


if __name__ == "__main__":
    main()
