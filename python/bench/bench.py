"""Benchmarks of the Python package (not a test): ``python python/bench/bench.py``.

1. ``insert``/``contains`` of N numpy uint64 keys and N pyarrow strings (``string`` with 32-bit
   offsets and ``large_string``) against the Rust bulk rate on the same machine: the same work on
   Rust-owned keys (``Probe::par_insert`` / ``par_contains``, every core, the same keys and filter
   size), alternated rep by rep in the same process (``bloomlanes._native._rust_bulk_seconds``;
   ``--rust-binary`` also runs it as the ``python_baseline`` example of the benches crate);
2. the same keys through ``rbloom``, ``pybloom_live`` and ``bloom_filter2`` when installed
   (those insert key by key from Python, so they run on the first ``--peer-n`` keys of the same
   key set, into filters sized for all N; rates are per key);
3. the Dask build of ``--dask-n`` keys on a LocalCluster of 1 and of 2 worker processes (one
   thread each), checked byte-identical to the single-machine build.

Rates are the median of ``--reps`` runs, in million keys per second.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

import bloomlanes

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def median_rate(n: int, fn, reps: int, setup=None) -> float:
    rates = []
    for _ in range(reps):
        state = setup() if setup else None
        t = time.perf_counter()
        fn(state)
        rates.append(n / (time.perf_counter() - t) / 1e6)
    return statistics.median(rates)


def rust_baseline(n: int, reps: int) -> dict:
    cmd = ["cargo", "run", "-q", "--release", "-p", "bloomlanes-benches", "--example",
           "python_baseline", "--", str(n), str(reps)]
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    print(out.strip())
    rates = {}
    for m in re.finditer(r"^(\w+) (insert|contains) ([\d.]+) M keys/s", out, re.M):
        rates[(m.group(1), m.group(2))] = float(m.group(3))
    return rates


def bench_package(n: int, reps: int) -> dict:
    """Package rates and, rep by rep in between, the Rust bulk rates on Rust-owned keys
    (``bloomlanes._native._rust_bulk_seconds``: ``Probe::par_insert`` / ``par_contains``, the
    same kernels and filter size). Returns {(keys, op): (python M/s, rust M/s)}."""
    import pyarrow as pa
    from bloomlanes._native import _rust_bulk_seconds

    keys = np.arange(n, dtype=np.uint64)
    queries = np.arange(n // 2, n // 2 + n, dtype=np.uint64)
    strs = pa.array([f"key-{i}" for i in range(n)])
    qstrs = pa.array([f"key-{i}" for i in range(n // 2, n // 2 + n)])
    cases = {
        "u64": (keys, queries, "u64", "u64"),
        "string": (strs, qstrs, "bytes", "strings"),
        "large_string": (strs.cast(pa.large_string()), qstrs.cast(pa.large_string()), "bytes",
                         "strings"),
    }
    runs: dict = {}

    def rate(seconds: float) -> float:
        return n / seconds / 1e6

    for _ in range(reps):
        for name, (ins, look, kt, rust_kind) in cases.items():
            ri, rc = _rust_bulk_seconds(rust_kind, n)
            f = bloomlanes.Filter(n, 0.01, key_type=kt)
            t = time.perf_counter()
            f.insert(ins)
            pi = time.perf_counter() - t
            t = time.perf_counter()
            f.contains(look)
            pc = time.perf_counter() - t
            runs.setdefault((name, "insert"), []).append((rate(pi), rate(ri)))
            runs.setdefault((name, "contains"), []).append((rate(pc), rate(rc)))
            if name == "u64":
                t = time.perf_counter()
                f.contains(look, bitmap=True)
                pb = time.perf_counter() - t
                runs.setdefault((name, "contains bitmap"), []).append((rate(pb), rate(rc)))
    print(f"filter: {f!r}, simd {bloomlanes.simd_path()}, {bloomlanes.threads()} threads")
    return {k: (statistics.median(p for p, _ in v), statistics.median(r for _, r in v),
                statistics.median(p / r for p, r in v))
            for k, v in runs.items()}


def bench_peers(n: int, peer_n: int, reps: int) -> dict:
    res = {}
    ints = list(range(peer_n))
    qints = list(range(n // 2, n // 2 + peer_n))
    strs = [f"key-{i}" for i in range(peer_n)]
    qstrs = [f"key-{i}" for i in range(n // 2, n // 2 + peer_n)]
    peers = {}
    try:
        import rbloom

        peers["rbloom"] = (lambda: rbloom.Bloom(n, 0.01),
                           lambda f, ks: f.update(ks))
    except ImportError:
        print("rbloom not installed")
    try:
        import pybloom_live

        peers["pybloom_live"] = (lambda: pybloom_live.BloomFilter(n, 0.01),
                                 lambda f, ks: [f.add(k) for k in ks])
    except ImportError:
        print("pybloom_live not installed")
    try:
        import bloom_filter2

        peers["bloom_filter2"] = (
            lambda: bloom_filter2.BloomFilter(max_elements=n, error_rate=0.01),
            lambda f, ks: [f.add(k) for k in ks])
    except ImportError:
        print("bloom_filter2 not installed")
    for name, (make, add) in peers.items():
        m = peer_n if name == "rbloom" else max(1, peer_n // 10)
        for kind, ks, qs in (("u64", ints[:m], qints[:m]), ("string", strs[:m], qstrs[:m])):
            res[(name, kind, "insert")] = median_rate(m, lambda f: add(f, ks), reps, make)
            full = make()
            add(full, ks)
            res[(name, kind, "contains")] = median_rate(
                m, lambda _: sum(1 for q in qs if q in full), reps)
        print(f"{name}: measured on {m} keys")
    return res


def bench_dask(n: int, chunk: int) -> dict:
    import dask.array as da
    from distributed import Client, LocalCluster

    import bloomlanes.dask as bld

    t = time.perf_counter()
    single = bloomlanes.Filter(n, 0.01)
    single.insert(np.arange(n, dtype=np.uint64))
    t_single = time.perf_counter() - t
    want = hashlib.sha256(single.to_bytes()).hexdigest()
    print(f"single-machine build ({bloomlanes.threads()} threads): {t_single:.2f} s, {single!r}")
    del single
    res = {"single": t_single}
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster):
            bld.build_filter(da.arange(10**6, dtype="u8", chunks=10**5), fpr=0.01)  # warm up
            keys = da.arange(n, dtype="u8", chunks=chunk)
            t = time.perf_counter()
            f = bld.build_filter(keys, fpr=0.01)
            elapsed = time.perf_counter() - t
            same = hashlib.sha256(f.to_bytes()).hexdigest() == want
            print(f"dask, {workers} worker(s): {elapsed:.2f} s, byte-identical: {same}")
            res[workers] = (elapsed, same)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10**7)
    ap.add_argument("--peer-n", type=int, default=10**6)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rust-binary", action="store_true",
                    help="also run the python_baseline example binary of the benches crate")
    ap.add_argument("--dask-n", type=int, default=10**8)
    ap.add_argument("--dask-chunk", type=int, default=10**7)
    ap.add_argument("--skip-peers", action="store_true")
    ap.add_argument("--skip-dask", action="store_true")
    a = ap.parse_args()
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, bloomlanes "
          f"{bloomlanes.__version__}, {os.cpu_count()} cores")
    if a.rust_binary:
        rust_baseline(a.n, a.reps)
    py = bench_package(a.n, a.reps)
    print(f"\n| keys (N = {a.n:,}) | op | bloomlanes (Python) | Rust bulk | ratio (median of per-rep ratios) |")
    print("|---|---|---:|---:|---:|")
    for (kind, op), (rate, base, ratio) in py.items():
        print(f"| {kind} | {op} | {rate:.1f} M/s | {base:.1f} M/s | {ratio:.2f}x |")
    if not a.skip_peers:
        peers = bench_peers(a.n, a.peer_n, a.reps)
        print("\n| package | keys | op | M keys/s | bloomlanes / package |")
        print("|---|---|---|---:|---:|")
        for (name, kind, op), rate in peers.items():
            ours = py[(kind, op)][0]
            print(f"| {name} | {kind} | {op} | {rate:.3f} | {ours / rate:.0f}x |")
    if not a.skip_dask:
        d = bench_dask(a.dask_n, a.dask_chunk)
        t1, t2 = d[1][0], d[2][0]
        print(f"\n| Dask build, N = {a.dask_n:,} | seconds | speed-up | byte-identical |")
        print("|---|---:|---:|---|")
        print(f"| single machine, in process ({bloomlanes.threads()} threads) | {d['single']:.2f} | - | reference |")
        print(f"| 1 worker x 1 thread | {t1:.2f} | 1.00x | {d[1][1]} |")
        print(f"| 2 workers x 1 thread | {t2:.2f} | {t1 / t2:.2f}x | {d[2][1]} |")


if __name__ == "__main__":
    main()
