"""bloomlanes.CountingFilter: counts never below the true insert counts, deletes that restore
the filter, saturation as the core documents it, the CLI's files byte for byte and its delete
rules (a refused key changes nothing; strict deletes nothing), and errors for bad inputs."""

import copy
import json
import pickle
import subprocess
import warnings

import numpy as np
import pyarrow as pa
import pytest

import bloomlanes


def u64(n, start=0):
    return np.arange(start, start + n, dtype=np.uint64)


def test_counts_are_upper_bounds_of_inserts():
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 2**63, 3000, dtype=np.uint64)
    times = rng.integers(1, 6, keys.size)
    f = bloomlanes.CountingFilter(3000 * 5, fpr=0.01, counter_bits=8)
    for t in range(1, 6):
        f.insert(keys[times >= t])
    counts = f.count(keys)
    assert counts.dtype == np.uint8
    assert (counts >= times).all()
    # Most keys own at least one counter alone: the bound is tight for them.
    assert (counts == times).mean() > 0.9
    assert f.key_count == len(f) == int(times.sum())
    assert f.contains(keys).all()
    absent = u64(20_000, start=2**63)
    assert f.count(absent).mean() < 0.1


def test_delete_restores_the_filter():
    f = bloomlanes.CountingFilter(10_000, fpr=0.01)
    kept, gone = u64(5000), u64(3000, start=10**9)
    f.insert(kept)
    before = f.to_bytes()
    f.insert(gone)
    f.insert(gone[:100])  # inserted twice: deleted twice below
    assert f.delete(gone) == gone.size
    assert f.delete(gone[:100]) == 100
    assert f.to_bytes() == before
    assert f.key_count == kept.size
    assert f.contains(kept).all()
    assert f.to_filter().to_bytes()[64:] == _static_of(kept, f).to_bytes()[64:]


def _static_of(keys, f):
    s = bloomlanes.Filter.with_params(**f.params)
    s.insert(keys)
    return s


def test_delete_of_absent_keys_is_refused_and_changes_nothing():
    f = bloomlanes.CountingFilter(blocks=64, layout="8x32")
    f.insert(u64(100))
    before = f.to_bytes()
    # A key with a zero counter: refused, named, nothing changed (the CLI's warning).
    absent = np.array([2**62 + i for i in range(50) if f.count(np.array([2**62 + i], np.uint64))[0] == 0],
                      dtype=np.uint64)
    assert absent.size > 10
    with pytest.warns(UserWarning, match=rf"{absent.size} of {absent.size} keys are not in the filter"):
        assert f.delete(absent) == 0
    assert f.to_bytes() == before
    # strict: one absent key and nothing at all is deleted.
    mixed = np.concatenate([u64(100), absent[:1]])
    with pytest.raises(ValueError, match=rf"1 of 101 keys .* key {absent[0]} \(index 100\).*nothing was deleted"):
        f.delete(mixed, strict=True)
    assert f.to_bytes() == before
    # Without strict the present ones go and the absent one is left.
    with pytest.warns(UserWarning, match="1 of 101 keys"):
        assert f.delete(mixed) == 100
    assert f.key_count == 0
    assert not f.contains(u64(100)).any()


def test_strict_delete_undoes_repeats_and_saturated_counters():
    # Tiny filter, 4-bit counters: many counters saturate at 15; a key deleted more often than
    # it was inserted is refused at its turn. strict must leave every byte as it was.
    f = bloomlanes.CountingFilter(blocks=4, layout="8x32", counter_bits=4)
    f.insert(u64(1500))
    assert f.saturated > 50
    before = f.to_bytes()
    # The second round finds the unsaturated counters at zero: refused at their turn.
    with pytest.raises(ValueError, match="nothing was deleted"):
        f.delete(np.concatenate([u64(1500), u64(1500)]), strict=True)
    assert f.to_bytes() == before
    with pytest.warns(UserWarning):
        deleted = f.delete(np.concatenate([u64(1500), u64(1500)]))
    assert 1500 <= deleted < 3000 and f.to_bytes() != before


def test_saturation_as_core_documents():
    f = bloomlanes.CountingFilter(blocks=1, layout="8x32", counter_bits=4)
    key = np.array([42], dtype=np.uint64)
    for _ in range(20):
        f.insert(key)
    assert f.count(key)[0] == 15  # stuck at the maximum
    assert f.saturated >= 8  # every counter of the key (one per lane)
    for _ in range(20):
        f.delete(key)
    # A saturated counter is never decremented: the key is never lost.
    assert f.count(key)[0] == 15 and key[0] in f
    assert f.key_count == 0


