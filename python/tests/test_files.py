"""Keys from files: Filter.insert_file and Filter.contains_file read text lines, CSV columns,
binary u64, pcap/pcapng captures and gzip/zstd/xz as the bloomlanes CLI does (the same bits as
the CLI's filters and as the in-memory insert), refuse malformed files without changing the
filter, and release the GIL."""

import gzip
import lzma
import struct
import subprocess
import threading
import time

import numpy as np
import pytest

import bloomlanes


def zstd_frame(data: bytes) -> bytes:
    """A zstd frame of one raw (stored) block: what a zstd reader must accept."""
    assert len(data) < 128 << 10  # the largest block
    header = bytes([0x28, 0xB5, 0x2F, 0xFD, 0x00])  # magic; descriptor: no content size
    window = bytes([0x50])  # 2^20 bytes
    block = (1 | (len(data) << 3)).to_bytes(3, "little")  # last block, raw
    return header + window + block + data


def udp_frame(src_last: int, sport: int) -> bytes:
    ip = bytes([0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, src_last, 10, 9, 9, 9])
    return bytes(12) + b"\x08\x00" + ip + struct.pack(">HHHH", sport, 53, 8, 0)


def pcap(frames) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i, f in enumerate(frames):
        out += struct.pack("<IIII", 1_700_000_000 + i, 0, len(f), len(f)) + f
    return out


def words(tmp_path, name, keys):
    p = tmp_path / name
    p.write_text("".join(f"{k}\n" for k in keys))
    return p


def test_text_lines_insert_as_the_in_memory_insert(tmp_path):
    keys = [f"user-{i}" for i in range(20_000)]
    path = words(tmp_path, "keys.txt", keys)
    f = bloomlanes.Filter(len(keys), 0.01)
    assert f.insert_file(path, format="lines") == len(keys)
    assert f.key_type == "bytes" and f.key_count == len(keys)
    g = bloomlanes.Filter(len(keys), 0.01, key_type="bytes")
    g.insert(keys)
    assert f == g
    got = f.contains_file(path, format="lines")
    assert got.dtype == np.bool_ and got.shape == (len(keys),) and got.all()
    absent = words(tmp_path, "absent.txt", [f"other-{i}" for i in range(20_000)])
    others = [f"other-{i}" for i in range(20_000)]
    assert np.array_equal(f.contains_file(absent), g.contains(others))
    assert f.contains_file(absent).mean() < 0.03


def test_compressed_files_read_as_the_plain_one(tmp_path):
    keys = [str(i) for i in range(5000)]
    plain = "".join(f"{k}\n" for k in keys).encode()
    want = bloomlanes.Filter(5000, 0.01, key_type="i64")
    want.insert(np.arange(5000, dtype=np.int64))
    for name, data in (("k.gz", gzip.compress(plain)), ("k.xz", lzma.compress(plain)),
                       ("k.zst", zstd_frame(plain))):
        (tmp_path / name).write_bytes(data)
        f = bloomlanes.Filter(5000, 0.01, key_type="i64")
        assert f.insert_file(tmp_path / name) == 5000, name
        assert f == want, name
        assert f.contains_file(tmp_path / name).all(), name
    cut = gzip.compress(plain)[:-20]
    (tmp_path / "cut.gz").write_bytes(cut)
    with pytest.raises(ValueError, match="cut.gz"):
        bloomlanes.Filter(5000, 0.01, key_type="i64").insert_file(tmp_path / "cut.gz")


def test_csv_columns_by_name_and_index_typed(tmp_path):
    rows = ["id;name"] + [f"{-i};n{i}" for i in range(1000)]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    f = bloomlanes.Filter(1000, 0.001, key_type="i64")
    assert f.insert_file(path, column="id", delimiter=";") == 1000
    assert f.contains(np.arange(0, -1000, -1, dtype=np.int64)).all()
    g = bloomlanes.Filter(1000, 0.001, key_type="i64")
    g.insert_file(path, column=0, delimiter=";")
    assert f == g
    names = bloomlanes.Filter(1000, 0.001)
    names.insert_file(path, column="name", delimiter=";")
    assert names.key_type == "bytes" and "n999" in names
    with pytest.raises(ValueError, match="no CSV column named"):
        f.insert_file(path, column="nope", delimiter=";")


def test_u64_binary_and_bitmaps(tmp_path):
    keys = np.arange(0, 300_000, 3, dtype=np.uint64)
    keys.astype("<u8").tofile(tmp_path / "k.u64")
    f = bloomlanes.Filter(len(keys), 0.001, key_type="u64")
    assert f.insert_file(tmp_path / "k.u64") == len(keys)
    g = bloomlanes.Filter(len(keys), 0.001, key_type="u64")
    g.insert(keys)
    assert f == g
    q = np.arange(0, 100_000, dtype=np.uint64)
    q.astype("<u8").tofile(tmp_path / "q.bin")
    bools = f.contains_file(tmp_path / "q.bin")
    assert np.array_equal(bools, f.contains(q))
    bits = f.contains_file(tmp_path / "q.bin", bitmap=True)
    assert bits.dtype == np.uint8 and len(bits) == (len(q) + 7) // 8
    assert np.array_equal(np.unpackbits(bits, bitorder="little")[: len(q)].astype(bool), bools)


