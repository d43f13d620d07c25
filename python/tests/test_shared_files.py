"""Filter files shared between processes (issue #24): ``Filter.update`` and ``save`` hold the
file's write lock, so concurrent writers (Python or the CLI) lose no keys; ``wait=False``
raises ``BlockingIOError``; a mapped file cut short or rewritten in place raises
``FileChangedError`` instead of killing the interpreter with SIGBUS; constructors raise
``MemoryError`` instead of aborting."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import bloomlanes

KEYS = 20_000
TRIALS = int(os.environ.get("BLOOMLANES_TRIALS", "20"))

UPDATE = """
import sys, numpy as np, bloomlanes
start = int(sys.argv[2])
with bloomlanes.Filter.update(sys.argv[1]) as f:
    f.insert(np.arange(start, start + {keys}, dtype=np.uint64))
"""


def python(code, *args):
    return subprocess.Popen(
        [sys.executable, "-c", code, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(p):
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    return out


def base_filter(path):
    f = bloomlanes.Filter(100_000, 0.01, key_type="u64")
    f.insert(np.arange(10**9, 10**9 + 100, dtype=np.uint64))
    f.save(path)


def lost(path, starts):
    g = bloomlanes.Filter.load(path, mmap=False)
    held = sum(int(g.contains(np.arange(s, s + KEYS, dtype=np.uint64)).sum()) for s in starts)
    return len(starts) * KEYS - held, g.key_count


def test_concurrent_updates_lose_no_keys(tmp_path):
    path = tmp_path / "t.blf"
    code = UPDATE.format(keys=KEYS)
    losses = 0
    for _ in range(TRIALS):
        base_filter(path)
        a, b = python(code, path, 0), python(code, path, 10**6)
        finished(a), finished(b)
        keys_lost, count = lost(path, [0, 10**6])
        losses += keys_lost
        assert count == 100 + 2 * KEYS
        assert sorted(os.listdir(tmp_path)) == ["t.blf"], "no lock or temporary file left"
    print(f"Filter.update + Filter.update: {TRIALS} trials, {losses} keys lost")
    assert losses == 0


def test_python_and_cli_writers_exclude_each_other(cli, tmp_path):
    path = tmp_path / "t.blf"
    keys = np.arange(5 * 10**6, 5 * 10**6 + KEYS, dtype=np.uint64)
    keys.astype("<u8").tofile(tmp_path / "k.u64")
    code = UPDATE.format(keys=KEYS)
    losses = 0
    for _ in range(TRIALS):
        base_filter(path)
        a = python(code, path, 0)
        b = subprocess.Popen([cli, "-q", "insert", str(path), str(tmp_path / "k.u64"),
                              "--format", "u64"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        finished(a), finished(b)
        keys_lost, count = lost(path, [0, 5 * 10**6])
        losses += keys_lost
        assert count == 100 + 2 * KEYS
    print(f"Filter.update + bloomlanes insert: {TRIALS} trials, {losses} keys lost")
    assert losses == 0


SPATIAL_UPDATE = """
import sys, numpy as np, bloomlanes
start = int(sys.argv[2])
with bloomlanes.SpatialFilter.update(sys.argv[1]) as f:
    f.insert(np.arange(start, start + {keys}, dtype=np.uint64), "deny")
