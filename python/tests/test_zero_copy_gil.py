"""Keys are read in place (peak memory does not grow with the batch) and bulk calls release the
GIL (another Python thread runs during a long call)."""

import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pyarrow as pa

import bloomlanes

# Run in a fresh interpreter so that the peak RSS (ru_maxrss) is this measurement's alone.
PROBE = textwrap.dedent("""
    import resource, sys
    import numpy as np, pyarrow as pa, bloomlanes
    kind, n = sys.argv[1], int(sys.argv[2])
    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if kind == "u64":
        keys = np.arange(n, dtype=np.uint64); size = keys.nbytes
    elif kind == "u32":
        keys = np.arange(n, dtype=np.uint32); size = keys.nbytes
    else:
        data = pa.py_buffer(np.arange(n, dtype=np.uint64).view(np.uint8))
        if kind == "string":
            offsets = pa.py_buffer(np.arange(0, 8 * n + 1, 8, dtype=np.int32))
            keys = pa.Array.from_buffers(pa.binary(), n, [None, offsets, data])
        else:
            offsets = pa.py_buffer(np.arange(0, 8 * n + 1, 8, dtype=np.int64))
            keys = pa.Array.from_buffers(pa.large_binary(), n, [None, offsets, data])
        size = data.size + offsets.size
    f = bloomlanes.Filter(1 << 16, 0.01)
    f.contains(keys[:10] if kind in ("u64", "u32") else keys.slice(0, 10), bitmap=True)
    before = peak()
    f.insert(keys)
    f.contains(keys, bitmap=True)
    print(size, peak() - before)
""")


def measure(kind, n):
    out = subprocess.run([sys.executable, "-c", PROBE, kind, str(n)], check=True,
                         capture_output=True, text=True).stdout.split()
    return int(out[0]), int(out[1])


def test_no_copy_of_large_arrays():
    for kind, n in (("u64", 40_000_000), ("u32", 40_000_000), ("string", 20_000_000),
                    ("large", 20_000_000)):
        size, growth = measure(kind, n)
        # A copy of the keys (or of the offsets of a string array) would add >= 25% of `size`;
        # the bitmap answer is n/8 bytes and the hash buffers are bounded chunks.
        allowed = n // 8 + 32 * 2**20
        print(f"{kind}: {size >> 20} MiB of keys, peak grew {growth >> 20} MiB (allowed {allowed >> 20})")
        assert growth < allowed, (kind, size, growth)


def progress_during(call):
    """How many times another Python thread ran its loop while `call` ran."""
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.05)
    start = count[0]
    t0 = time.perf_counter()
    call()
    elapsed = time.perf_counter() - t0
    during = count[0] - start
    stop.set()
    t.join()
    return during, elapsed


def test_bulk_calls_release_the_gil():
    bloomlanes.set_threads(1)  # leave a core to the spinning thread
    try:
        keys = np.arange(10_000_000, dtype=np.uint64)
        strings = pa.array([f"k{i}" for i in range(2_000_000)])
        f = bloomlanes.Filter(10_000_000, 0.01, key_type="u64")
        s = bloomlanes.Filter(2_000_000, 0.01, key_type="bytes")
        for name, call in (("insert", lambda: f.insert(keys)),
                           ("contains", lambda: f.contains(keys)),
                           ("insert strings", lambda: s.insert(strings)),
                           ("contains strings", lambda: s.contains(strings))):
            during, elapsed = progress_during(call)
            print(f"{name}: {elapsed:.3f} s, other thread looped {during} times")
            # With the GIL held for the whole call, the other thread could not run at all
            # (the switch interval is 5 ms, and a call into C is never interrupted).
            assert elapsed > 0.02 and during > 1000, (name, elapsed, during)
    finally:
        bloomlanes.set_threads(0)


def test_concurrent_lookups_from_threads_agree():
    f = bloomlanes.Filter(1_000_000, 0.01, key_type="u64")
    f.insert(np.arange(1_000_000, dtype=np.uint64))
    q = np.arange(500_000, 1_500_000, dtype=np.uint64)
    want = f.contains(q)
    results = [None] * 4

    def work(i):
        results[i] = f.contains(q)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(r, want) for r in results)
