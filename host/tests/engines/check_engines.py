"""Typed keys and `parquet add-filters` against real engines: DuckDB and pyarrow.

Run by host/tests/engines.rs as `python3 check_engines.py BLOOMLANES_BINARY WORK_DIR`.
Prints `SKIP: ...` and exits 0 when duckdb or pyarrow is missing; exits 1 with a message on
the first disagreement. Checks:
  1. Files written by pyarrow (bloom_filter_options) and DuckDB (COPY ... FORMAT parquet, which
     writes bloom filters for dictionary-encoded chunks) for every key type: i32, i64, u32,
     u64, f32, f64, date, timestamp ms/us/ns, uuid, strings, with negative numbers, -0.0, NaN
     and infinities. `bloomlanes parquet probe` finds every present value (no false negative),
     reports the column's key type, and agrees with DuckDB's parquet_bloom_probe value by value
     on absent values.
  2. `bloomlanes parquet add-filters` on a file without filters: DuckDB reads the result,
     returns the right rows, and its parquet_bloom_probe agrees with `bloomlanes parquet probe`
     and `bloomlanes query` on an imported filter; a deliberately wrong filter (bitset zeroed)
     changes DuckDB's answer, which shows DuckDB uses the filter.
"""
import datetime as dt
import json
import math
import os
import struct
import subprocess
import sys
import uuid

try:
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError as e:  # visible skip, as the project's tests do
    print(f"SKIP: engine interop tests need duckdb and pyarrow ({e})")
    sys.exit(0)