def test_stable_kind():
    f = bloomlanes.CountingFilter(10_000, fpr=0.01, kind="stable")
    assert f.kind == "stable" and f.decrements >= 1
    f.insert(u64(1000))
    assert f.contains(u64(1000)[-100:]).all()
    s = f.stats()
    assert 0 < s["stable_fpr"] < 1 and s["decrements"] == f.decrements
    with pytest.raises(ValueError, match="stable filter has no deletions"):
        f.delete(u64(10))
    with pytest.raises(ValueError, match="needs decrements="):
        bloomlanes.CountingFilter(blocks=8, layout="8x32", kind="stable")
    assert bloomlanes.CountingFilter(blocks=8, layout="8x32", kind="stable", decrements=2).decrements == 2
    with pytest.raises(ValueError, match="decrements applies to kind='stable'"):
        bloomlanes.CountingFilter(100, decrements=3)
    with pytest.raises(ValueError, match="kind=.static.: expected 'counting' or 'stable'"):
        bloomlanes.CountingFilter(100, kind="static")


def test_keys_of_every_form_and_key_type_checks():
    words = [f"w{i}" for i in range(500)]
    f = bloomlanes.CountingFilter(1000)
    f.insert(words)
    f.insert(pa.array(words[:100]))
    assert f.key_type == "bytes"
    assert (f.count(words[:100]) >= 2).all() and (f.count(words[100:]) >= 1).all()
    assert "w3" in f and f.delete(pa.chunked_array([words[:50], words[50:100]])) == 100
    with pytest.raises(bloomlanes.KeyTypeError):
        f.insert(u64(3))
    with pytest.raises(bloomlanes.KeyTypeError):
        f.count(u64(3))
    with pytest.raises(bloomlanes.KeyTypeError):
        f.delete(u64(3))
    with pytest.raises(bloomlanes.KeyTypeError, match="float"):
        bloomlanes.CountingFilter(100).insert(np.array([1.5]))
    with pytest.raises(TypeError):
        f.insert([object()])
    with pytest.raises(ValueError, match="null"):
        f.insert(pa.array(["a", None]))
    assert f.count(pa.array(["w200", None])).tolist()[1] == 0
    with pytest.raises(ValueError, match="counter_bits=5"):
        bloomlanes.CountingFilter(100, counter_bits=5)
    with pytest.raises(ValueError, match=r"give capacity \(keys\) or blocks"):
        bloomlanes.CountingFilter()


def test_files_pickling_and_copies(tmp_path):
    f = bloomlanes.CountingFilter(2000, fpr=0.001, counter_bits=8, seed=5, key_type="i64")
    f.insert(np.arange(-500, 500, dtype=np.int64))
    f.save(tmp_path / "c.blf")
    g = bloomlanes.CountingFilter.load(tmp_path / "c.blf")
    assert g == f and g.to_bytes() == f.to_bytes() == (tmp_path / "c.blf").read_bytes()
    assert pickle.loads(pickle.dumps(f)) == f
    h = copy.deepcopy(f)
    h.delete(np.arange(-500, 0, dtype=np.int64))
    assert h != f and f.key_count == 1000 and h.key_count == 500
    # A learning filter stays learning through pickling.
    empty = pickle.loads(pickle.dumps(bloomlanes.CountingFilter(100)))
    empty.insert([b"x"])
    assert empty.key_type == "bytes"
    # Another kind's file is refused by name.
    s = bloomlanes.Filter(100)
    s.save(tmp_path / "static.blf")
    with pytest.raises(bloomlanes.FormatError, match="static.blf"):
        bloomlanes.CountingFilter.load(tmp_path / "static.blf")
    bad = bytearray(f.to_bytes())
    bad[-1] ^= 1
    with pytest.raises(bloomlanes.FormatError):
        bloomlanes.CountingFilter.from_bytes(bytes(bad))


def run(cli, *args):
    return subprocess.run([cli, *map(str, args)], check=True, capture_output=True, text=True)


