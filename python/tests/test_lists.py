"""Keys from Python lists, tuples and other iterables (read in one pass through the C API) give
the same bits and answers as the same keys as arrays; mixed or mistyped items are refused with
the index of the first bad one; per-call ``threads=`` gives the same answers on any count."""

import enum
import threading

import numpy as np
import pyarrow as pa
import pytest

import bloomlanes
from bloomlanes import KeyTypeError

N = 5000


def text_keys():
    keys = ["", "a", "ünïcödé ✓", "日本語", "x" * 31, "w" * 300, "\x00nul"]
    return keys + [f"user-{i}" for i in range(N)]


def built(key_type, keys, **kw):
    f = bloomlanes.Filter.with_params("8x32", 97, seed=7, key_type=key_type)
    f.insert(keys, **kw)
    return f


def iterables(keys):
    """The same keys as every non-array form."""
    return {
        "list": list(keys),
        "tuple": tuple(keys),
        "generator": (k for k in keys),
        "iterator": iter(list(keys)),
        "object array": np.array(list(keys) + [None], dtype=object)[:-1],
    }


def test_text_forms_give_the_bits_of_an_arrow_array():
    keys = text_keys()
    want = built("bytes", pa.array(keys, type=pa.large_string()))
    queries = keys[::3] + [f"absent-{i}" for i in range(N)]
    want_answers = want.contains(pa.array(queries))
    enc = [k.encode() for k in keys]
    forms = iterables(keys)
    forms.update({f"{name} of bytes": v for name, v in iterables(enc).items()})
    forms["list of bytearray"] = [bytearray(k) for k in enc]
    forms["mixed str and bytes"] = [k if i % 2 else enc[i] for i, k in enumerate(keys)]
    for name, form in forms.items():
        f = built("bytes", form)
        assert f == want, name
        assert f.key_count == len(keys), name
    for name, form in iterables(queries).items():
        assert np.array_equal(want.contains(form), want_answers), name
        bits = want.contains(iterables(queries)[name], bitmap=True)
        assert np.array_equal(bits, want.contains(pa.array(queries), bitmap=True)), name
    # A filter without a key type learns `bytes` from a list of str.
    g = bloomlanes.Filter.with_params("8x32", 97, seed=7)
    g.insert(keys)
    assert g.key_type == "bytes" and g == want


def test_sets_dict_views_and_large_lists_match_arrays():
    keys = [f"k{i:08d}" for i in range(300_000)]
    want = built("bytes", pa.array(keys))
    assert built("bytes", set(keys)) == want
    assert built("bytes", dict.fromkeys(keys).keys()) == want
    assert built("bytes", frozenset(keys)) == want
    assert built("bytes", keys) == want
    assert want.contains(keys).all()


def test_every_short_length_reads_every_item_in_order():
    """Lists and tuples around the walk's read-ahead (32 items) give the bits and the answers,
    in order, of the same keys as an Arrow array."""
    for n in list(range(0, 70)) + [1000, 1001]:
        keys = [f"s{i}" for i in range(n)]
        want = built("bytes", pa.array(keys, type=pa.string()))
        probe = [f"s{i}" if i % 3 else f"absent{i}" for i in range(n)]
        answers = want.contains(pa.array(probe, type=pa.string())).tolist()
        for make in (list, tuple):
            f = built("bytes", make(keys))
            assert f == want, n
            assert f.contains(make(probe)).tolist() == answers, n


class Str(str):
    pass


class Color(enum.IntEnum):
    RED = 5


def test_subclasses_are_read_as_their_base():
    assert built("bytes", [Str("a"), "b"]) == built("bytes", ["a", "b"])
    assert built("u64", [Color.RED, 6]) == built("u64", np.array([5, 6], dtype=np.uint64))


@pytest.mark.parametrize("key_type,dtype", [
    ("u64", np.uint64), ("i64", np.int64), ("u32", np.uint32), ("i32", np.int32),
])
def test_int_forms_give_the_bits_of_a_numpy_array(key_type, dtype):
    info = np.iinfo(dtype)
    values = [int(info.min), int(info.max), 0, 1] + list(range(1000, 1000 + N))
    if info.min < 0:
        values += [-1, -12345]
    arr = np.array(values, dtype=dtype)
    want = built(key_type, arr)
    queries = values[::2] + list(range(10**6, 10**6 + N))
    want_answers = want.contains(np.array(queries, dtype=dtype))
    for name, form in iterables(values).items():
        assert built(key_type, form) == want, name
    for name, form in iterables(queries).items():
        assert np.array_equal(want.contains(form), want_answers), name
    assert built(key_type, range(1000, 1000 + N)) == built(key_type, arr[4:4 + N])


@pytest.mark.parametrize("key_type,dtype", [("f64", np.float64), ("f32", np.float32)])
def test_float_forms_give_the_bits_of_a_numpy_array(key_type, dtype):
    values = [0.5, -2.25, 1e30, float("inf")] + [i / 7 for i in range(N)]
    want = built(key_type, np.array(values, dtype=dtype))
    for name, form in iterables(values).items():
        assert built(key_type, form) == want, name


