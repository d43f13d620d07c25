#!/usr/bin/env python3
"""Runs bloomlanes and its CPU peers side by side and writes one CSV (benches/peers/README.md).

Static filters at an equal false-positive rate: first, for each implementation, the bits per
key at which its *measured* rate on a 4 MiB filter is --fpr (bisection, keys from the drivers'
own streams); then at every size B of --sizes the implementation holds B*8/bits_per_key keys
(`expected_keys`; fastbloom sizes its hash count by it), of which at most --fill-cap are
inserted (larger filters, 16 MiB and up at the default cap, are timed partly filled: a blocked filter's insert and lookup touch one
block per key whatever the fill; the row's measured FPR is then below --fpr). Every round runs
every (size, threads, implementation) once, the implementations in a rotated order, so that a
load change on a shared machine falls on all of them; the CSV has one row per run, with the
1-minute load average before it. Spatial: bloomlanes' spatial filter (SIMD path) against libSBF
at the same cell count and classes, one thread.

  benches/peers/run.py [--bin target/peers/bin] [--out FILE.csv] [--sizes 64K,1M,16M,256M,1G]
                       [--threads 1,2] [--rounds 3] [--fpr 0.01] [--fill-cap 4M] [--multi ...]
                       [--impls bloomlanes,bloomlanes:partitioned,sbbf-rs-safe,parquet,fastbloom]
                       [--pf Sectorized256,Sectorized256:part] [--clock1 cpu|wall]
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import time

DRIVER_COLUMNS = ["implementation", "op", "filter_bytes", "keys", "threads", "mkeys_s_median",
                  "mkeys_s_min", "mkeys_s_max", "fpr_measured", "fpr_probes", "notes"]
COLUMNS = ["round", "impl", "requested_bytes", "bits_per_key", "expected_keys", "load1",
           "clock"] + DRIVER_COLUMNS
RUST = ["bloomlanes", "sbbf-rs-safe", "parquet", "fastbloom"]
IMPLS = ["bloomlanes", "bloomlanes:partitioned", "sbbf-rs-safe", "parquet", "fastbloom"]


def size(text):
    mul = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(text[:-1] if mul > 1 else text) * mul


def label(b):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{unit}"
    return str(b)


class Runner:
    def __init__(self, args):
        self.bin = args.bin
        self.args = args

    def command(self, impl, keys, nbytes, expected, threads, reps, lookups, fpr_keys, clock):
        common = ["--keys", str(keys), "--bytes", str(nbytes), "--threads", str(threads),
                  "--reps", str(reps), "--lookups", str(lookups), "--fpr-keys", str(fpr_keys),
                  "--clock", clock]
        base, _, mode = impl.partition(":")
        if base in RUST:
            # bloomlanes:partitioned (or :direct) forces its partitioning mode (default auto).
            return [os.path.join(self.bin, "peers"), "static", "--impl", base,
                    "--expected-keys", str(expected)] + (["--mode", mode] if mode else []) + common
        if impl.startswith("pf-"):
            variant, _, part = impl[3:].partition(":")
            cmd = [os.path.join(self.bin, "pf_driver"), "--variant", variant] + common
            if part:
                # Partitions of about 1 MiB each (the paper's partitioned filters keep a partition
                # in the private caches), at least 1.
                cmd += ["--partitioned", "--partitions", str(max(1, nbytes >> 20))]
            return cmd
        sys.exit(f"run.py: unknown implementation {impl}")

    def rows(self, cmd):
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"run.py: {' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()}")
        return [dict(zip(DRIVER_COLUMNS, line.split(",", 10)))
                for line in out.stdout.splitlines() if line.strip()]

    def calibrate(self, impl, target, nbytes=4 << 20):
        """Bits per key at which `impl`'s measured false-positive rate is `target`."""
        lo, hi = 4.0, 32.0
        for _ in range(9):
            mid = (lo + hi) / 2
            keys = int(nbytes * 8 / mid)
            cmd = self.command(impl, keys, nbytes, keys, 1, 1, 1 << 20, 4 << 20, "wall")
            fpr = float(self.rows(cmd)[0]["fpr_measured"])
            lo, hi = (mid, hi) if fpr > target else (lo, mid)
        return (lo + hi) / 2


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    p.add_argument("--bin", default=os.path.join(root, "target", "peers", "bin"))
    p.add_argument("--out", default=os.path.join(here, "results", "cpu.csv"))
    p.add_argument("--sizes", default="64K,1M,16M,256M,1G")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=3, help="reps inside one run (its median is kept)")
    p.add_argument("--fpr", type=float, default=0.01)
    p.add_argument("--fill-cap", default="4M")
    p.add_argument("--lookups", default="2M", help="lookups per rep (half present)")
    p.add_argument("--fpr-keys", default="2M", help="absent keys probed for the FPR, beyond the lookups")
    p.add_argument("--multi", default="bloomlanes,bloomlanes:partitioned,pf-Sectorized256,"
                   "pf-Sectorized256:part",
                   help="the implementations run on more than one thread (the SBBF crates have no "
                        "concurrent insert; 'all' for every one)")
    p.add_argument("--impls", default=",".join(IMPLS))
    p.add_argument("--pf", default="Sectorized256,Sectorized256:part",
                   help="partitioned-filters variants (pf_driver --variant; ':part' partitioned)")
    p.add_argument("--clock1", default="cpu", choices=["cpu", "wall"],
                   help="clock of one-thread runs (cpu: the thread's CPU time, for a shared machine)")
    p.add_argument("--spatial-keys", default="1M", help="keys of the spatial runs (0: none)")
    p.add_argument("--spatial-classes", type=int, default=4)
    a = p.parse_args()
    runner = Runner(a)
    impls = [i for i in a.impls.split(",") if i] + [f"pf-{v}" for v in a.pf.split(",") if v]
    sizes = [size(s) for s in a.sizes.split(",")]
    threads = [int(t) for t in a.threads.split(",")]
    cap = size(a.fill_cap)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    bpk = {}
    for impl in impls:
        bpk[impl] = runner.calibrate(impl, a.fpr)
        print(f"calibrated {impl}: {bpk[impl]:.2f} bits/key for FPR {a.fpr}", file=sys.stderr)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in range(a.rounds):
            for nbytes in sizes:
                for t in threads:
                    shift = (r + sizes.index(nbytes) + t) % len(impls)
                    for impl in impls[shift:] + impls[:shift]:
                        if t > 1 and a.multi != "all" and impl not in a.multi.split(","):
                            continue
                        expected = int(nbytes * 8 / bpk[impl])
                        clock = a.clock1 if t == 1 else "wall"
                        cmd = runner.command(impl, min(expected, cap), nbytes, expected, t, a.reps,
                                             size(a.lookups), size(a.fpr_keys), clock)
                        load = os.getloadavg()[0]
                        t0 = time.time()
                        for row in runner.rows(cmd):
                            row.update(round=r, impl=impl, requested_bytes=nbytes,
                                       bits_per_key=f"{bpk[impl]:.3f}", expected_keys=expected,
                                       load1=f"{load:.1f}", clock=clock)
                            w.writerow(row)
                            print(f"round {r} {label(nbytes)} {t}t {impl} {row['op']}: "
                                  f"{row['mkeys_s_median']} M/s fpr {row['fpr_measured']} "
                                  f"load {load:.1f} ({time.time() - t0:.1f} s)", file=sys.stderr)
                        f.flush()
            spatial(runner, a, w, r)
            f.flush()


