"""Every key type against the independent reference model and the Rust golden vectors."""

import struct

import numpy as np
import pyarrow as pa
import pytest

import bloomlanes
import reference as ref

SHAPES = [("8x32", 7, 0), ("16x64", 5, 42), ("8x64", 3, 7), ("16x32", 4, 0)]


def built(layout, blocks, seed, key_type, keys):
    f = bloomlanes.Filter.with_params(layout, blocks, seed=seed, key_type=key_type)
    f.insert(keys)
    return f


def expected_image(layout, blocks, seed, encoded):
    return ref.image(layout, blocks, [ref.xxh64(b, seed) for b in encoded])


def test_reference_xxh64_matches_golden_hashes(golden_path):
    lines = [l for l in ref.golden(golden_path) if l[0] == "hash"]
    assert len(lines) > 80
    for _, seed, keyhex, h in lines:
        key = b"" if keyhex == "-" else bytes.fromhex(keyhex)
        assert ref.xxh64(key, int(seed)) == int(h, 16), (seed, keyhex)


def test_golden_filters(golden_path):
    lines = [l for l in ref.golden(golden_path) if l[0] == "filter"]
    assert len(lines) == 32
    for _, layout, blocks, seed, n, imagehex in lines:
        blocks, seed, n = int(blocks), int(seed), int(n)
        f = built(layout, blocks, seed, "u64", np.arange(n, dtype=np.uint64))
        assert f.to_bytes()[64:] == bytes.fromhex(imagehex), (layout, blocks, seed)
        # The reference model agrees too (so the model is right for the other key types).
        enc = [k.to_bytes(8, "little") for k in range(n)]
        assert expected_image(layout, blocks, seed, enc) == bytes.fromhex(imagehex)


rng = np.random.default_rng(12345)
N = 300


def int_cases():
    u64 = rng.integers(0, 2**64, N, dtype=np.uint64)
    i64 = rng.integers(-(2**63), 2**63, N, dtype=np.int64)
    u32 = rng.integers(0, 2**32, N, dtype=np.uint32)
    i32 = rng.integers(-(2**31), 2**31, N, dtype=np.int32)
    return [
        ("u64", u64, [int(x).to_bytes(8, "little") for x in u64], pa.uint64()),
        ("i64", i64, [int(x).to_bytes(8, "little", signed=True) for x in i64], pa.int64()),
        ("u32", u32, [int(x).to_bytes(4, "little") for x in u32], pa.uint32()),
        ("i32", i32, [int(x).to_bytes(4, "little", signed=True) for x in i32], pa.int32()),
    ]


@pytest.mark.parametrize("layout,blocks,seed", SHAPES)
@pytest.mark.parametrize("case", int_cases(), ids=lambda c: c[0])
def test_integer_keys(case, layout, blocks, seed):
    kt, arr, enc, patype = case
    want = expected_image(layout, blocks, seed, enc)
    for keys in (arr, pa.array(arr, type=patype), pa.chunked_array([arr[:100], arr[100:]]),
                 [int(x) for x in arr]):
        f = built(layout, blocks, seed, kt, keys)
        assert f.to_bytes()[64:] == want, type(keys)
        assert f.key_type == kt and f.key_count == N
    # Lookups: every key found, and absent keys answered exactly as the reference model does.
    f = built(layout, blocks, seed, kt, arr)
    assert f.contains(arr).all()
    other = case[1][::-1] ^ arr.dtype.type(0x5A5A5A5A)
    other_enc = [x.tobytes() for x in other]
    got = f.contains(other)
    model = [ref.contains(layout, blocks, want, ref.xxh64(b, seed)) for b in other_enc]
    assert got.tolist() == model


@pytest.mark.parametrize("layout,blocks,seed", SHAPES[:2])
@pytest.mark.parametrize("kt,dtype,fmt,patype", [
    ("f64", np.float64, "<d", pa.float64()), ("f32", np.float32, "<f", pa.float32())])
