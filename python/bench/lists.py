"""Python lists of keys against rbloom, in one run (not a test): ``python python/bench/lists.py``.

For each N (``--n``, default 1,000,000, 2,000,000 and 10,000,000) the keys are ``"user-<i>"``
strings; lookups ask for N keys of which half were inserted. Rep by rep, alternating:

- bloomlanes ``Filter(N, 0.01, key_type="bytes")``: ``insert(list)`` and ``contains(list)``
  (on every core; and with ``threads=1``), and the same keys as a tuple, as a generator, as a
  list of ``bytes`` and as a pyarrow array (``--no-arrow`` to skip it);
- rbloom ``Bloom(N, 0.01)``: ``update(list)`` and ``list(map(bf.__contains__, queries))`` (it
  has no bulk lookup; this is its fastest form from Python);
- "cached" reuses one list (Python caches a str's hash, which rbloom uses); "fresh" makes new
  string objects before each rep (outside the timing), as a job reading new data does;
  "shuffled" lists the same strings in another order than they were made (their objects are
  then scattered in memory, as after a sort, a set or a join).

Prints, per case, the median, minimum and maximum rate over ``--reps`` reps in million keys per
second, the median CPU time of the whole process per key (every thread; less noisy than the
rate on a busy machine), bloomlanes' median over rbloom's and fastest rep over rbloom's (the
reps least disturbed on a busy machine, where a two-thread call loses most when one of its
threads waits for a core), and the load average before and after.
``BLOOMLANES_LIST_WALK=gil`` reads lists of str on the calling thread through the C API (the
path when the package does not recognise this Python's object layout), for comparison.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

import bloomlanes


def keys_of(start: int, n: int) -> list:
    return [f"user-{i}" for i in range(start, start + n)]


def timed(fn) -> tuple:
    """Wall-clock and process CPU seconds of `fn()`."""
    c = time.process_time()
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1_000_000, 2_000_000, 10_000_000])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--no-arrow", action="store_true")
    ap.add_argument("--list-only", action="store_true",
                    help="only insert list, contains list and rbloom's update and in (more reps "
                    "in the same time on a busy machine)")
    args = ap.parse_args()
    try:
        import rbloom
    except ImportError:
        rbloom = None
        print("rbloom is not installed (pip install rbloom): bloomlanes only")
    pa = None
    if not args.no_arrow:
        try:
            import pyarrow as pa
        except ImportError:
            pass
    # How lists of str are read: "direct" (on every core) or "gil: <why>" (one thread).
    walk = getattr(bloomlanes._native, "_list_walk", lambda: "gil (no _list_walk)")()
    print(f"load average before: {os.getloadavg()}; cores: {os.cpu_count()}; "
          f"bloomlanes threads: {bloomlanes.threads()}; simd: {bloomlanes.simd_path()}; "
          f"list walk: {walk}")
    for n in args.n:
        run(n, args.reps, rbloom, None if args.list_only else pa, args.list_only)
    print(f"load average after: {os.getloadavg()}")


def run(n: int, reps: int, rbloom, pa, list_only: bool) -> None:
    keys = keys_of(0, n)
    queries = keys_of(n // 2, n)
    shuffled, shuffled_q = keys[:], queries[:]
    random.Random(1).shuffle(shuffled)
    random.Random(2).shuffle(shuffled_q)
    rates: dict = {}
    cpu: dict = {}

    def add(name: str, seconds: tuple) -> None:
        rates.setdefault(name, []).append(n / seconds[0] / 1e6)
        cpu.setdefault(name, []).append(seconds[1] / n * 1e9)

    def blf():
        return bloomlanes.Filter(n, 0.01, key_type="bytes")

    forms = {
        "list": (lambda: keys, lambda: queries),
        "tuple": (lambda: tuple(keys), lambda: tuple(queries)),
        "generator": (lambda: (k for k in keys), lambda: (q for q in queries)),
        "list of bytes": (lambda: [k.encode() for k in keys],
                          lambda: [q.encode() for q in queries]),
    }
    if list_only:
        forms = {"list": forms["list"]}
    if pa is not None:
        arrow_keys, arrow_queries = pa.array(keys), pa.array(queries)
        forms["pyarrow"] = (lambda: arrow_keys, lambda: arrow_queries)
    for _ in range(reps):
        # bloomlanes, every form; the keys are made before the timing.
        for name, (ins, look) in forms.items():
            f = blf()
            k = ins()
            add(f"insert {name}", timed(lambda: f.insert(k)))
            q = look()
            answers = []
            add(f"contains {name}", timed(lambda: answers.append(f.contains(q))))
            assert answers[0][: n // 2].sum() == n // 2  # inserted keys are found
        if list_only:
            if rbloom is not None:
                bf = rbloom.Bloom(n, 0.01)
                add("rbloom update list", timed(lambda: bf.update(keys)))
                add("rbloom in (map)", timed(lambda: list(map(bf.__contains__, queries))))
            continue
        f = blf()
        add("insert list threads=1", timed(lambda: f.insert(keys, threads=1)))
        add("contains list threads=1", timed(lambda: f.contains(queries, threads=1)))
        if rbloom is not None:
            bf = rbloom.Bloom(n, 0.01)
            add("rbloom update list", timed(lambda: bf.update(keys)))
            add("rbloom in (map)", timed(lambda: list(map(bf.__contains__, queries))))
        f = blf()
        add("insert list shuffled", timed(lambda: f.insert(shuffled)))
        add("contains list shuffled", timed(lambda: f.contains(shuffled_q)))
        if rbloom is not None:
            bf = rbloom.Bloom(n, 0.01)
            add("rbloom update shuffled", timed(lambda: bf.update(shuffled)))
            add("rbloom in (map) shuffled", timed(lambda: list(map(bf.__contains__, shuffled_q))))
        # Fresh strings: new objects, no cached hashes.
        fresh, fresh_q = keys_of(0, n), keys_of(n // 2, n)
        f = blf()
        add("insert list fresh", timed(lambda: f.insert(fresh)))
        add("contains list fresh", timed(lambda: f.contains(fresh_q)))
        if rbloom is not None:
            fresh, fresh_q = keys_of(0, n), keys_of(n // 2, n)
            bf = rbloom.Bloom(n, 0.01)
            add("rbloom update list fresh", timed(lambda: bf.update(fresh)))
            add("rbloom in (map) fresh", timed(lambda: list(map(bf.__contains__, fresh_q))))
        del fresh, fresh_q
    print(f"\nN = {n:,} keys like 'user-123', {reps} reps, M keys/s: median [min, max]; "
          "process CPU ns/key (median)")
    med = {name: statistics.median(r) for name, r in rates.items()}
    for name, r in rates.items():
        print(f"  {name:28s} {med[name]:8.1f}  [{min(r):7.1f}, {max(r):7.1f}]"
              f"  cpu {statistics.median(cpu[name]):6.1f}")
    if rbloom is not None:
        print("  ratios of medians (and of the fastest reps), bloomlanes / rbloom:")
        for ours, theirs in [("insert list", "rbloom update list"),
                             ("insert list fresh", "rbloom update list fresh"),
                             ("contains list", "rbloom in (map)"),
                             ("contains list fresh", "rbloom in (map) fresh"),
                             ("insert list shuffled", "rbloom update shuffled"),
                             ("contains list shuffled", "rbloom in (map) shuffled"),
                             ("insert list threads=1", "rbloom update list"),
                             ("contains list threads=1", "rbloom in (map)")]:
            if ours not in med or theirs not in med:
                continue
            print(f"    {ours:28s} {med[ours] / med[theirs]:5.2f}x"
                  f"   fastest reps: {max(rates[ours]) / max(rates[theirs]):5.2f}x")


if __name__ == "__main__":
    main()
