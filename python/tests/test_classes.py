"""SpatialFilter (which class) and Retrieval (which value): answers equal to core's (the scalar
path, BLOOMLANES_SIMD=scalar, runs the core's reference in a second interpreter), the class
guarantees, files, pickling and bad input."""

import copy
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

import bloomlanes
from bloomlanes import FormatError, KeyTypeError

CLASSES = ["allow", "mirror", "deny"]


def spatial(n=30_000, seed=0, **kw):
    """A filter with keys 0..n in classes 1, 2, 3 by key % 3 (+ 1), sized for n keys."""
    f = bloomlanes.SpatialFilter(CLASSES, n, 0.01, seed=seed, **kw)
    keys = np.arange(n, dtype=np.uint64)
    classes = (keys % 3 + 1).astype(np.uint8)
    f.insert(keys, classes)
    return f, keys, classes


def in_scalar_interpreter(code, *args):
    """Runs `code` in a fresh interpreter on the scalar path (the core's reference)."""
    env = dict(os.environ, BLOOMLANES_SIMD="scalar")
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, check=True,
                         capture_output=True, text=True)
    return out.stdout


def scalar_twin(tmp_path, saved, code):
    """Saves `saved` as simd.blf, runs `code` on the scalar path with the arguments scalar.blf
    (to write) and simd.blf (to read), checks both files are byte for byte the same and returns
    what `code` printed."""
    saved.save(tmp_path / "simd.blf")
    out = in_scalar_interpreter(code, str(tmp_path / "scalar.blf"), str(tmp_path / "simd.blf"))
    assert (tmp_path / "scalar.blf").read_bytes() == (tmp_path / "simd.blf").read_bytes()
    return out


def test_spatial_classes_never_too_low_and_absent_rate():
    f, keys, classes = spatial()
    got = f.classify(keys)
    assert got.dtype == np.uint16 and got.shape == keys.shape
    assert (got >= classes).all(), "a key of class c is never reported below c"
    assert (got <= 3).all()
    # Most keys come back in their own class (emersion is rare at 1 % fpr).
    assert (got == classes).mean() > 0.95
    absent = f.classify(np.arange(10**6, 10**6 + 200_000, dtype=np.uint64))
    rate = (absent != 0).mean()
    assert 0 < rate < 0.02, rate
    assert f.class_names == CLASSES
    assert f.keys_per_class == [10_000, 10_000, 10_000] and f.key_count == 30_000
    assert f.cell_bits == 4


def test_spatial_bulk_equals_per_key_and_core_scalar(tmp_path):
    f, keys, classes = spatial(20_000, seed=7)
    probe = np.arange(0, 40_000, dtype=np.uint64)
    bulk = f.classify(probe)
    per_key = [f.classify([int(k)])[0] for k in probe[::97]]
    assert list(bulk[::97]) == per_key
    assert [int(k) in f for k in probe[::97]] == [c != 0 for c in per_key]
    assert (f.contains(probe) == (bulk != 0)).all(), "projection answers = class > 0"
    # The same inserts and lookups on the scalar path (core's reference), in another interpreter.
    code = (
        "import sys, numpy as np, bloomlanes\n"
        "assert bloomlanes.simd_path() == 'scalar'\n"
        "f = bloomlanes.SpatialFilter(['allow','mirror','deny'], 20000, 0.01, seed=7)\n"
        "k = np.arange(20000, dtype=np.uint64)\n"
        "f.insert(k, (k % 3 + 1).astype(np.uint8))\n"
        "f.save(sys.argv[1])\n"
        "g = bloomlanes.SpatialFilter.load(sys.argv[2])\n"
        "print(g.classify(np.arange(40000, dtype=np.uint64)).tobytes().hex())\n"
    )
    out = scalar_twin(tmp_path, f, code)
    assert bytes.fromhex(out.strip()) == bulk.tobytes()


def test_spatial_projection_is_the_static_filter():
    f, keys, _ = spatial(5_000, seed=3, layout="16x64")
    assert f.params["layout"] == "16x64" and f.params["seed"] == 3
    static = bloomlanes.Filter.with_params(**f.params)
    static.insert(keys)
    assert f.to_filter() == static


