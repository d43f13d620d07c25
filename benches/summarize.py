#!/usr/bin/env python3
"""Prints criterion results of the `cpu` bench as a Markdown table: median throughput
(M keys/s) with the range of the median's confidence interval, and ratios.

Usage: python3 benches/summarize.py [CRITERION_DIR]   (default: $CARGO_TARGET_DIR/criterion)
"""
import json, os, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.environ.get("CARGO_TARGET_DIR", "target"), "criterion")
BATCH_DEFAULT = 1 << 18
rows = {}
for d, _, files in os.walk(root):
    if "benchmark.json" in files and d.endswith("new"):
        b = json.load(open(os.path.join(d, "benchmark.json")))
        e = json.load(open(os.path.join(d, "estimates.json")))
        n = (b.get("throughput") or {}).get("Elements", BATCH_DEFAULT)
        med = e["median"]
        ci = med["confidence_interval"]
        mk = lambda ns: n / ns * 1e3  # ns per iteration -> M elements/s
        fid = b["function_id"] + ("/" + b["value_str"] if b.get("value_str") else "")
        rows[(b["group_id"], fid)] = (mk(med["point_estimate"]), mk(ci["upper_bound"]), mk(ci["lower_bound"]))

def get(g, f):
    return rows.get((g, f), (None,))[0]

groups = sorted({g for g, _ in rows}, key=lambda g: (g.split("/")[0], g))
for g in groups:
    print(f"\n#### {g}\n")
    print("| benchmark | M keys/s (median) | range | vs sbbf-rs-safe/1t | vs speed-of-light/1t |")
    print("|---|---:|---:|---:|---:|")
    for (gg, f), (m, lo, hi) in sorted(rows.items()):
        if gg != g:
            continue
        kind = f.split("/")[-1] if g.startswith("lookup") else ""
        suffix = "/" + kind if kind in ("present", "absent") else ""
        s = get(g, "sbbf-rs-safe/1t" + suffix)
        sol = get(g, "speed-of-light/1t" + suffix)
        rs = f"{m / s:.2f}×" if s else ""
        rl = f"{m / sol:.2f}" if sol and g.startswith("lookup") else ""
        print(f"| {f} | {m:.1f} | {lo:.1f}–{hi:.1f} | {rs} | {rl} |")
