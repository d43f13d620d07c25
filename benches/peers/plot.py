#!/usr/bin/env python3
"""Draws the CSV of benches/peers/run.py as an SVG (no dependencies) and prints its tables.

  benches/peers/plot.py RESULTS.csv [--svg OUT.svg] [--title TEXT] [--table]

The plot: throughput (million keys per second, log scale) against filter size (log scale), one
line per implementation, one panel per operation (build = inserts, lookup) and thread count; a
point is the median over the rounds of each run's median, the bar its range over the rounds.
--table prints the same figures as Markdown (median and range), the measured false-positive
rates and bits per key, and each bloomlanes row's ratio to the best peer row per size
(partitioned-filters on the CPU, cuCollections on the GPU). Rows with `threads` 0 are GPU runs
with the keys on the device (gpu_csv.py writes them from a GPU round).
"""
import argparse
import csv
import math
import statistics
import sys
from collections import defaultdict

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


def label(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift} {unit}"
    return f"{b} B"


def load(path):
    """{(op, threads): {impl: {bytes: [per-round medians]}}}, impl order, and the raw rows."""
    series = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    order, rows = [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            rows.append(row)
            if row["op"] not in ("build", "lookup"):
                continue
            impl = row["impl"]
            if impl not in order:
                order.append(impl)
            key = (row["op"], int(row["threads"]))
            series[key][impl][int(row["requested_bytes"])].append(float(row["mkeys_s_median"]))
    return series, order, rows


def who(threads):
    """A panel's or table's runner: `threads` CPU threads, or 0 for the GPU (keys on the device)."""
    return "GPU, keys on the device" if threads == 0 else f"{threads} thread{'s' if threads > 1 else ''}"


# The peers a bloomlanes row is compared with, by name prefix.
PEERS = ("pf-", "cuco-")


def med(v):
    return statistics.median(v)


def svg(series, order, title):
    panels = sorted(series, key=lambda k: (k[1], k[0]))
    pw, ph, ml, mt, mb, gap = 420, 300, 60, 50, 50, 30
    cols = len({t for _, t in panels})
    nrows = math.ceil(len(panels) / cols)
    legend_h = 22 * math.ceil(len(order) / 3) + 10
    width = ml + cols * (pw + gap)
    height = mt + nrows * (ph + mb + gap) + legend_h
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>']
    color = {impl: COLORS[i % len(COLORS)] for i, impl in enumerate(order)}
    for n, (op, threads) in enumerate(panels):
        x0 = ml + (n % cols) * (pw + gap)
        y0 = mt + (n // cols) * (ph + mb + gap)
        data = series[(op, threads)]
        sizes = sorted({b for s in data.values() for b in s})
        values = [v for s in data.values() for vs in s.values() for v in vs]
        lo = 10 ** math.floor(math.log10(min(values)))
        hi = 10 ** math.ceil(math.log10(max(values)))
        lx0, lx1 = math.log2(sizes[0]), math.log2(sizes[-1])
        sx = lambda b: x0 + (math.log2(b) - lx0) / max(lx1 - lx0, 1) * pw
        sy = lambda v: y0 + ph - (math.log10(v) - math.log10(lo)) / math.log10(hi / lo) * ph
        what = "inserts (build)" if op == "build" else "lookups (half present)"
        out.append(f'<text x="{x0 + pw / 2}" y="{y0 - 8}" text-anchor="middle" font-size="13">'
                   f'{what}, {who(threads)}</text>')
        out.append(f'<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>')
        decade = lo
        while decade <= hi * 1.0001:
            for m in (1, 2, 5):
                v = decade * m
                if lo <= v <= hi:
                    y = sy(v)
                    out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + pw}" y2="{y:.1f}" '
                               f'stroke="#ddd"/>')
                    out.append(f'<text x="{x0 - 5}" y="{y + 4:.1f}" text-anchor="end">{v:g}</text>')
            decade *= 10
        for b in sizes:
            x = sx(b)
            out.append(f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y0 + ph}" stroke="#eee"/>')
            out.append(f'<text x="{x:.1f}" y="{y0 + ph + 16}" text-anchor="middle">{label(b)}</text>')
        out.append(f'<text x="{x0 + pw / 2}" y="{y0 + ph + 34}" text-anchor="middle">filter size</text>')
        out.append(f'<text x="{x0 - 45}" y="{y0 + ph / 2}" text-anchor="middle" '
                   f'transform="rotate(-90 {x0 - 45} {y0 + ph / 2})">M keys/s</text>')
        for impl in order:
            if impl not in data:
                continue
            pts = sorted(data[impl].items())
            path = " ".join(f"{sx(b):.1f},{sy(med(v)):.1f}" for b, v in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color[impl]}" '
                       f'stroke-width="2"/>')
            for b, v in pts:
                x = sx(b)
                out.append(f'<line x1="{x:.1f}" y1="{sy(min(v)):.1f}" x2="{x:.1f}" '
                           f'y2="{sy(max(v)):.1f}" stroke="{color[impl]}"/>')
                out.append(f'<circle cx="{x:.1f}" cy="{sy(med(v)):.1f}" r="3" '
                           f'fill="{color[impl]}"/>')
    ly = mt + nrows * (ph + mb + gap)
    for i, impl in enumerate(order):
        x = ml + (i % 3) * 300
        y = ly + 22 * (i // 3)
        out.append(f'<line x1="{x}" y1="{y}" x2="{x + 24}" y2="{y}" stroke="{color[impl]}" '
                   f'stroke-width="3"/>')
        out.append(f'<text x="{x + 30}" y="{y + 4}">{impl}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def tables(series, order, rows):
    for (op, threads) in sorted(series, key=lambda k: (k[0], k[1])):
        data = series[(op, threads)]
        impls = [i for i in order if i in data]
        sizes = sorted({b for s in data.values() for b in s})
        print(f"\n{op}, {who(threads)}: M keys/s, median of the rounds [min–max]\n")
        print("| size | " + " | ".join(impls) + " |")
        print("|---|" + "---:|" * len(impls))
        for b in sizes:
            cells = []
            for i in impls:
                v = data[i].get(b)
                cells.append(f"{med(v):.1f} [{min(v):.1f}–{max(v):.1f}]" if v else "–")
            print(f"| {label(b)} | " + " | ".join(cells) + " |")
        peers = [i for i in impls if i.startswith(PEERS)]
        for ours in (i for i in impls if i.startswith("bloomlanes") and peers):
            ratios = []
            for b in sizes:
                rows_b = [(med(data[i][b]), i) for i in peers if b in data[i]]
                if b in data[ours] and rows_b:
                    best = max(rows_b)
                    ratios.append(f"{label(b)} {med(data[ours][b]) / best[0]:.2f}× ({best[1]})")
            print(f"\n{ours} / best peer row: " + "; ".join(ratios))
    print("\nmeasured false-positive rate (median over rounds and thread counts) and bits per key\n")
    fpr = defaultdict(lambda: defaultdict(list))
    bpk = {}
    for r in rows:
        if r["op"] == "lookup" and r["fpr_measured"]:
            fpr[r["impl"]][int(r["requested_bytes"])].append(float(r["fpr_measured"]))
            bpk.setdefault(r["impl"], set()).add(float(r["bits_per_key"]))
    sizes = sorted({b for s in fpr.values() for b in s})
    print("| implementation | bits/key | " + " | ".join(label(b) for b in sizes) + " |")
    print("|---|---:|" + "---:|" * len(sizes))
    for impl in (i for i in order if i in bpk):
        b = bpk[impl]
        print(f"| {impl} | {min(b):.2f}{'' if len(b) == 1 else f'–{max(b):.2f}'} | "
              + " | ".join(f"{100 * med(fpr[impl][b]):.3f} %" if b in fpr[impl] else "–"
                           for b in sizes) + " |")
    spatial = [r for r in rows if r["op"].startswith("spatial_")]
    if spatial:
        print("\nspatial (one thread): M keys/s, median of the rounds [min–max]\n")
        print("| implementation | op | bytes | keys | rate | FPR (any class) | notes |")
        print("|---|---|---:|---:|---:|---:|---|")
        by = defaultdict(list)
        for r in spatial:
            by[(r["impl"], r["op"])].append(r)
        for (impl, op), rs in by.items():
            v = [float(r["mkeys_s_median"]) for r in rs]
            r = rs[0]
            print(f"| {r['implementation']} | {op} | {r['filter_bytes']} | {r['keys']} | "
                  f"{med(v):.2f} [{min(v):.2f}–{max(v):.2f}] | "
                  f"{100 * float(r['fpr_measured']):.3f} % | {r['notes']} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv")
    p.add_argument("--svg")
    p.add_argument("--title", default="CPU: bloomlanes and its peers at equal false-positive rate")
    p.add_argument("--table", action="store_true")
    a = p.parse_args()
    series, order, rows = load(a.csv)
    if not series:
        sys.exit(f"plot.py: {a.csv} has no build or lookup rows")
    if a.svg:
        with open(a.svg, "w") as f:
            f.write(svg(series, order, a.title))
    if a.table:
        tables(series, order, rows)


if __name__ == "__main__":
    main()