def test_spatial_insert_forms_and_order_independence():
    keys = np.arange(3_000, dtype=np.uint64)
    a = bloomlanes.SpatialFilter(CLASSES, blocks=64, layout="8x32", key_type="u64")
    a.insert(keys[:1000], "allow")
    a.insert(keys[1000:2000], 2)
    a.insert(pa.chunked_array([pa.array(keys[2000:2500]), pa.array(keys[2500:])]), "deny")
    b = bloomlanes.SpatialFilter(CLASSES, blocks=64, layout="8x32", key_type="u64")
    order = np.random.default_rng(1).permutation(3_000)
    b.insert(keys[order], (np.minimum(keys[order] // 1000, 2) + 1).astype(np.int64))
    assert a == b, "max commutes: any insertion order gives the same cells"
    assert a.to_bytes() == b.to_bytes()
    # One class name per key, as a rule table's class column is read: the same cells.
    names = np.array(CLASSES)[np.minimum(keys[order] // 1000, 2)]
    for column in (names, names.tolist(), names.astype(object), pa.array(names.tolist()),
                   pa.array(names.tolist()).dictionary_encode(), names.astype("S")):
        c = bloomlanes.SpatialFilter(CLASSES, blocks=64, layout="8x32", key_type="u64")
        c.insert(keys[order], column)
        assert c.to_bytes() == a.to_bytes(), type(column)


def test_spatial_string_keys_and_learned_key_type():
    f = bloomlanes.SpatialFilter(["low", "high"], 100)
    assert f.key_type is None
    f.insert(["a", "b", "c"], "low")
    f.insert(pa.array(["x", "y"]), "high")
    assert f.key_type == "bytes"
    assert list(f.classify(["a", "x", "nope"]))[:2] == [1, 2]
    with pytest.raises(KeyTypeError):
        f.classify(np.arange(3, dtype=np.uint64))
    nulls = f.classify(pa.array(["a", None, "x"]))
    assert list(nulls) == [1, 0, 2]


def test_spatial_stats():
    f, _, _ = spatial()
    s = f.stats()
    assert s["recorded_keys"] == 30_000 and s["cell_bits"] == 4
    rows = s["classes"]
    assert [r["name"] for r in rows] == CLASSES and [r["class"] for r in rows] == [1, 2, 3]
    assert all(r["keys"] == 10_000 and r["cells"] > 0 for r in rows)
    assert rows[2]["expected_emersion"] == 0, "the top class cannot emerge"
    assert all(0 < r["expected_fpr"] < 0.01 for r in rows)
    json.dumps(s)


def test_spatial_files_pickle_bytes(tmp_path):
    f, keys, _ = spatial(2_000)
    path = tmp_path / "c.blf"
    f.save(path)
    g = bloomlanes.SpatialFilter.load(path)
    assert g == f and g.class_names == CLASSES
    assert (g.classify(keys) == f.classify(keys)).all()
    for h in (pickle.loads(pickle.dumps(f)), copy.copy(f), copy.deepcopy(f),
              bloomlanes.SpatialFilter.from_bytes(f.to_bytes())):
        assert h == f
    pending = bloomlanes.SpatialFilter(["a"], 10)
    p = pickle.loads(pickle.dumps(pending))
    p.insert(np.arange(3, dtype=np.int32), "a")
    assert p.key_type == "i32"
    # Not a spatial file; a static one; a truncated one.
    with pytest.raises(FormatError):
        bloomlanes.SpatialFilter.from_bytes(b"nonsense")
    static = bloomlanes.Filter(10)
    static.insert(np.arange(3, dtype=np.uint64))
    with pytest.raises(FormatError, match="spatial"):
        bloomlanes.SpatialFilter.from_bytes(static.to_bytes())
    (tmp_path / "cut.blf").write_bytes(path.read_bytes()[:-10])
    with pytest.raises(FormatError, match="cut.blf"):
        bloomlanes.SpatialFilter.load(tmp_path / "cut.blf")


@pytest.mark.parametrize("args,kwargs,err,msg", [
    ((["a"] * 2, 10), {}, ValueError, "given twice"),
    ((["allow", "deny "], 10), {}, ValueError, "white space"),
    (([], 10), {}, ValueError, "classes"),
    ((["c%d" % i for i in range(16)], 10), dict(cell_bits=4), ValueError, "do not fit"),
    ((["a"], 10), dict(cell_bits=5), ValueError, "4, 8 or 16"),
    ((["a"],), {}, ValueError, "capacity"),
    ((["a"], 10), dict(blocks=4), ValueError, "not both"),
    ((["a"],), dict(blocks=4), ValueError, "layout"),
])
def test_spatial_bad_construction(args, kwargs, err, msg):
    with pytest.raises(err, match=msg):
        bloomlanes.SpatialFilter(*args, **kwargs)


def test_spatial_wide_cells_by_default():
    f = bloomlanes.SpatialFilter(["c%d" % i for i in range(300)], 100)
    assert f.cell_bits == 16
    f.insert(np.arange(10, dtype=np.uint64), 300)
    assert (f.classify(np.arange(10, dtype=np.uint64)) == 300).all()


def test_spatial_classify_names():
    f, keys, classes = spatial(3_000)
    absent = np.arange(10**9, 10**9 + 3_000, dtype=np.uint64)
    both = np.concatenate([keys, absent])
    numbers = f.classify(both)
    names = f.classify(both, names=True)
    assert names.dtype == object and len(names) == len(both)
    for n, name in zip(numbers, names):
        assert name == (None if n == 0 else CLASSES[n - 1])
    assert (numbers[: len(keys)] > 0).all() and (numbers[len(keys):] == 0).any()
    with pytest.raises(ValueError, match="names=True"):
        f.classify(keys, names=True, out=np.zeros(len(keys), np.uint16))


def test_spatial_bad_inserts_change_nothing():
    f, keys, _ = spatial(1_000)
    before = f.to_bytes()
    with pytest.raises(ValueError, match='no class is called "block".*1 = allow'):
        f.insert(keys, "block")
    with pytest.raises(ValueError, match="class 4 does not exist"):
        f.insert(keys, 4)
    with pytest.raises(ValueError, match=r"classes\[5\] = 0 does not exist"):
        f.insert(keys[:10], np.array([1] * 5 + [0] + [1] * 4))
    with pytest.raises(ValueError, match="3 classes for 10 keys"):
        f.insert(keys[:10], [1, 2, 3])
    with pytest.raises(ValueError, match="negative"):
        f.insert(keys[:2], [1, -1])
    with pytest.raises(TypeError, match="unsigned integers"):
        f.insert(keys[:2], np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r'classes\[1\] = "block": no class is called that'):
        f.insert(keys[:3], ["allow", "block", "deny"])
    with pytest.raises(ValueError, match=r"classes\[2\] is null"):
        f.insert(keys[:3], pa.array(["allow", "deny", None]))
    with pytest.raises(ValueError, match=r"classes\[0\] is 1.5 \(float\), not a class name"):
        f.insert(keys[:2], np.array([1.5, "deny"], dtype=object))
    with pytest.raises(ValueError, match="2 classes for 3 keys"):
        f.insert(keys[:3], ["allow", "deny"])
    with pytest.raises(ValueError, match="null"):
        f.insert(pa.array([1, None], type=pa.uint64()), 1)
    with pytest.raises(KeyTypeError):
        f.insert(np.arange(3, dtype=np.int32), 1)
    with pytest.raises(KeyTypeError, match="float"):
        f.classify(np.array([0.0]))
    assert f.to_bytes() == before


def values_for(keys, bits=8):
    return ((keys * 2654435761) % (1 << bits)).astype(np.uint32)


def test_retrieval_every_built_key_returns_its_value():
    keys = np.arange(50_000, dtype=np.uint64) * 7
    values = values_for(keys, 12)
    t = bloomlanes.Retrieval.build(keys, values, value_bits=12, check_bits=8)
    got, found = t.get(keys)
    assert got.dtype == np.uint32 and found.dtype == np.bool_
    assert found.all() and (got == values).all()
    assert len(t) == 50_000 and t.value_bits == 12 and t.check_bits == 8 and t.key_type == "u64"
    other, other_found = t.get(np.arange(1, 200_001, 7, dtype=np.uint64))
    rate = other_found.mean()
    assert rate < 3 * 2**-8, rate
    assert (other[~other_found] == 0).all()
    assert int(keys[5]) in t
    s = t.stats()
    assert s["value_bits"] == 12 and s["recorded_keys"] == 50_000
    # At least v + f bits per key; small tables pay more than the x1.08 of large ones.
    assert 20 <= s["bits_per_key"] < 1.25 * 20 and s["expected_fpr"] == 2**-8
    assert s["bits_per_key"] * 50_000 <= t.nbytes * 8


def test_retrieval_bulk_equals_per_key_and_core_scalar(tmp_path):
    keys = np.arange(20_000, dtype=np.uint64)
    t = bloomlanes.Retrieval.build(keys, values_for(keys), seed=9)
    probe = np.arange(0, 40_000, dtype=np.uint64)
    values, found = t.get(probe)
    for k in probe[::101]:
        v, f = t.get([int(k)])
        assert (v[0], f[0]) == (values[k], found[k])
    code = (
        "import sys, numpy as np, bloomlanes\n"
        "assert bloomlanes.simd_path() == 'scalar'\n"
        "k = np.arange(20000, dtype=np.uint64)\n"
        "t = bloomlanes.Retrieval.build(k, ((k * 2654435761) % 256).astype(np.uint32), seed=9)\n"
        "t.save(sys.argv[1])\n"
        "v, f = bloomlanes.Retrieval.load(sys.argv[2]).get(np.arange(40000, dtype=np.uint64))\n"
        "print(v.tobytes().hex(), f.tobytes().hex())\n"
    )
    out = scalar_twin(tmp_path, t, code)
    v_hex, f_hex = out.split()
    assert bytes.fromhex(v_hex) == values.tobytes() and bytes.fromhex(f_hex) == found.tobytes()


def test_retrieval_keys_of_every_form():
    words = ["alpha", "beta", "gamma", "delta"]
    t = bloomlanes.Retrieval.build(words, [1, 2, 3, 4])
    assert t.value_bits == 3 and t.key_type == "bytes"
    assert list(t.get(pa.array(words))[0]) == [1, 2, 3, 4]
    v, f = t.get(pa.chunked_array([pa.array(["beta", None]), pa.array(["delta"])]))
    assert list(v) == [2, 0, 4] and list(f) == [True, False, True]
    # A repeated key with the same value is stored once.
    t2 = bloomlanes.Retrieval.build(np.array([5, 5, 6], dtype=np.int64), [1, 1, 2])
    assert len(t2) == 2 and list(t2.get(np.array([5, 6]))[0]) == [1, 2]


def test_retrieval_files_and_pickle(tmp_path):
    keys = np.arange(3_000, dtype=np.uint64)
    t = bloomlanes.Retrieval.build(keys, values_for(keys, 16), value_bits=16, check_bits=0)
    t.save(tmp_path / "r.blf")
    u = bloomlanes.Retrieval.load(tmp_path / "r.blf")
    assert u == t and (u.get(keys)[0] == t.get(keys)[0]).all()
    assert pickle.loads(pickle.dumps(t)) == t
    assert bloomlanes.Retrieval.from_bytes(t.to_bytes()) == t
    assert t.get(np.arange(10**6, 10**6 + 100, dtype=np.uint64))[1].all(), "no check bits"
    f, _, _ = spatial(100)
    with pytest.raises(FormatError, match="retrieval"):
        bloomlanes.Retrieval.from_bytes(f.to_bytes())
    data = bytearray(t.to_bytes())
    data[-70] ^= 1
    with pytest.raises(FormatError):
        bloomlanes.Retrieval.from_bytes(bytes(data))


def test_retrieval_bad_input():
    keys = np.arange(10, dtype=np.uint64)
    with pytest.raises(ValueError, match="value 256 of key 3 .index 3. does not fit in value_bits=8"):
        bloomlanes.Retrieval.build(keys, [0, 1, 2, 256] + [0] * 6, value_bits=8)
    with pytest.raises(ValueError, match="key 7 .index 4. repeats index 2 with another value .3 and 4."):
        bloomlanes.Retrieval.build(np.array([1, 2, 7, 9, 7], dtype=np.uint64), [1, 2, 3, 4, 4])
    with pytest.raises(ValueError, match='key "b" .index 2. repeats index 1'):
        bloomlanes.Retrieval.build(["a", "b", "b"], [1, 2, 3])
    with pytest.raises(ValueError, match="10 keys but 3 values"):
        bloomlanes.Retrieval.build(keys, [1, 2, 3])
    with pytest.raises(ValueError, match="negative"):
        bloomlanes.Retrieval.build(keys[:2], np.array([1, -2]))
    with pytest.raises(ValueError, match="over 2.32"):
        bloomlanes.Retrieval.build(keys[:2], np.array([1, 2**32]))
    with pytest.raises(TypeError, match="unsigned integers"):
        bloomlanes.Retrieval.build(keys[:2], ["x", "y"])
    with pytest.raises(ValueError, match="null"):
        bloomlanes.Retrieval.build(pa.array([1, None], type=pa.uint64()), [1, 2])
    with pytest.raises(KeyTypeError, match="float"):
        bloomlanes.Retrieval.build(np.array([0.5, 1.5]), [1, 2])
    with pytest.raises(ValueError, match="value bits"):
        bloomlanes.Retrieval.build(keys, keys, value_bits=33)
    t = bloomlanes.Retrieval.build(keys, keys)
    with pytest.raises(KeyTypeError):
        t.get(["a"])
    with pytest.raises(KeyTypeError):
        bloomlanes.Retrieval.build(np.arange(3, dtype=np.int32), [1, 2, 3], key_type="u64")



def test_spatial_union_is_the_filter_of_both_shards():
    keys = np.arange(6_000, dtype=np.uint64)
    cls = (keys % 3 + 1).astype(np.int64)
    # Two shards, one at twice the blocks (folded first), sharing keys 2000..3999.
    a = bloomlanes.SpatialFilter(CLASSES, blocks=128, layout="8x32", key_type="u64")
    b = bloomlanes.SpatialFilter(CLASSES, blocks=64, layout="8x32")
    a.insert(keys[:4000], cls[:4000])
    b.insert(keys[2000:], cls[2000:])
    u = a | b
    assert (u.classify(keys) >= cls).all()
    assert u.keys_per_class == [x + y for x, y in zip(a.keys_per_class, b.keys_per_class)]
    assert u.key_type == "u64" and u.params["blocks"] == 64
    # Byte for byte the one-shot build of both shards' keys at the smaller size.
    one = bloomlanes.SpatialFilter(CLASSES, blocks=64, layout="8x32", key_type="u64")
    one.insert(np.concatenate([keys[:4000], keys[2000:]]), np.concatenate([cls[:4000], cls[2000:]]))
    assert u == one and u.to_bytes() == one.to_bytes()
    with pytest.raises(bloomlanes.IncompatibleFiltersError, match="classes differ"):
        a | bloomlanes.SpatialFilter(CLASSES[::-1], blocks=64, layout="8x32")
    assert (b | b).keys_per_class == [2 * k for k in b.keys_per_class]
    with pytest.raises(TypeError):
        a | one.to_filter()


def test_address_and_flow_keys_are_given_as_text(tmp_path):
    """A filter of `ip` or `flow` keys (no numpy or Arrow type carries them) reads text keys as
    `bloomlanes query` does: the address or flow they write, in either flow form."""
    f = bloomlanes.SpatialFilter(["allow", "deny"], 1000, 0.01, key_type="ip")
    f.insert(["10.0.0.1", "2001:db8::1"], "deny")
    f.insert(pa.array(["10.0.0.2"]), "allow")
    assert list(f.classify(["10.0.0.1", "2001:DB8::1", "10.0.0.2", "10.0.0.9"]))[:3] == [2, 2, 1]
    assert list(f.classify(pa.array(["10.0.0.1", None], pa.large_string()))) == [2, 0]
    assert f.key_type == "ip"
    with pytest.raises(ValueError, match="key 1.*not an ip key"):
        f.classify(["10.0.0.1", "nope"])
    with pytest.raises(ValueError, match="prefix of 256 addresses"):
        f.insert(["10.0.0.0/24"], "deny")
    f.save(tmp_path / "ips.blf")
    assert bloomlanes.SpatialFilter.load(tmp_path / "ips.blf").classify(["10.0.0.1"])[0] == 2
    g = bloomlanes.Filter(1000, 0.01, key_type="flow")
    g.insert(["10.0.0.1:1234 -> 10.0.0.2:53 proto 17"])
    assert g.contains(["10.0.0.1:1234>10.0.0.2:53/udp", "10.0.0.1:1234>10.0.0.2:53/tcp"]).tolist()[0]
    assert "10.0.0.1:1234>10.0.0.2:53/udp" in g
