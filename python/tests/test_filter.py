"""The Filter API: sizing, files, memory maps, pickling, set operations, stats, Parquet form and
bad input (exceptions with the Rust messages, never a crash)."""

import copy
import os
import pickle

import numpy as np
import pyarrow as pa
import pytest

import bloomlanes
from bloomlanes import FormatError, IncompatibleFiltersError, KeyTypeError


def u64(n, start=0):
    return np.arange(start, start + n, dtype=np.uint64)


def test_sizing():
    f = bloomlanes.Filter(1_000_000, 0.01)
    s = f.stats()
    assert s["expected_fpr"] == 1.0 or s["keys"] == 0
    f.insert(u64(1_000_000))
    assert f.stats()["expected_fpr"] <= 0.01
    g = bloomlanes.Filter(1_000_000, bits_per_key=8)
    assert g.layout == "8x32" and abs(g.nbytes * 8 / 1e6 - 8) < 0.01
    h = bloomlanes.Filter(1000, 0.01, layout="16x64", seed=5, key_type="i64")
    assert (h.layout, h.seed, h.key_type) == ("16x64", 5, "i64")
    assert h.params == {"layout": "16x64", "blocks": h.blocks, "seed": 5, "key_type": "i64"}
    assert bloomlanes.Filter.with_params(**h.params).params == h.params
    assert bloomlanes.Filter(10).key_type is None