@pytest.mark.parametrize("key_type,keys,err,msg", [
    ("bytes", ["a", 1], TypeError, "key at index 1 is a int, but the keys before it are bytes or str"),
    ("bytes", [b"a", "b", None], TypeError, "key at index 2 is a NoneType"),
    ("bytes", ("a", 1.5), TypeError, "key at index 1 is a float"),
    ("bytes", (x for x in ["a", "b", 3]), TypeError, "key at index 2 is a int"),
    ("i64", [1, "a"], TypeError, "key at index 1 is a str, but the keys before it are int"),
    ("i64", [1, True], TypeError, "key at index 1 is a bool"),
    ("i64", [True, 1], TypeError, "booleans are not keys"),
    ("f64", [1.5, 2], TypeError, "key at index 1 is a int, but the keys before it are float"),
    ("bytes", [[1]], TypeError, "keys must be bytes, str, int or float"),
    ("bytes", ["ok", "\ud800"], ValueError, "str key at index 1"),
])
def test_mixed_and_bad_items_are_refused(key_type, keys, err, msg):
    f = bloomlanes.Filter(100, key_type=key_type)
    before = f.to_bytes()
    items = list(keys)
    for make in (list, tuple, iter):
        with pytest.raises(err, match=msg):
            f.insert(make(items))
        with pytest.raises(err, match=msg):
            f.contains(make(items))
    assert f.to_bytes() == before and f.key_count == 0


@pytest.mark.parametrize("key_type,keys,msg", [
    ("u64", [1, -1], "key -1 at index 1 does not fit the key type u64"),
    ("u64", [2**64], "key 18446744073709551616 at index 0 does not fit the key type u64"),
    ("i64", [2**63], "does not fit the key type i64"),
    ("u32", [2**32], "does not fit the key type u32"),
    ("u32", [-1], "does not fit the key type u32"),
    ("i32", [5, -(2**31) - 1], "key -2147483649 at index 1 does not fit the key type i32"),
    ("i32", [2**31], "does not fit the key type i32"),
])
def test_ints_out_of_range_are_refused(key_type, keys, msg):
    f = bloomlanes.Filter(100, key_type=key_type)
    with pytest.raises(ValueError, match=msg):
        f.insert(keys)
    assert f.key_count == 0


def test_ints_need_a_key_type_and_lists_must_match_it():
    with pytest.raises(TypeError, match="Python ints carry no width"):
        bloomlanes.Filter(100).insert(iter([1, 2]))
    with pytest.raises(TypeError, match=r"this filter's keys are bytes"):
        bloomlanes.Filter(100, key_type="bytes").insert([1, 2])
    with pytest.raises(KeyTypeError, match="keys of type bytes do not match"):
        bloomlanes.Filter(100, key_type="u64").contains(["a"])
    with pytest.raises(KeyTypeError, match="fixed:4"):
        bloomlanes.Filter(100, key_type="fixed:4").insert((b"abcd", b"abc"))


def test_an_iterator_that_raises_is_reported():
    def keys():
        yield "a"
        raise RuntimeError("source broke")

    f = bloomlanes.Filter(100, key_type="bytes")
    with pytest.raises(TypeError, match="iterating the keys failed: RuntimeError: source broke"):
        f.insert(keys())
    assert f.key_count == 0


def test_empty_iterables_insert_nothing():
    f = bloomlanes.Filter(100)
    for empty in ([], (), iter([]), set()):
        f.insert(empty)
        assert f.contains(empty).shape == (0,)
    assert f.key_count == 0 and f.key_type is None


def test_a_list_changed_by_another_thread_is_read_safely():
    """The keys are copied under the GIL: a thread that keeps replacing items of the list's
    second half while inserts and lookups run changes which of those keys go in, never memory
    safety, and the first half is read as it is."""
    keys = [f"key-{i}" for i in range(200_000)]
    half = len(keys) // 2
    stop = threading.Event()

    def churn():
        i = 0
        while not stop.is_set():
            keys[half + i % half] = f"new-{i}"
            i += 1

    t = threading.Thread(target=churn)
    t.start()
    try:
        for _ in range(5):
            f = bloomlanes.Filter(len(keys), 0.01, key_type="bytes")
            f.insert(keys)
            assert f.key_count == len(keys)
            assert f.contains(keys)[:half].all()
            assert f.contains(tuple(keys))[:half].all()
    finally:
        stop.set()
        t.join()
    assert f.contains(keys[:half]).all()


@pytest.mark.parametrize("threads", [None, 0, 1, 2, 3])
def test_per_call_threads_give_identical_answers(threads):
    keys = [f"k{i}" for i in range(200_000)]
    queries = [f"k{i}" for i in range(100_000, 300_000)]
    want = built("bytes", pa.array(keys))
    want_answers = want.contains(pa.array(queries))
    before = bloomlanes.threads()
    for form in (keys, pa.array(keys), np.arange(1000, dtype=np.uint64)):
        f = bloomlanes.Filter.with_params("8x32", 97, seed=7)
        f.insert(form, threads=threads)
        g = bloomlanes.Filter.with_params("8x32", 97, seed=7)
        g.insert(form)
        assert f == g
    f = built("bytes", keys, threads=threads)
    assert f == want
    assert np.array_equal(f.contains(queries, threads=threads), want_answers)
    assert np.array_equal(f.contains(pa.array(queries), bitmap=True, threads=threads),
                          want.contains(pa.array(queries), bitmap=True))
    assert bloomlanes.threads() == before  # the package's setting is untouched


@pytest.mark.parametrize("bad,err", [(-1, ValueError), (1025, ValueError), (2**70, OverflowError),
                                     ("2", TypeError), (1.5, TypeError)])
def test_invalid_thread_counts_are_refused(bad, err):
    f = bloomlanes.Filter(100, key_type="bytes")
    with pytest.raises(err, match="threads" if err is ValueError else None):
        f.insert(["a"], threads=bad)
    with pytest.raises(err):
        f.contains(["a"], threads=bad)
    assert f.key_count == 0
