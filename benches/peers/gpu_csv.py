#!/usr/bin/env python3
"""Turns a GPU round's outputs into the CSV that plot.py draws (one row per implementation,
operation and filter size; `threads` 0 marks device-resident keys on the GPU).

  benches/peers/gpu_csv.py --ours bench_insert.md --cuco cuco.csv [--cuco more.csv ...]
                           [--fpr cuco_fpr.csv ...] --out gpu.csv

--ours: the `insert` section of gpu_bench (`SECTIONS=insert`): per filter size, the insert
path `auto` picks and every path's rate, the lookup path `auto` picks. Its `auto` columns are
the bloomlanes rows; the best named path is kept in the notes.
--cuco: bench_cuco's CSV (policy, size_bytes, op, n_keys, ms_median, gkeys_per_s_median,
gkeys_per_s_best), any number of runs (sizes of later files replace earlier ones).
--fpr: bench_cuco's false-positive CSV, for the FPR column of the cuco rows (bloomlanes' 8x32
is the same layout as cuco's `arrow` policy, so it is left empty there).
"""
import argparse
import csv
import sys

from run import COLUMNS

UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def size_bytes(text):
    number, unit = text.split()
    return int(number) * UNITS[unit]


def table(lines, first_header):
    """The rows (dicts) of the Markdown table whose header starts with `first_header`."""
    for i, line in enumerate(lines):
        if line.startswith(first_header):
            head = [c.strip() for c in line.strip().strip("|").split("|")]
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(head, (c.strip() for c in row.strip().strip("|").split("|")))))
            return rows
    sys.exit(f"gpu_csv.py: no table starting {first_header!r}")


def row(impl, op, nbytes, keys, gkeys, notes, fpr=""):
    r = dict.fromkeys(COLUMNS, "")
    mkeys = f"{1000 * gkeys:.1f}"
    r.update(round=0, impl=impl, requested_bytes=nbytes, bits_per_key=f"{8 * nbytes / keys:.3f}",
             expected_keys=keys, clock="device", implementation=impl.split("-")[0], op=op,
             filter_bytes=nbytes, keys=keys, threads=0, mkeys_s_median=mkeys, mkeys_s_min=mkeys,
             mkeys_s_max=mkeys, fpr_measured=fpr, notes=notes)
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ours", required=True)
    p.add_argument("--cuco", action="append", default=[])
    p.add_argument("--fpr", action="append", default=[])
    p.add_argument("--keys", type=int, default=1 << 28)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    lines = open(a.ours).read().splitlines()
    out = []
    for r in table(lines, "| filter | layout | atomic"):
        nbytes = size_bytes(r["filter"])
        notes = f"{r['layout']} auto={r['auto picks']} best={r['best']}"
        out.append(row("bloomlanes", "build", nbytes, a.keys, float(r["auto"]), notes))
    for r in table(lines, "| filter | layout | direct"):
        nbytes = size_bytes(r["filter"])
        notes = f"{r['layout']} auto={r['auto picks']} (present keys)"
        out.append(row("bloomlanes", "lookup", nbytes, a.keys, float(r["auto"]), notes))
    fpr = {}
    for path in a.fpr:
        for r in csv.DictReader(open(path)):
            fpr[(r["policy"], int(r["size_bytes"]))] = r["fpr"]
    cuco = {}
    for path in a.cuco:
        for r in csv.DictReader(open(path)):
            op = {"add": "build", "contains": "lookup"}[r["op"]]
            key = (r["policy"], op, int(r["size_bytes"]))
            cuco[key] = (int(r["n_keys"]), float(r["gkeys_per_s_median"]))
    for (policy, op, nbytes), (keys, g) in sorted(cuco.items(), key=lambda kv: kv[0][2]):
        notes = "half present, half absent" if op == "lookup" else ""
        out.append(row(f"cuco-{policy}", op, nbytes, keys, g, notes, fpr.get((policy, nbytes), "")))
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(out)


if __name__ == "__main__":
    main()