BIN, WORK = sys.argv[1], sys.argv[2]
checked = 0


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def bl(*args):
    r = subprocess.run([BIN, "--json", *args], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"bloomlanes {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
TS = [dt.datetime(1969, 7, 20, 20, 17, 40, 123456, tzinfo=dt.timezone.utc),
      dt.datetime(2024, 2, 29, 12, 0, 0, 1000, tzinfo=dt.timezone.utc)]
UUIDS = [uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"), uuid.UUID(int=1), uuid.UUID(int=2**128 - 1)]


def us(t):
    return (t - EPOCH) // dt.timedelta(microseconds=1)


# column -> (key type, present values as text, absent values as text, pyarrow array)
COLUMNS = {
    "i32": ("i32", [-2147483648, -500, -1, 0, 7, 2147483647], pa.int32()),
    "i64": ("i64", [-9223372036854775808, -500, 0, 42, 9223372036854775807], pa.int64()),
    "u32": ("u32", [0, 1, 3000000000, 4294967295], pa.uint32()),
    "u64": ("u64", [0, 1, 18446744073709551615], pa.uint64()),
    "f32": ("f32", [-0.0, 1.5, -2.25, float("nan"), float("inf")], pa.float32()),
    "f64": ("f64", [-0.0, 0.1, -1e300, float("nan"), float("-inf")], pa.float64()),
    "s": ("bytes", ["alice", "bob", "", "żółw", "x" * 100], pa.string()),
}


def text(v):
    if isinstance(v, float):
        return repr(v)  # nan, inf, -0.0, 0.1 all parse
    return str(v)


def absent_for(kind):
    if kind in ("i32", "i64"):
        return [str(v) for v in range(-3000, -2900)] + [str(v) for v in range(100, 200)]
    if kind in ("u32", "u64"):
        return [str(v) for v in range(100, 300)]
    if kind in ("f32", "f64"):
        return [repr(v / 8) for v in range(17, 217)]
    if kind == "date":
        return [f"2001-01-{d:02d}" for d in range(1, 29)]
    if kind.startswith("timestamp"):
        return [str(v) for v in range(10**6, 10**6 + 200)]
    if kind == "fixed:16":
        return [str(uuid.UUID(int=i)) for i in range(3, 200)]
    return [f"nobody-{i}" for i in range(200)]


def probe(path, column, keys, key_type=None):
    kf = os.path.join(WORK, "keys.txt")
    with open(kf, "w") as f:
        f.write("\n".join(keys) + "\n")
    args = ["parquet", "probe", path, "--column", column, "--keys", kf]
    if key_type:
        args += ["--key-type", key_type]
    v = bl(*args)
    return v, [sorted(g["row_group"] for g in k["row_groups"]) for k in v["keys"]]


def duck_excludes(path, column, keys, cast):
    con = duckdb.connect()
    out = []
    for k in keys:
        rows = con.execute(
            f"select row_group_id, bloom_filter_excludes from parquet_bloom_probe(?, ?, {cast})",
            [path, column, k]).fetchall()
        out.append(sorted(g for g, ex in rows if not ex))
    return out


def check_file(path, columns, writer):
    """Every present value found; absent values answered as DuckDB answers them."""
    global checked
    con = duckdb.connect()
    meta = con.execute("select path_in_schema, bloom_filter_offset from parquet_metadata(?)", [path]).fetchall()
    with_filter = {p for p, off in meta if off is not None}
    for col, (kind, present, cast) in columns.items():
        if col not in with_filter:
            print(f"note: {writer} wrote no bloom filter for {col}")
            continue
        v, got = probe(path, col, [text(x) for x in present])
        if v["column_key_type"] != kind:
            fail(f"{writer} {col}: column key type {v['column_key_type']}, expected {kind}")
        for x, groups in zip(present, got):
            if groups != [0]:
                fail(f"{writer} {col}: present value {x!r} not found (row groups {groups})")
            checked += 1
        absent = absent_for(kind)
        _, ours = probe(path, col, absent)
        theirs = duck_excludes(path, col, absent, cast)
        for x, a, b in zip(absent, ours, theirs):
            if a != b:
                fail(f"{writer} {col}: {x}: bloomlanes says row groups {a}, DuckDB {b}")
            checked += 1
        print(f"ok: {writer} {col} ({kind}): {len(present)} present, {len(absent)} absent agree with DuckDB")


def pyarrow_file():
    cols = {}
    arrays = {}
    for name, (kind, vals, ty) in COLUMNS.items():
        arrays[name] = pa.array(vals, ty)
        cols[name] = (kind, vals, "?::" + {"i32": "INTEGER", "i64": "BIGINT", "u32": "UINTEGER",
                      "u64": "UBIGINT", "f32": "FLOAT", "f64": "DOUBLE", "s": "VARCHAR"}[name])
    n = max(len(a) for a in arrays.values())
    table = pa.table({k: pa.concat_arrays([a, pa.nulls(n - len(a), a.type)]) for k, a in arrays.items()})
    extra = {
        "d": ("date", pa.array([dt.date(1969, 12, 31), dt.date(2024, 2, 29)], pa.date32()), "?::DATE"),
        "ts_ms": ("timestamp-ms", pa.array([us(t) // 1000 for t in TS], pa.timestamp("ms", tz="UTC")), "make_timestamp(?::BIGINT * 1000)::TIMESTAMP_MS"),
        "ts_us": ("timestamp-us", pa.array([us(t) for t in TS], pa.timestamp("us", tz="UTC")), "make_timestamp(?::BIGINT)"),
        "ts_ns": ("timestamp-ns", pa.array([us(t) * 1000 for t in TS], pa.timestamp("ns", tz="UTC")), "make_timestamp_ns(?::BIGINT)"),
        "id": ("fixed:16", pa.array([u.bytes for u in UUIDS], pa.binary(16)), "?::UUID"),
    }
    for name, (kind, arr, cast) in extra.items():
        table = table.append_column(name, pa.concat_arrays([arr, pa.nulls(n - len(arr), arr.type)]))
        py = arr.to_pylist()
        if kind == "date":
            vals = [d.isoformat() for d in py]
        elif kind.startswith("timestamp"):
            vals = [str(x) for x in arr.cast(pa.int64()).to_pylist()]
        else:
            vals = [str(uuid.UUID(bytes=b)) for b in py]
        cols[name] = (kind, vals, cast)
    path = os.path.join(WORK, "pyarrow.parquet")
    pq.write_table(table, path, bloom_filter_options={c: {"ndv": 64, "fpp": 0.01} for c in table.column_names})
    return path, cols


def duckdb_file():
    con = duckdb.connect()
    path = os.path.join(WORK, "duckdb.parquet")
    con.execute("""
      create table t as select * from (values
        ((-2147483648)::INTEGER, (-9223372036854775808)::BIGINT, 0::UINTEGER, 0::UBIGINT, (-0.0)::FLOAT, (-0.0)::DOUBLE, 'alice', DATE '1969-12-31', TIMESTAMP '1969-07-20 20:17:40.123456', '00112233-4455-6677-8899-aabbccddeeff'::UUID),
        (-500, -500, 3000000000, 18446744073709551615::UBIGINT, 1.5, 0.1, 'żółw', DATE '2024-02-29', TIMESTAMP '2024-02-29 12:00:00.001', '00000000-0000-0000-0000-000000000001'::UUID),
        (2147483647, 9223372036854775807, 4294967295, 1, 'nan'::FLOAT, 'nan'::DOUBLE, '', DATE '2000-01-01', TIMESTAMP '2000-01-01 00:00:00', 'ffffffff-ffff-ffff-ffff-ffffffffffff'::UUID)
      ) v(i32, i64, u32, u64, f32, f64, s, d, ts_us, id)""")
    # DuckDB writes bloom filters for dictionary-encoded chunks: repeat the rows so it uses one.
    con.execute(f"copy (select t.* from t, range(200)) to '{path}' (format parquet)")
    rows = con.execute("select i32, i64, u32, u64, f32, f64, s, d, epoch_us(ts_us), id::VARCHAR from t").fetchall()
    names = ["i32", "i64", "u32", "u64", "f32", "f64", "s", "d", "ts_us", "id"]
    kinds = ["i32", "i64", "u32", "u64", "f32", "f64", "bytes", "date", "timestamp-us", "fixed:16"]
    casts = ["?::INTEGER", "?::BIGINT", "?::UINTEGER", "?::UBIGINT", "?::FLOAT", "?::DOUBLE", "?::VARCHAR", "?::DATE", "make_timestamp(?::BIGINT)", "?::UUID"]
    cols = {}
    for i, n in enumerate(names):
        vals = [r[i] for r in rows]
        if kinds[i] == "date":
            vals = [d.isoformat() for d in vals]
        cols[n] = (kinds[i], vals, casts[i])
    return path, cols


def add_filters_round_trip():
    global checked
    n = 30000
    table = pa.table({"id": pa.array([i * 7 - 50000 for i in range(n)], pa.int64()),
                      "name": pa.array([f"user-{i}" for i in range(n)])})
    plain = os.path.join(WORK, "plain.parquet")
    pq.write_table(table, plain, row_group_size=10000)
    out = os.path.join(WORK, "added.parquet")
    bl("parquet", "add-filters", plain, "-o", out, "--column", "id", "--column", "name", "--fpp", "0.01")
    con = duckdb.connect()
    if con.execute("select count(*) from read_parquet(?)", [out]).fetchone()[0] != n:
        fail("DuckDB reads another number of rows from the file add-filters wrote")
    for k, want in [(-50000, 1), (7 * 12345 - 50000, 1), (3, 0)]:
        got = con.execute("select count(*) from read_parquet(?) where id = ?", [out, k]).fetchone()[0]
        if got != want:
            fail(f"DuckDB: id = {k} gives {got} rows, expected {want}")
    keys = [str(i * 7 - 50000) for i in range(0, n, 97)] + [str(i) for i in range(1, 7000, 7)]
    _, ours = probe(out, "id", keys)
    theirs = duck_excludes(out, "id", keys, "?::BIGINT")
    for k, a, b in zip(keys, ours, theirs):
        if a != b:
            fail(f"add-filters id {k}: bloomlanes says row groups {a}, DuckDB {b}")
        checked += 1
    # bloomlanes query on the imported row-group filter agrees with DuckDB too.
    blf = os.path.join(WORK, "rg1.blf")
    bl("import", out, "--column", "id", "--row-group", "1", "-o", blf)
    kf = os.path.join(WORK, "q.txt")
    with open(kf, "w") as f:
        f.write("\n".join(keys) + "\n")
    q = bl("query", blf, kf)
    matching = set(q["matching_keys"])
    for k, b in zip(keys, theirs):
        if (k in matching) != (1 in b):
            fail(f"bloomlanes query {k}: {k in matching}, DuckDB row group 1: {1 in b}")
    print(f"ok: add-filters: DuckDB reads {n} rows, right answers, {len(keys)} probes agree (probe and query)")
    # A deliberately wrong filter: zero the bitset of row group 0's id filter.
    meta = con.execute("select row_group_id, path_in_schema, bloom_filter_offset, bloom_filter_length "
                       "from parquet_metadata(?) where path_in_schema = 'id'", [out]).fetchall()
    rg0 = [m for m in meta if m[0] == 0][0]
    off, length = rg0[2], rg0[3]
    data = bytearray(open(out, "rb").read())
    bitset = length - length % 32
    data[off + length - bitset: off + length] = bytes(bitset)
    wrong = os.path.join(WORK, "wrong.parquet")
    open(wrong, "wb").write(data)
    k = -50000  # in row group 0
    if con.execute("select count(*) from read_parquet(?) where id = ?", [wrong, k]).fetchone()[0] != 0:
        fail("DuckDB still finds the row behind a zeroed filter: it did not use the filter")
    if duck_excludes(wrong, "id", [str(k)], "?::BIGINT")[0] != []:
        fail("parquet_bloom_probe does not see the zeroed filter")
    _, ours = probe(wrong, "id", [str(k)])
    if ours[0] != []:
        fail("bloomlanes probe does not see the zeroed filter")
    print("ok: a zeroed filter makes DuckDB (and bloomlanes) drop the row group: the filter is used")


def main():
    print(f"duckdb {duckdb.__version__}, pyarrow {pa.__version__}")
    path, cols = pyarrow_file()
    check_file(path, cols, "pyarrow")
    path, cols = duckdb_file()
    check_file(path, cols, "duckdb")
    add_filters_round_trip()
    print(f"{checked} values checked")


main()
