"""Build one filter over a dataset on a Dask cluster, then screen another dataset with it.

    python python/examples/dask_build.py [--keys 20000000] [--workers 2]

Starts a LocalCluster of worker processes (point a Client at your own cluster instead), builds
the filter of N uint64 keys from a dask array, checks it is byte-identical to the
single-machine build, saves it as a .blf file (readable by the `bloomlanes` CLI), and counts
how many of N other keys (half of them present) pass the filter on the workers.
"""

import argparse
import os
import tempfile
import time

import numpy as np

import bloomlanes
import bloomlanes.dask as bld


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=20_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--fpr", type=float, default=0.01)
    a = ap.parse_args()

    import dask.array as da
    from distributed import Client, LocalCluster

    n = a.keys
    with LocalCluster(n_workers=a.workers, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster):
        keys = da.arange(n, dtype="u8", chunks=max(1, n // (4 * a.workers)))
        t = time.perf_counter()
        filt = bld.build_filter(keys, fpr=a.fpr)
        print(f"built {filt!r} on {a.workers} workers in {time.perf_counter() - t:.2f} s")

        single = bloomlanes.Filter(n, a.fpr)
        single.insert(np.arange(n, dtype=np.uint64))
        print("byte-identical to the single-machine build:", filt.to_bytes() == single.to_bytes())

        path = os.path.join(tempfile.mkdtemp(), "keys.blf")
        filt.save(path)
        print("saved", path, "-", bloomlanes.Filter.load(path).stats()["fill_ratio"], "fill")

        others = da.arange(n // 2, n // 2 + n, dtype="u8", chunks=max(1, n // (4 * a.workers)))
        hits = int(bld.contains(others, filt).sum().compute())
        print(f"{hits} of {n} other keys may be present ({n // 2} are; "
              f"{(hits - n // 2) / (n - n // 2):.4f} false-positive rate)")


if __name__ == "__main__":
    main()