def spatial(runner, a, w, r):
    """One round of the spatial runs: bloomlanes (SIMD) and libSBF, same cells and classes."""
    n = size(a.spatial_keys)
    if n == 0:
        return
    common = ["--keys", str(n), "--classes", str(a.spatial_classes), "--reps", str(a.reps),
              "--clock", a.clock1]
    cmds = {"bloomlanes-spatial": [os.path.join(runner.bin, "peers"), "spatial", "--backend", "simd"],
            # libSBF's salt file (random bytes it writes once) lives beside the binaries.
            "libsbf": [os.path.join(runner.bin, "sbf_driver"), "--salt-dir",
                       os.path.join(os.path.dirname(os.path.abspath(runner.bin)), "salts")]}
    order = list(cmds) if r % 2 == 0 else list(cmds)[::-1]
    for impl in order:
        load = os.getloadavg()[0]
        for row in runner.rows(cmds[impl] + common):
            row.update(round=r, impl=impl, requested_bytes=row["filter_bytes"], bits_per_key="",
                       expected_keys=n, load1=f"{load:.1f}", clock=a.clock1)
            w.writerow(row)
            print(f"round {r} spatial {impl} {row['op']}: {row['mkeys_s_median']} M/s "
                  f"load {load:.1f}", file=sys.stderr)


if __name__ == "__main__":
    main()