@pytest.mark.parametrize("kwargs,msg", [
    (dict(fpr=1.5), "false-positive rate 1.5 must be between 0 and 1"),
    (dict(bits_per_key=-1), "bits per key -1 must be a positive finite number"),
    (dict(fpr=0.1, bits_per_key=3), "not both"),
    (dict(layout="9x9"), "unknown layout"),
    (dict(key_type="u128"), "unknown key type"),
])
def test_bad_sizing(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        bloomlanes.Filter(1000, **kwargs)


def test_insert_contains_numpy_and_false_positive_rate():
    f = bloomlanes.Filter(100_000, 0.01, key_type="u64")
    f.insert(u64(100_000))
    assert f.contains(u64(100_000)).all()
    rate = f.contains(u64(200_000, start=10**12)).mean()
    assert rate < 0.02
    assert f.key_count == 100_000


def test_save_load_mmap_and_copy_on_write(tmp_path):
    f = bloomlanes.Filter(50_000, 0.01, key_type="bytes")
    f.insert([f"k{i}" for i in range(50_000)])
    path = tmp_path / "k.blf"
    f.save(path)
    data = path.read_bytes()
    assert data == f.to_bytes() and data[:8] == b"BLMLANES"
    m = bloomlanes.Filter.load(path)
    assert m.path == str(path) and m.stats()["memory_mapped"]
    assert m == f and m.contains(["k1", "k49999"]).all()
    m2 = bloomlanes.Filter.load(str(path), mmap=False, verify=False)
    assert m2.path is None and m2 == f
    # The first change copies the mapped filter into memory; the file stays as it was.
    m.insert(["new"])
    assert m.path is None and "new" in m and m.key_count == 50_001
    assert path.read_bytes() == data
    # Saving over a mapped file leaves the map readable (a new file is renamed over it).
    m3 = bloomlanes.Filter.load(path)
    m.save(path)
    assert m3 == f and bloomlanes.Filter.load(path) == m


def test_pickle_copy_roundtrip(tmp_path):
    f = bloomlanes.Filter(10_000, 0.001, layout="16x32", seed=9, key_type="i32")
    f.insert(np.arange(-5000, 5000, dtype=np.int32))
    for g in (pickle.loads(pickle.dumps(f)), copy.copy(f), copy.deepcopy(f), f.copy()):
        assert g == f and g.to_bytes() == f.to_bytes() and g is not f
        assert (g.layout, g.seed, g.key_type, g.key_count) == ("16x32", 9, "i32", 10_000)
    f.save(tmp_path / "m.blf")
    mapped = bloomlanes.Filter.load(tmp_path / "m.blf")
    assert pickle.loads(pickle.dumps(mapped)) == f
    c = f.copy()
    c.insert(np.array([10**6], dtype=np.int32))
    assert c != f


def test_union_intersection():
    a = bloomlanes.Filter.with_params("8x64", 200, key_type="u64")
    b = a.empty_like()
    a.insert(u64(1000))
    b.insert(u64(1000, start=500))
    both = bloomlanes.Filter.with_params("8x64", 200, key_type="u64")
    both.insert(u64(1500))
    u = a | b
    # The union records the sum of the counts: the bytes of a one-shot build of both inputs.
    once = bloomlanes.Filter.with_params("8x64", 200, key_type="u64")
    once.insert(u64(1000))
    once.insert(u64(1000, start=500))
    assert u.to_bytes() == once.to_bytes() and u.key_count == 2000
    assert u.to_bytes()[64:] == both.to_bytes()[64:]
    # A filter of twice the blocks is folded first: still the one-shot build's bytes.
    big = bloomlanes.Filter.with_params("8x64", 400, key_type="u64")
    big.insert(u64(1000))
    assert (big | b).to_bytes() == once.to_bytes() and (b | big).blocks == 200
    i = a & b
    assert i.contains(u64(500, start=500)).all()
    c = a.copy()
    c |= b
    assert c.to_bytes()[64:] == both.to_bytes()[64:]
    d = a.copy()
    d &= b
    assert d == i
    x = a.copy()
    x |= x
    assert x.to_bytes()[64:] == a.to_bytes()[64:]
    # A filter without a key type takes the other's.
    e = bloomlanes.Filter.with_params("8x64", 200)
    e |= a
    assert e.key_type == "u64"


@pytest.mark.parametrize("other,msg", [
    (bloomlanes.Filter.with_params("8x32", 200, key_type="u64"), "layout 8x64 vs 8x32"),
    (bloomlanes.Filter.with_params("8x64", 201, key_type="u64"), "200 blocks vs 201"),
    (bloomlanes.Filter.with_params("8x64", 200, seed=1, key_type="u64"), "seed 0 vs 1"),
    (bloomlanes.Filter.with_params("8x64", 200, key_type="bytes"), "keys of type u64 vs bytes"),
])
def test_incompatible_filters(other, msg):
    a = bloomlanes.Filter.with_params("8x64", 200, key_type="u64")
    with pytest.raises(IncompatibleFiltersError, match=msg):
        a | other
    with pytest.raises(ValueError, match=msg):
        a &= other
    with pytest.raises(TypeError):
        a | 3


def test_key_type_mismatch_is_refused():
    f = bloomlanes.Filter(1000, key_type="u64")
    f.insert(u64(10))
    with pytest.raises(KeyTypeError, match="keys of type i64 do not match the filter's key type u64"):
        f.contains(np.arange(10, dtype=np.int64))
    with pytest.raises(KeyTypeError, match="every present key would be reported absent"):
        f.contains(["a"])
    with pytest.raises(KeyTypeError, match="u32"):
        f.insert(pa.array([1, 2], type=pa.uint32()))
    with pytest.raises(KeyTypeError):
        f.contains(np.array([1.0]))
    s = bloomlanes.Filter(1000)
    s.insert(["x"])
    with pytest.raises(KeyTypeError, match="keys of type u64 do not match the filter's key type bytes"):
        s.contains(u64(3))
    fixed = bloomlanes.Filter(100, key_type="fixed:4")
    with pytest.raises(KeyTypeError, match="fixed:4"):
        fixed.insert([b"abc"])


@pytest.mark.parametrize("keys,err,msg", [
    (np.array([True, False]), TypeError, "booleans are not keys"),
    (np.arange(4, dtype=np.int16), TypeError, "only 32- and 64-bit integers"),
    (np.array(["a", "b"]), TypeError, "UTF-32"),
    (np.zeros((2, 2), dtype=np.uint64), TypeError, "1-D array"),
    (np.array(["2020-01-01"], dtype="datetime64[s]"), TypeError, "datetime64"),
    (np.array(["NaT"], dtype="datetime64[ms]"), ValueError, "NaT at index 0"),
    (np.array([10**10], dtype="datetime64[D]"), ValueError, "does not fit Parquet DATE"),
    (np.arange(3, dtype=">u8"), TypeError, "big-endian"),
    ([1, 2, 3], TypeError, "Python ints carry no width"),
    (["a", 1], TypeError, "key at index 1 is a int"),
    ([None], TypeError, "keys must be bytes, str, int or float"),
    (object(), TypeError, "not object"),
    (pa.array([True]), TypeError, "unsupported Arrow type"),
    (pa.array([1], type=pa.date64()), TypeError, "date64"),
])
def test_bad_keys(keys, err, msg):
    f = bloomlanes.Filter(100)
    with pytest.raises(err, match=msg):
        f.insert(keys)
    assert f.key_count == 0 and f.key_type is None


def test_dictionary_encoded_keys_are_their_values():
    """A categorical column (pandas ``category``, a pyarrow dictionary array or chunked array)
    holds its values as keys, not its codes: the same filter as the decoded column."""
    words = ["10.0.0.%d" % (i % 7) for i in range(100)]
    plain = bloomlanes.Filter(1000)
    plain.insert(words)
    encoded = pa.array(words).dictionary_encode()
    forms = [encoded, pa.chunked_array([encoded.slice(0, 40), encoded.slice(40)])]
    pd = pytest.importorskip("pandas")
    forms += [pd.Series(words).astype("category")]
    for keys in forms:
        f = bloomlanes.Filter(1000)
        f.insert(keys)
        assert f.to_bytes() == plain.to_bytes(), type(keys)
        assert f.contains(keys).all()
    # Integer categories with a null: exact past 2^53 and the null kept (numpy would make
    # them float64 and NaN), so the filter is that of the plain Arrow column.
    big = [2**60 + 1, None, 2**60 + 3]
    g = bloomlanes.Filter(1000, key_type="i64")
    g.insert(pd.Series(big, dtype="Int64").astype("category"))
    plain = bloomlanes.Filter(1000, key_type="i64")
    plain.insert(pa.array(big, pa.int64()))
    assert g.to_bytes() == plain.to_bytes()
    assert not g.contains(np.array([2**60 + 2], dtype=np.int64))[0]


def test_non_contiguous_and_misaligned_arrays_are_read_correctly():
    base = np.arange(100, dtype=np.uint64)
    f = bloomlanes.Filter(1000, key_type="u64")
    f.insert(base[::2])
    g = bloomlanes.Filter(1000, key_type="u64")
    g.insert(base[::2].copy())
    assert f == g
    raw = np.zeros(801, dtype=np.uint8)
    raw[1:] = base.view(np.uint8)
    misaligned = raw[1:].view(np.uint64)
    h = bloomlanes.Filter(1000, key_type="u64")
    h.insert(misaligned)
    k = bloomlanes.Filter(1000, key_type="u64")
    k.insert(base)
    assert h == k


def corrupt_cases(good: bytes):
    flip = bytearray(good)
    flip[100] ^= 1
    head = bytearray(good)
    head[12] ^= 1
    return [
        (b"", "truncated: needs 64 bytes, has 0"),
        (good[:63], "truncated: needs 64 bytes, has 63"),
        (good[:-1], f"truncated: needs {len(good)} bytes, has {len(good) - 1}"),
        (good + b"\0", "1 unexpected bytes after the payload"),
        (b"NOTBLOOM" + good[8:], "bad magic at byte 0"),
        (bytes(flip), "payload checksum mismatch"),
        (bytes(head), "header checksum mismatch"),
    ]


def test_corrupt_files(tmp_path):
    f = bloomlanes.Filter(1000, key_type="u64")
    f.insert(u64(1000))
    good = f.to_bytes()
    for i, (data, msg) in enumerate(corrupt_cases(good)):
        with pytest.raises(FormatError, match=msg):
            bloomlanes.Filter.from_bytes(data)
        p = tmp_path / f"bad{i}.blf"
        p.write_bytes(data)
        for mmap in (True, False):
            with pytest.raises(FormatError, match=msg) as e:
                bloomlanes.Filter.load(p, mmap=mmap)
            assert str(p) in str(e.value)
    with pytest.raises(FileNotFoundError, match="missing.blf"):
        bloomlanes.Filter.load(tmp_path / "missing.blf")
    with pytest.raises(OSError):
        f.save(tmp_path / "no" / "such" / "dir.blf")
    # verify=False skips the payload checksum only.
    p = tmp_path / "flip.blf"
    p.write_bytes(corrupt_cases(good)[5][0])
    assert bloomlanes.Filter.load(p, verify=False).blocks == f.blocks


def test_parquet_form():
    f = bloomlanes.Filter(10_000, 0.01, layout="8x32", key_type="bytes")
    f.insert([f"v{i}" for i in range(10_000)])
    pq = f.to_parquet_bytes()
    g = bloomlanes.Filter.from_parquet_bytes(pq, key_type="bytes")
    assert g.to_bytes()[64:] == f.to_bytes()[64:] and g.key_type == "bytes"
    assert g.contains(["v1", "v9999"]).all()
    assert g.to_parquet_bytes() == pq
    with pytest.raises(FormatError, match="unexpected bytes after the Parquet bloom filter"):
        bloomlanes.Filter.from_parquet_bytes(pq + b"x")
    with pytest.raises(FormatError, match="Parquet bloom filter header"):
        bloomlanes.Filter.from_parquet_bytes(pq[:3])
    with pytest.raises(FormatError, match="8x32"):
        bloomlanes.Filter(100, layout="16x64").to_parquet_bytes()


def test_stats_and_repr():
    f = bloomlanes.Filter(1000, 0.01, layout="8x32", key_type="u64")
    f.insert(u64(1000))
    s = f.stats()
    for k in ("layout", "blocks", "bytes", "seed", "hash", "recorded_keys", "set_bits",
              "fill_ratio", "estimated_keys", "expected_fpr", "bits_per_key",
              "parquet_compatible", "fpr_from_bits", "memory_mapped"):
        assert k in s
    assert s["recorded_keys"] == 1000 and s["parquet_compatible"] and s["hash"] == "xxh64"
    assert 900 < s["estimated_keys"] < 1100 and 0 < s["fill_ratio"] < 1
    assert "key_type='u64'" in repr(f)
    f.clear()
    assert f.stats()["set_bits"] == 0 and f.key_count == 0
    f.key_count = None
    assert f.key_count is None


def test_threads_setting():
    bloomlanes.set_threads(1)
    assert bloomlanes.threads() == 1
    bloomlanes.set_threads(0)
    assert 1 <= bloomlanes.threads() <= (os.cpu_count() or 1)
    assert bloomlanes.simd_path() in ("avx512", "avx2", "sse2", "portable", "scalar")


def test_pickle_keeps_a_pending_key_type():
    """A filter made without a key type learns it from its first keys, also after a trip
    through pickle (as Dask ships empty shards to the workers)."""
    f = pickle.loads(pickle.dumps(bloomlanes.Filter(100)))
    f.insert(np.arange(3, dtype=np.uint64))
    assert f.key_type == "u64"
    g = pickle.loads(pickle.dumps(f))
    with pytest.raises(KeyTypeError):
        g.insert(["x"])
