"""GPU backend benchmark of the Python package (not a test): ``python python/bench/gpu_bench.py``.

N uint64 keys as a CuPy array (already on the device), a filter sized for them at 1 % (8x32):
``insert`` (the device copy uploaded, the keys inserted, the filter copied back to the host) and
``contains`` (device copy current: keys and answers stay on the device), against the same calls
on a numpy copy of the keys (SIMD backend, every core), and the device-only rate of the Rust
crate on the same filter for the kernel share (``bloomlanes-gpu``'s gpu_bench gives that).
Rates are the median of ``--reps`` runs in million keys per second; answers are checked equal.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import bloomlanes


def timed(fn, reps, sync=lambda: None):
    times = []
    for _ in range(reps):
        sync()
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times), min(times), max(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000_000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    import cupy as cp

    sync = cp.cuda.Device().synchronize
    print(f"GPU: {bloomlanes.gpu_device()}; CPU: simd {bloomlanes.simd_path()}, {bloomlanes.threads()} threads; N = {a.n:,}")
    dev = cp.random.default_rng(1).integers(0, 2**63, a.n, dtype=cp.int64).astype(cp.uint64)
    host = cp.asnumpy(dev)
    f_gpu = bloomlanes.Filter(a.n, 0.01, layout="8x32", key_type="u64")
    f_cpu = f_gpu.empty_like()
    print(f"filter: {f_gpu.nbytes / 2**20:.0f} MiB")
    rows = []

    def rate(label, fn, do_sync):
        med, lo, hi = timed(fn, a.reps, sync if do_sync else (lambda: None))
        rows.append((label, a.n / med / 1e6, a.n / hi / 1e6, a.n / lo / 1e6))

    rate("insert, CuPy keys (GPU; upload + copy back)", lambda: f_gpu.insert(dev), True)
    rate("insert, numpy keys (CPU, all cores)", lambda: f_cpu.insert(host), False)
    assert f_gpu == f_cpu, "GPU and CPU inserts must give the same bits"
    out = cp.empty(a.n, dtype=cp.bool_)
    f_gpu.contains(dev, out=out)  # uploads the device copy once
    rate("contains, CuPy keys -> CuPy answers (GPU)", lambda: f_gpu.contains(dev, out=out), True)
    rate("contains, CuPy keys -> new CuPy array (GPU)", lambda: f_gpu.contains(dev), True)
    rate("contains, numpy keys, backend='gpu' (copies both ways)", lambda: f_gpu.contains(host, backend="gpu"), False)
    rate("contains, numpy keys (CPU, all cores)", lambda: f_cpu.contains(host), False)
    assert np.array_equal(cp.asnumpy(out), f_cpu.contains(host))
    print("| call | M keys/s median | range |")
    print("|---|---|---|")
    for label, med, lo, hi in rows:
        print(f"| {label} | {med:,.0f} | {lo:,.0f}–{hi:,.0f} |")


if __name__ == "__main__":
    main()
