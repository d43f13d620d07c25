"""Lists and tuples of ``str`` and ``bytes`` hashed on the call's threads by plain reads of the
objects (the layout calibrated at first use) give the filter bytes, answers and errors of the
same keys read one by one through the C API: the other items (non-ASCII or subclassed ``str``,
``bytes`` subclasses, ``bytearray``) go through the C API in their places;
``BLOOMLANES_LIST_WALK=gil`` (what a failed calibration leaves) gives the same results."""

import os
import threading

import numpy as np
import pyarrow as pa
import pytest

import bloomlanes
from bloomlanes import _native

# Keys per task of the walk (python/src/input/direct.rs `CHUNK`): lists around it and past it.
CHUNK = 16 * 1024


class Str(str):
    pass


class Bytes(bytes):
    pass


@pytest.fixture
def gil_walk(monkeypatch):
    """Every item through the C API on the calling thread (the fallback path)."""
    monkeypatch.setenv("BLOOMLANES_LIST_WALK", "gil")


def mixed_keys(n):
    """ASCII keys with every other kind of item at places spread over the walk's tasks."""
    keys = [f"user-{i}" for i in range(n)]
    odd = ["", "é", "café au lait", "日本語", "😀", "x" * 16, "y" * 17, "z" * 300, "\x00nul",
           "a", chr(127), Str("subclass"), b"bytes-key", b"", Bytes(b"bytes-subclass"),
           bytearray(b"bytearray-key"), b"long bytes " * 9,
           "ascii but " + "long " * 10, "ü" * 20]
    step = max(1, n // (3 * len(odd)))
    for j, k in enumerate(odd):
        for at in (j * step, CHUNK * (j % 3) - 1 + j, n - 1 - j):
            if 0 <= at < n:
                keys[at] = k
    return keys


def as_text(keys):
    return pa.array([k if isinstance(k, str) else bytes(k).decode() for k in keys],
                    type=pa.large_string())


def new_filter(key_type="bytes"):
    return bloomlanes.Filter.with_params("8x32", 4099, seed=11, key_type=key_type)


def test_this_python_is_read_directly():
    """On CPython with a GIL the layout is recognised (else the walk silently falls back)."""
    assert _native._list_walk() == "direct"


def test_the_switch_turns_the_walk_off(gil_walk):
    assert _native._list_walk() == "gil: BLOOMLANES_LIST_WALK=gil"


@pytest.mark.parametrize("n", [1, 2, 17, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5, 150_000])
def test_mixed_lists_and_tuples_give_the_bytes_and_answers_of_arrow(n):
    keys = mixed_keys(n)
    want = new_filter()
    want.insert(as_text(keys))
    queries = keys[::2] + [f"absent-{i}" for i in range(n // 2)] + ["é", Str("nope"), b"x"]
    want_answers = want.contains(as_text(queries))
    for make in (list, tuple):
        for threads in (None, 1, 2):
            f = new_filter()
            f.insert(make(keys), threads=threads)
            assert f.to_bytes() == want.to_bytes(), (make, threads)
            assert f.key_count == n
            got = f.contains(make(queries), threads=threads)
            assert np.array_equal(got, want_answers), (make, threads)
            bits = f.contains(make(queries), bitmap=True, threads=threads)
            assert np.array_equal(bits, want.contains(as_text(queries), bitmap=True))


def test_a_list_gives_the_bytes_of_its_keys_inserted_one_by_one():
    keys = mixed_keys(2000)
    one_by_one = new_filter()
    for k in keys:
        one_by_one.insert(k)
    f = new_filter()
    f.insert(keys)
    assert f.to_bytes() == one_by_one.to_bytes()
    assert [k in f for k in keys] == [True] * len(keys)


def test_the_fallback_gives_the_same_bytes_and_answers(monkeypatch):
    keys = mixed_keys(100_000)
    queries = keys[::3] + [f"absent-{i}" for i in range(50_000)]
    direct = new_filter()
    direct.insert(keys)
    direct_answers = direct.contains(queries)
    monkeypatch.setenv("BLOOMLANES_LIST_WALK", "gil")
    gil = new_filter()
    gil.insert(keys)
    assert gil.to_bytes() == direct.to_bytes()
    assert np.array_equal(gil.contains(queries), direct_answers)
    assert np.array_equal(gil.contains(tuple(queries)), direct_answers)


def fixed_keys(n):
    return [f"k{i:07d}" for i in range(n)]


@pytest.mark.parametrize("walk", ["direct", "gil"])
def test_fixed_width_keys_and_their_errors(walk, monkeypatch):
    """A `fixed:8` filter takes 8-byte str of either kind; the first key of another length or
    type is named by its index, as on the fallback path, and nothing is inserted."""
    if walk == "gil":
        monkeypatch.setenv("BLOOMLANES_LIST_WALK", "gil")
    n = 3 * CHUNK
    keys = fixed_keys(n)
    keys[5] = "é" * 4  # 8 bytes of UTF-8
    want = new_filter("fixed:8")
    want.insert(pa.array([k.encode() for k in keys], type=pa.binary(8)))
    f = new_filter("fixed:8")
    f.insert(keys)
    assert f.to_bytes() == want.to_bytes()
    before = f.to_bytes()
    for at, bad, err, msg in [
        (CHUNK + 3, "short", bloomlanes.KeyTypeError,
         f"key at index {CHUNK + 3} has 5 bytes, but the filter's keys are fixed:8"),
        (2 * CHUNK, 12345, TypeError,
         f"key at index {2 * CHUNK} is a int, but the keys before it are bytes or str"),
        (7, "\ud800", ValueError, "str key at index 7"),
    ]:
        bad_keys = keys[:]
        bad_keys[at] = bad
        bad_keys[-1] = "too long for it"  # a later error: the first one is reported
        for make in (list, tuple):
            with pytest.raises(err, match=msg):
                f.insert(make(bad_keys))
            with pytest.raises(err, match=msg):
                f.contains(make(bad_keys))
    assert f.to_bytes() == before and f.key_count == n


def test_str_made_every_way_is_read_as_utf8():
    """Interned, sliced, joined, formatted, single-character and decoded strings, the same text
    as non-compact subclasses, as bytes and as bytes subclasses: one filter."""
    base = [f"key-{i}" for i in range(5000)]
    made = [
        base,
        [("prefix-" + k)[7:] for k in base],
        ["".join(["key-", str(i)]) for i in range(5000)],
        [bytes(k, "ascii").decode("ascii") for k in base],
        [Str(k) for k in base],
        [k.encode() for k in base],
        [Bytes(k.encode()) for k in base],
        [k if i % 2 else k.encode() for i, k in enumerate(base)],
    ]
    want = new_filter()
    want.insert(pa.array(base))
    for keys in made:
        f = new_filter()
        f.insert(keys)
        assert f.to_bytes() == want.to_bytes()
    singles = [chr(i) for i in range(1, 600)] + [chr(0x10000 + i) for i in range(50)]
    want = new_filter()
    want.insert(pa.array(singles))
    f = new_filter()
    f.insert(singles)
    assert f.to_bytes() == want.to_bytes()


def test_an_int_list_still_takes_the_int_path():
    f = new_filter("u64")
    f.insert(list(range(3 * CHUNK)))
    g = new_filter("u64")
    g.insert(np.arange(3 * CHUNK, dtype=np.uint64))
    assert f.to_bytes() == g.to_bytes()


def test_the_environment_switch_is_read_per_call():
    old = os.environ.get("BLOOMLANES_LIST_WALK")
    try:
        os.environ["BLOOMLANES_LIST_WALK"] = "gil"
        assert _native._list_walk().startswith("gil")
    finally:
        if old is None:
            del os.environ["BLOOMLANES_LIST_WALK"]
        else:
            os.environ["BLOOMLANES_LIST_WALK"] = old
    assert _native._list_walk() == "direct"


def test_python_threads_walking_lists_at_once_get_their_own_bytes():
    """Calls from several Python threads (each walk holds the GIL while its helper threads
    read; the inserts run without it, on the shared pool) finish and give each list's bytes."""
    lists = [[f"t{t}-{i}" for i in range(3 * CHUNK + t)] for t in range(4)]
    wants = []
    for keys in lists:
        want = new_filter()
        want.insert(pa.array(keys))
        wants.append(want.to_bytes())
    got = [None] * len(lists)
    errors = []

    def run(t):
        try:
            for _ in range(5):
                f = new_filter()
                f.insert(lists[t])
                assert f.contains(tuple(lists[t])).all()
            got[t] = f.to_bytes()
        except Exception as e:  # reported below, with the thread
            errors.append((t, e))

    threads = [threading.Thread(target=run, args=(t,)) for t in range(len(lists))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads)
    assert not errors
    assert got == wants


# The one-pass insert (python/src/input/list_insert.rs): keys per piece, keys per thread.
PIECE = 2048
KEYS_PER_THREAD = 16 * 1024


def small_filter(n, key_type="bytes"):
    """About 2 bytes a key: small enough for the one-pass insert's copies of the filter (one
    per thread, together at most 8 bytes a key) with up to 4 threads."""
    return bloomlanes.Filter.with_params("8x32", max(1, n // 16), seed=11, key_type=key_type)


def one_pass(f, keys, **kw):
    """Inserts `keys` into `f`; whether the insert took the one-pass path."""
    before = _native._list_inserts_in_one_pass()
    f.insert(keys, **kw)
    return _native._list_inserts_in_one_pass() == before + 1


@pytest.mark.parametrize("n", [16, PIECE - 1, PIECE, PIECE + 1, KEYS_PER_THREAD - 1,
                               KEYS_PER_THREAD, KEYS_PER_THREAD + 1,
                               2 * KEYS_PER_THREAD + PIECE + 3, 100_003])
def test_one_pass_inserts_give_the_bytes_of_arrow(n):
    """Lists and tuples around the pieces' and the threads' boundaries, with every other kind
    of item among them, on 1 to 4 threads: the bytes and key count of the same keys as an
    Arrow array; their lookups (one pass too) the answers of Arrow's."""
    keys = mixed_keys(n)
    want = small_filter(n)
    want.insert(as_text(keys))
    queries = keys[1::2] + [f"absent-{i}" for i in range(n // 2)] + ["é", Str("nope"), b"x"]
    want_answers = want.contains(as_text(queries))
    for make in (list, tuple):
        for threads in (None, 1, 2, 4):
            f = small_filter(n)
            assert one_pass(f, make(keys), threads=threads), (make, threads)
            assert f.to_bytes() == want.to_bytes(), (make, threads)
            assert f.key_count == n
            got = f.contains(make(queries), threads=threads)
            assert np.array_equal(got, want_answers), (make, threads)
    # Into a filter that holds keys already: OR'd into them.
    f = small_filter(n)
    f.insert(as_text(keys[: n // 2]))
    assert one_pass(f, keys[n // 2:])
    g = small_filter(n)
    g.insert(as_text(keys[: n // 2]))
    g.insert(as_text(keys[n // 2:]))
    assert f.to_bytes() == g.to_bytes()


def test_lists_too_short_for_copies_take_the_general_path():
    """A filter larger than 8 bytes a key of the list (or empty lists) is not copied: the
    general path, the same bytes."""
    for n in (0, 1, 7, 1000):
        keys = mixed_keys(n)
        want = new_filter()
        want.insert(as_text(keys))
        f = new_filter()
        assert not one_pass(f, keys)
        assert f.to_bytes() == want.to_bytes() and f.key_count == n


@pytest.mark.parametrize("at", [1, PIECE - 1, KEYS_PER_THREAD + PIECE, 3 * KEYS_PER_THREAD - 1])
def test_a_bad_key_in_a_one_pass_insert_leaves_the_filter_as_it_was(at):
    """Every piece before the bad key has gone into the threads' copies when the error is
    found: the filter itself is untouched (bytes, key count, key type still to learn)."""
    n = 3 * KEYS_PER_THREAD
    keys = [f"user-{i}" for i in range(n)]
    f = bloomlanes.Filter.with_params("8x32", n // 16, seed=11)
    f.insert(as_text(keys[:100]))
    before, count = f.to_bytes(), f.key_count
    for bad, err in [(12345, TypeError), ("\ud800", ValueError)]:
        bad_keys = keys[:]
        bad_keys[at] = bad
        with pytest.raises(err, match=f"index {at}"):
            f.insert(bad_keys)
        assert f.to_bytes() == before and f.key_count == count
    assert one_pass(f, keys)


def test_one_pass_and_the_fallback_learn_and_check_the_key_type(monkeypatch):
    """A filter made without a key type learns `bytes` from a list of str on either path; a
    `u64` filter refuses one on either path, unchanged."""
    n = 2 * KEYS_PER_THREAD
    keys = [f"user-{i}" for i in range(n)]
    learned = []
    for walk in ("direct", "gil"):
        if walk == "gil":
            monkeypatch.setenv("BLOOMLANES_LIST_WALK", "gil")
        f = bloomlanes.Filter.with_params("8x32", n // 16, seed=11)
        assert one_pass(f, keys) == (walk == "direct")
        learned.append((f.params["key_type"], f.to_bytes()))
        g = bloomlanes.Filter.with_params("8x32", n // 16, seed=11, key_type="u64")
        before = g.to_bytes()
        with pytest.raises(bloomlanes.KeyTypeError):
            g.insert(keys)
        assert g.to_bytes() == before
    assert learned[0] == learned[1]


def test_lookups_of_a_list_while_another_thread_inserts_into_the_filter():
    """The one-pass lookup read-locks the filter with the GIL held only if no writer holds or
    awaits the lock (else the general path, which waits without it): lookups of a list from
    one thread while another inserts Arrow batches (holding the write lock without the GIL)
    finish, and find every key inserted before."""
    n = 3 * KEYS_PER_THREAD
    keys = [f"user-{i}" for i in range(n)]
    f = small_filter(4 * n)
    f.insert(keys)
    batches = [pa.array([f"more-{j}-{i}" for i in range(n)]) for j in range(3)]
    errors = []
    stop = threading.Event()

    def writer():
        try:
            while not stop.is_set():
                for b in batches:
                    f.insert(b)
        except Exception as e:  # reported below
            errors.append(e)

    th = threading.Thread(target=writer)
    th.start()
    try:
        for _ in range(20):
            assert f.contains(keys).all()
            assert f.contains(tuple(keys[::7])).all()
    finally:
        stop.set()
        th.join(timeout=120)
    assert not th.is_alive() and not errors