def test_float_keys_hash_raw_bits(kt, dtype, fmt, patype, layout, blocks, seed):
    arr = rng.normal(size=N).astype(dtype)
    arr[:3] = [0.0, -0.0, np.nan]
    enc = [x.tobytes() for x in arr]
    want = expected_image(layout, blocks, seed, enc)
    for keys in (arr, pa.array(arr, type=patype)):
        assert built(layout, blocks, seed, kt, keys).to_bytes()[64:] == want
    if kt == "f64":
        assert built(layout, blocks, seed, kt, [float(x) for x in arr]).to_bytes()[64:] == want


def test_float_lookup_rule():
    for dtype in (np.float64, np.float32):
        f = bloomlanes.Filter(1000, 0.0001)
        f.insert(np.array([0.0, 1.5], dtype=dtype))
        got = f.contains(np.array([-0.0, 0.0, 1.5, np.nan, 2.5], dtype=dtype))
        assert got.tolist() == [True, True, True, True, False]
        g = bloomlanes.Filter(1000, 0.0001)
        g.insert(np.array([-0.0], dtype=dtype))
        assert g.contains(np.array([0.0], dtype=dtype)).tolist() == [True]
        assert g.contains(np.array([np.nan], dtype=dtype), bitmap=True).tolist() == [1]


@pytest.mark.parametrize("unit,kt", [("ms", "timestamp-ms"), ("us", "timestamp-us"),
                                     ("ns", "timestamp-ns")])
def test_timestamp_keys(unit, kt):
    ints = rng.integers(-(2**40), 2**40, N, dtype=np.int64)
    arr = ints.astype(f"datetime64[{unit}]")
    enc = [int(x).to_bytes(8, "little", signed=True) for x in ints]
    want = expected_image("8x32", 9, 0, enc)
    for keys in (arr, pa.array(ints, type=pa.timestamp(unit)),
                 pa.array(ints, type=pa.timestamp(unit, tz="UTC"))):
        assert built("8x32", 9, 0, kt, keys).to_bytes()[64:] == want
    f = built("8x32", 9, 0, None, arr)
    assert f.key_type == kt


def test_date_keys():
    days = rng.integers(-50000, 50000, N, dtype=np.int32)
    enc = [int(x).to_bytes(4, "little", signed=True) for x in days]
    want = expected_image("16x32", 6, 3, enc)
    for keys in (days.astype("datetime64[D]"), pa.array(days, type=pa.date32())):
        f = built("16x32", 6, 3, "date", keys)
        assert f.to_bytes()[64:] == want
    assert built("16x32", 6, 3, None, days.astype("datetime64[D]")).key_type == "date"


def text_keys():
    keys = ["", "a", "bloomlanes", "ünïcödé ✓", "x" * 31, "y" * 32, "z" * 33, "w" * 200]
    keys += [f"key-{i}" for i in range(N)]
    return keys


@pytest.mark.parametrize("layout,blocks,seed", SHAPES)
def test_bytes_keys_every_form(layout, blocks, seed):
    keys = text_keys()
    enc = [k.encode() for k in keys]
    want = expected_image(layout, blocks, seed, enc)
    forms = [
        keys,
        enc,
        tuple(keys),
        np.array(keys, dtype=object),
        pa.array(keys, type=pa.string()),
        pa.array(keys, type=pa.large_string()),
        pa.array(enc, type=pa.binary()),
        pa.array(enc, type=pa.large_binary()),
        pa.chunked_array([keys[:5], keys[5:100], [], keys[100:]], type=pa.string()),
        pa.array(keys).slice(0),  # offset 0 slice
    ]
    for form in forms:
        f = built(layout, blocks, seed, "bytes", form)
        assert f.to_bytes()[64:] == want, type(form)
    # A sliced Arrow array (non-zero offset) reads the right keys.
    sliced = pa.array(["pad", "pad2"] + keys).slice(2)
    assert built(layout, blocks, seed, "bytes", sliced).to_bytes()[64:] == want
    f = built(layout, blocks, seed, None, pa.array(keys))
    assert f.key_type == "bytes"
    assert f.contains(pa.array(keys, type=pa.large_string())).all()
    assert f.contains(keys).all()