def test_cli_same_files(cli, tmp_path):
    keys = np.arange(0, 60_000, 7, dtype=np.uint64)
    keys.astype("<u8").tofile(tmp_path / "keys.u64")
    twice = np.concatenate([keys, keys[:1000]])
    twice.astype("<u8").tofile(tmp_path / "twice.u64")
    run(cli, "build", tmp_path / "twice.u64", "-o", tmp_path / "cli.blf", "--format", "u64",
        "--kind", "counting", "--counter-bits", 8, "--layout", "8x64", "--seed", 3,
        "--capacity", 20_000, "--fpp", 0.01)
    cli_filter = bloomlanes.CountingFilter.load(tmp_path / "cli.blf")
    ours = bloomlanes.CountingFilter(blocks=cli_filter.params["blocks"], layout="8x64", seed=3,
                                     counter_bits=8)
    ours.insert(twice)
    assert ours.to_bytes() == (tmp_path / "cli.blf").read_bytes()
    # Deletes through both: the same bytes again.
    keys[:3000].astype("<u8").tofile(tmp_path / "del.u64")
    run(cli, "delete", tmp_path / "cli.blf", tmp_path / "del.u64", "--format", "u64")
    assert ours.delete(keys[:3000]) == 3000
    ours.save(tmp_path / "ours.blf")
    assert (tmp_path / "ours.blf").read_bytes() == (tmp_path / "cli.blf").read_bytes()
    # query --counts answers as count() does.
    q = np.concatenate([keys[:1500], keys[2500:3500], u64(500, start=2**40)])
    q.astype("<u8").tofile(tmp_path / "q.u64")
    out = json.loads(run(cli, "--json", "query", tmp_path / "ours.blf", tmp_path / "q.u64",
                         "--format", "u64", "--counts").stdout)
    cli_counts = [int(a["count"] or 0) for a in out["answers"]]  # null: absent
    assert cli_counts == ours.count(q).tolist()


def test_cli_refuses_like_us(cli, tmp_path):
    f = bloomlanes.CountingFilter(blocks=32, layout="8x32", key_type="u64")
    f.insert(u64(200))
    f.save(tmp_path / "c.blf")
    absent = np.array([k for k in range(2**40, 2**40 + 200)
                       if f.count(np.array([k], np.uint64))[0] == 0][:5], dtype=np.uint64)
    absent.astype("<u8").tofile(tmp_path / "absent.u64")
    r = subprocess.run([cli, "delete", tmp_path / "c.blf", tmp_path / "absent.u64", "--format",
                        "u64", "--strict"], capture_output=True, text=True)
    assert r.returncode != 0 and "nothing was written" in r.stderr
    with pytest.raises(ValueError, match="5 of 5 keys are not in the filter"):
        f.delete(absent, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="left as they are"):
            f.delete(absent)


def test_files_are_written_under_the_write_lock(tmp_path):
    import concurrent.futures
    import threading

    path = tmp_path / "c.blf"
    bloomlanes.Filter(100, key_type="u64").save(path)
    f = bloomlanes.CountingFilter(100, key_type="u64")
    f.insert(u64(10))
    locked, done = threading.Barrier(2), threading.Event()

    def writer():  # another thread holds c.blf's write lock until done
        with bloomlanes.Filter.update(path):
            locked.wait()
            done.wait(10)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        held = pool.submit(writer)
        locked.wait(10)
        try:
            with pytest.raises(BlockingIOError, match=r"c\.blf"):
                f.save(path, wait=False)
        finally:
            done.set()
        held.result()
    f.save(path, wait=False)
    assert bloomlanes.CountingFilter.load(path) == f


def test_cli_same_stable_files(cli, tmp_path):
    keys = np.arange(0, 40_000, 3, dtype=np.uint64)
    keys.astype("<u8").tofile(tmp_path / "keys.u64")
    run(cli, "build", tmp_path / "keys.u64", "-o", tmp_path / "cli.blf", "--format", "u64",
        "--kind", "stable", "--layout", "16x32", "--capacity", 5000, "--fpp", 0.02)
    cli_filter = bloomlanes.CountingFilter.load(tmp_path / "cli.blf")
    assert cli_filter.kind == "stable"
    ours = bloomlanes.CountingFilter(blocks=cli_filter.params["blocks"], layout="16x32",
                                     kind="stable", decrements=cli_filter.decrements)
    ours.insert(keys)
    assert ours.to_bytes() == (tmp_path / "cli.blf").read_bytes()


def test_counting_union_adds_counts():
    a = bloomlanes.CountingFilter(blocks=32, layout="8x32", key_type="u64")
    b = bloomlanes.CountingFilter(blocks=16, layout="8x32")
    a.insert(u64(500))
    a.insert(u64(100))
    b.insert(u64(300, start=400))
    u = a | b
    one = bloomlanes.CountingFilter(blocks=16, layout="8x32", key_type="u64")
    for part in (u64(500), u64(100), u64(300, start=400)):
        one.insert(part)
    assert u == one and u.key_count == 900
    assert (u.count(u64(100)) >= 2).all()
    stable = bloomlanes.CountingFilter(blocks=16, layout="8x32", kind="stable", decrements=2)
    with pytest.raises(bloomlanes.IncompatibleFiltersError, match="does not merge"):
        stable | stable