"""


def test_spatial_updates_and_cli_inserts_lose_no_keys(cli, tmp_path):
    """A rule table edited from Python (``SpatialFilter.update``) while another Python process
    and the CLI's ``insert --class`` write it: every key of all three lands in its class."""
    path = tmp_path / "rules.blf"
    keys = np.arange(5 * 10**6, 5 * 10**6 + KEYS, dtype=np.uint64)
    keys.astype("<u8").tofile(tmp_path / "k.u64")
    code = SPATIAL_UPDATE.format(keys=KEYS)
    losses = 0
    for _ in range(max(TRIALS // 4, 1)):
        f = bloomlanes.SpatialFilter(["allow", "deny"], 200_000, 0.01, key_type="u64")
        f.save(path)
        a, b = python(code, path, 0), python(code, path, 10**6)
        c = subprocess.Popen([cli, "-q", "insert", str(path), str(tmp_path / "k.u64"),
                              "--format", "u64", "--class", "allow"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        finished(a), finished(b), finished(c)
        g = bloomlanes.SpatialFilter.load(path)
        for start, cls in ((0, 2), (10**6, 2), (5 * 10**6, 1)):
            got = g.classify(np.arange(start, start + KEYS, dtype=np.uint64))
            losses += int((got < cls).sum())
        assert g.keys_per_class == [KEYS, 2 * KEYS]
        assert sorted(os.listdir(tmp_path)) == ["k.u64", "rules.blf"]
    print(f"SpatialFilter.update x2 + bloomlanes insert: {losses} keys lost")
    assert losses == 0


def test_kind_update_saves_nothing_on_an_exception(tmp_path):
    path = tmp_path / "c.blf"
    bloomlanes.CountingFilter(1000, 0.01, key_type="u64").save(path)
    before = path.read_bytes()
    with pytest.raises(RuntimeError):
        with bloomlanes.CountingFilter.update(path) as f:
            f.insert(np.arange(10, dtype=np.uint64))
            raise RuntimeError("abandon")
    assert path.read_bytes() == before
    with bloomlanes.CountingFilter.update(path) as f:
        f.insert(np.arange(10, dtype=np.uint64))
    assert bloomlanes.CountingFilter.load(path).key_count == 10


def test_a_writer_waits_for_the_lock_or_with_wait_false_raises(tmp_path):
    path = tmp_path / "t.blf"
    base_filter(path)
    inside, leave = threading.Event(), threading.Event()

    def hold():
        with bloomlanes.Filter.update(path) as f:
            f.insert(np.array([7], dtype=np.uint64))
            inside.set()
            leave.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(10)
    other = bloomlanes.Filter(100, key_type="u64")
    with pytest.raises(BlockingIOError, match=r"t\.blf.*pid %d" % os.getpid()):
        other.save(path, wait=False)
    with pytest.raises(BlockingIOError):
        with bloomlanes.Filter.update(path, wait=False):
            pass
    saved = threading.Thread(target=lambda: other.save(path))
    saved.start()
    time.sleep(0.3)
    assert saved.is_alive(), "waits for the holder"
    leave.set()
    holder.join(), saved.join()
    assert bloomlanes.Filter.load(path).key_count == 0, "the waiting save came last"
    # An exception inside the block saves nothing.
    with pytest.raises(RuntimeError):
        with bloomlanes.Filter.update(path) as f:
            f.insert(np.array([1, 2], dtype=np.uint64))
            raise RuntimeError("stop")
    assert bloomlanes.Filter.load(path).key_count == 0
    assert sorted(os.listdir(tmp_path)) == ["t.blf"]


CHANGED = """
import os, sys, numpy as np, bloomlanes
path, how = sys.argv[1], sys.argv[2]
f = bloomlanes.Filter.load(path)
keys = np.arange(100_000, dtype=np.uint64)
assert f.contains(keys).sum() >= 1000
if how == "truncate":
    os.truncate(path, 64)
else:
    with open(path, "r+b") as w:
        w.seek(100)
        w.write(b"\\xff" * 8)
for call in (lambda: f.contains(keys), lambda: f.stats(), lambda: f.to_bytes(),
             lambda: f.copy(), lambda: 5 in f):
    try:
        call()
    except bloomlanes.FileChangedError as e:
        assert path in str(e), e
    else:
        raise SystemExit("no FileChangedError")
print("ok")
"""


@pytest.mark.parametrize("how", ["truncate", "rewrite"])
def test_a_mapped_file_changed_underneath_raises_instead_of_sigbus(tmp_path, how):
    path = tmp_path / "big.blf"
    f = bloomlanes.Filter(2_000_000, 0.01, key_type="u64")
    f.insert(np.arange(100_000, dtype=np.uint64))
    f.save(path)
    time.sleep(0.02)  # a rewrite must move the modification time
    assert finished(python(CHANGED, path, how)).strip() == "ok"


LIMITED = """
import resource, bloomlanes
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.RLIM_INFINITY))
for make in (lambda: bloomlanes.Filter.with_params("8x32", 2**32 - 1),
             lambda: bloomlanes.Filter(10**10),
             lambda: bloomlanes.Filter(10**9, bits_per_key=64)):
    try:
        make()
    except MemoryError as e:
        assert "bytes" in str(e), e
    else:
        raise SystemExit("no MemoryError")
small = bloomlanes.Filter(1000)
assert small.copy() == small
print("ok")
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS semantics")
def test_constructors_raise_memory_error_instead_of_aborting():
    assert finished(python(LIMITED)).strip() == "ok"