def test_captures_give_one_answer_per_packet(tmp_path):
    frames = [udp_frame(1 + i % 4, 1000 + i % 4) for i in range(64)] + [bytes(14)]  # + not IP
    (tmp_path / "t.pcap").write_bytes(pcap(frames))
    f = bloomlanes.Filter(10, 0.0001)
    assert f.insert_file(tmp_path / "t.pcap") == 64
    assert f.key_type == "flow"
    texts = [f"10.0.0.{1 + i}:{1000 + i}>10.9.9.9:53/udp" for i in range(4)]
    flows = words(tmp_path, "flows.txt", texts)
    assert f.contains_file(flows, format="flows").all()
    other = [udp_frame(9, 7000 + i) for i in range(64)]
    (tmp_path / "o.pcap").write_bytes(pcap(frames[:10] + other))
    got = f.contains_file(tmp_path / "o.pcap")
    assert len(got) == 74 and got[:10].all() and got[10:].sum() <= 1


def test_float_keys_follow_the_zero_and_nan_rule(tmp_path):
    f = bloomlanes.Filter(100, 0.001, key_type="f64")
    f.insert_file(words(tmp_path, "in.txt", ["-0.0", "1.5"]))
    got = f.contains_file(words(tmp_path, "q.txt", ["0.0", "-0.0", "nan", "1.5", "2.5"]))
    assert got[:4].all() and not got[4]


def test_bad_files_change_nothing_and_name_the_fault(tmp_path):
    f = bloomlanes.Filter(1000, 0.01, key_type="i64")
    f.insert(np.arange(10, dtype=np.int64))
    before = f.to_bytes()
    bad = words(tmp_path, "bad.txt", [str(i) for i in range(500)] + ["12x"] + ["7"])
    with pytest.raises(ValueError, match=r"bad\.txt: line 501"):
        f.insert_file(bad)
    assert f.to_bytes() == before
    with pytest.raises(FileNotFoundError):
        f.insert_file(tmp_path / "missing.txt")
    with pytest.raises(bloomlanes.KeyTypeError):
        f.insert_file(bad, key_type="i32")
    with pytest.raises(ValueError, match="unknown format"):
        f.contains_file(bad, format="parquet")
    # Text of numbers without a key type is hashed as written (the filter learns bytes), with a
    # warning saying how to hash numbers; an int probe is then a key-type error, not "absent".
    g = bloomlanes.Filter(10, 0.01)
    with pytest.warns(UserWarning, match="looks like a number"):
        g.insert_file(words(tmp_path, "n.txt", ["1", "2"]))
    assert "1" in g and "3" not in g
    with pytest.raises(bloomlanes.KeyTypeError):
        g.contains(np.array([1], dtype=np.uint64))
    assert f.to_bytes() == before


def test_loading_a_folder_names_it(tmp_path):
    # A folder opens for reading on Linux and then fails to map ("No such device"); it is an
    # IsADirectoryError naming the path, for every kind that loads from a file.
    folder = tmp_path / "filters.blf"
    folder.mkdir()
    for load in (bloomlanes.Filter.load, bloomlanes.SpatialFilter.load):
        with pytest.raises(IsADirectoryError, match="filters.blf: is a directory"):
            load(folder)
    with pytest.raises(IsADirectoryError):
        bloomlanes.Filter.load(str(folder), mmap=False)


def test_same_bits_as_the_cli(cli, tmp_path):
    keys = [f"line-{i}" for i in range(50_000)]
    path = words(tmp_path, "keys.txt", keys)
    subprocess.run([cli, "build", str(path), "-o", str(tmp_path / "cli.blf"), "--capacity",
                    "50000", "--fpp", "0.01", "--layout", "8x32", "-q"], check=True)
    cli_filter = bloomlanes.Filter.load(tmp_path / "cli.blf")
    ours = bloomlanes.Filter.with_params("8x32", cli_filter.blocks)
    assert ours.insert_file(path) == len(keys)
    assert ours.to_bytes()[64:] == cli_filter.to_bytes()[64:]
    assert (ours.key_type, ours.key_count) == (cli_filter.key_type, cli_filter.key_count)
    subprocess.run([cli, "query", str(tmp_path / "cli.blf"), str(path), "--bitmap",
                    str(tmp_path / "bits"), "-q"], check=True)
    assert (tmp_path / "bits").read_bytes() == ours.contains_file(path, bitmap=True).tobytes()


def test_file_calls_release_the_gil(tmp_path):
    path = words(tmp_path, "big.txt", range(2_000_000))
    f = bloomlanes.Filter(2_000_000, 0.01, key_type="u64")
    stop = threading.Event()
    count = [0]

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        for call in (lambda: f.insert_file(path), lambda: f.contains_file(path)):
            start = count[0]
            t0 = time.perf_counter()
            call()
            elapsed, during = time.perf_counter() - t0, count[0] - start
            assert elapsed > 0.02 and during > 1000, (elapsed, during)
    finally:
        stop.set()
        t.join()
    assert f.contains(np.arange(2_000_000, dtype=np.uint64)).all()