def test_arrow_nulls_skipped_and_absent():
    keys = ["a", None, "b", None, "c"]
    f = bloomlanes.Filter.with_params("8x32", 64, key_type="bytes")
    f.insert(pa.array(keys))
    g = bloomlanes.Filter.with_params("8x32", 64, key_type="bytes")
    g.insert(["a", "b", "c"])
    assert f == g and f.key_count == 3
    assert f.contains(pa.array(keys)).tolist() == [True, False, True, False, True]
    assert f.contains(pa.array(keys), bitmap=True).tolist() == [0b10101]
    ints = pa.array([1, None, 3], type=pa.int64())
    h = bloomlanes.Filter.with_params("8x32", 64, key_type="i64")
    h.insert(ints)
    assert h.key_count == 2 and h.contains(ints).tolist() == [True, False, True]


@pytest.mark.parametrize("width", [1, 13, 16])
def test_fixed_bytes(width):
    raw = rng.integers(0, 256, N * width, dtype=np.uint8).tobytes()
    enc = [raw[i * width:(i + 1) * width] for i in range(N)]
    want = expected_image("8x64", 5, 0, enc)
    kt = f"fixed:{width}"
    forms = [np.frombuffer(raw, dtype=f"S{width}"), np.frombuffer(raw, dtype=f"V{width}"),
             pa.array(enc, type=pa.binary(width)), enc]
    for form in forms:
        assert built("8x64", 5, 0, kt, form).to_bytes()[64:] == want, type(form)
    assert built("8x64", 5, 0, None, forms[0]).key_type == kt


def test_large_batches_every_path_agrees():
    """300k keys: the chunked (32-bit offsets), direct (64-bit offsets) and list paths, on one
    thread and on every core, leave the same bits; so do the u64 and u32 paths."""
    n = 300_000
    keys = [f"k{i:07d}" for i in range(n)]
    results = []
    for threads in (1, 0):
        bloomlanes.set_threads(threads)
        for form in (pa.array(keys), pa.array(keys, type=pa.large_string()), keys):
            f = bloomlanes.Filter(n, 0.01, layout="8x32", key_type="bytes")
            f.insert(form)
            results.append(f.to_bytes())
            assert f.contains(form).all()
            assert f.contains(form, bitmap=True).tolist() == [255] * (n // 8)
    assert all(r == results[0] for r in results)
    arr = np.arange(n, dtype=np.uint32)
    a = bloomlanes.Filter(n, 0.01, key_type="u32")
    a.insert(arr)
    b = bloomlanes.Filter(n, 0.01, key_type="u32")
    b.insert(pa.chunked_array([arr[:1000], arr[1000:]]))
    assert a == b and a.contains(arr).all()


def test_bitmap_matches_bool_answers():
    f = bloomlanes.Filter(1000, 0.2, key_type="u64")
    f.insert(np.arange(1000, dtype=np.uint64))
    for n in (0, 1, 63, 64, 65, 1000, 5000):
        q = np.arange(500, 500 + n, dtype=np.uint64)
        bools = f.contains(q)
        bits = f.contains(q, bitmap=True)
        assert bits.dtype == np.uint8 and len(bits) == (n + 7) // 8
        assert np.array_equal(np.unpackbits(bits, bitorder="little")[:n].astype(bool), bools)


def test_scalar_membership():
    f = bloomlanes.Filter(100, 0.001, key_type="u64")
    f.insert(np.array([7, 9], dtype=np.uint64))
    assert 7 in f and 9 in f and np.uint64(7) in f and 8 not in f
    s = bloomlanes.Filter(100, 0.001)
    s.insert("alice")
    assert "alice" in s and b"alice" in s and "bob" not in s
    assert struct.pack("<Q", 1) not in s
