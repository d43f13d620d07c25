"""bloomlanes.spark against a local Spark session (local[2], small data, few partitions):
per-partition builds merge into the exact bytes of a one-shot build, the key type is settled
from the schema before any task starts, and the broadcast probe answers as Filter.contains.

Skipped, with the reason shown by ``pytest -rs``, without pyspark or a Java runtime."""

import datetime
import os
import shutil
import sys
import time

import numpy as np
import pytest

import bloomlanes

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark", reason="SKIP: pyspark not installed (pip install pyspark)")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("SKIP: no Java runtime for Spark (apt-get install default-jre-headless)",
                allow_module_level=True)

import bloomlanes.spark as bls  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from shards import one_shot  # noqa: E402

PARTITIONS = 4


@pytest.fixture(scope="module")
def spark():
    # The Python workers run this interpreter (the one with bloomlanes), not python3 on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    start = time.monotonic()
    session = (
        SparkSession.builder.master("local[2]")
        .appName("bloomlanes-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(PARTITIONS))
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    print(f"\nspark: session started in {time.monotonic() - start:.1f} s")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def step_time(request):
    start = time.monotonic()
    yield
    print(f"\nspark: {request.node.name} {time.monotonic() - start:.1f} s")


def test_long_column_is_byte_identical_to_one_shot(spark):
    n = 200_000
    df = spark.range(0, n, numPartitions=PARTITIONS).withColumnRenamed("id", "user")
    got = bls.build_filter(df, "user", fpr=0.01)
    want = one_shot(np.arange(n, dtype=np.int64), n, fpr=0.01, key_type="i64")
    assert got.key_type == "i64"
    assert got.key_count == n
    assert got.to_bytes() == want.to_bytes()
    # A deeper reduction over more shards than cores changes nothing.
    again = bls.build_filter(df.repartition(7), "user", fpr=0.01, depth=3)
    assert again.to_bytes() == want.to_bytes()


def test_string_column_with_nulls_and_empty_partitions(spark):
    names = [f"user-{i}" for i in range(5_000)]
    rows = [(n,) for n in names] + [(None,)] * 50
    # More partitions than rows in some: empty partitions give empty shards that merge away.
    df = spark.createDataFrame(rows, "name string").repartition(12)
    got = bls.build_filter(df, "name", fpr=0.001)
    want = one_shot(pa.array(names), len(names), fpr=0.001, key_type="bytes")
    assert got.key_type == "bytes" and got.key_count == len(names)
    assert got.to_bytes() == want.to_bytes()


def test_key_type_settled_from_schema_before_tasks(spark):
    # One partition holds only nulls: on its own it would learn no key type (or another).
    df = spark.createDataFrame([(None,), (None,), (1,), (2,)], "k int").coalesce(1)
    df = df.repartitionByRange(2, F.col("k").asc_nulls_first())
    assert bls.key_type(df, "k") == "i32"
    got = bls.build_filter(df, "k", capacity=10, fpr=0.01)
    assert got.key_type == "i32"
    assert got.to_bytes() == one_shot(np.array([1, 2], np.int32), 10, fpr=0.01,
                                      key_type="i32").to_bytes()
    # No task sees a key: the filter still records the schema's type (shards learning their
    # own would leave it unset, and a later merge with an i64 filter of the same column fails).
    empty = bls.build_filter(spark.range(0, numPartitions=2), "id", capacity=10, fpr=0.01)
    assert empty.key_type == "i64" and empty.key_count == 0


def test_schema_types_map_to_key_types(spark):
    # One DataFrame, a column per Spark type; capacity given, so each build is one Spark job.
    columns = {
        "s": ("short", [1, -2, 300], "i32"),  # widened to int32, as Parquet stores INT16
        "d": ("double", [1.5, -0.0, 1e300], "f64"),
        "f": ("float", [1.5, 2.25, -3.0], "f32"),
        "t": ("date", [datetime.date(2024, 2, 29), datetime.date(1970, 1, 1),
                       datetime.date(1969, 12, 31)], "date"),
        "b": ("binary", [b"\x00\x01", b"xyz", b""], "bytes"),
    }
    schema = ", ".join(f"{name} {spark_type}" for name, (spark_type, _, _) in columns.items())
    rows = list(zip(*(values for _, values, _ in columns.values())))
    df = spark.createDataFrame(rows, schema).repartition(2)
    for name, (spark_type, values, key_type) in columns.items():
        assert bls.key_type(df, name) == key_type, spark_type
        f = bls.build_filter(df, name, capacity=100, fpr=0.01)
        assert f.key_type == key_type and f.key_count == len(values), spark_type
        assert all(r.in_filter for r in bls.contains(df.select(name), name, f).collect())


def test_explicit_key_type_overrides_schema(spark):
    df = spark.range(1_000, numPartitions=2).select(F.col("id").cast("int").alias("k"))
    got = bls.build_filter(df, "k", fpr=0.01, key_type="i64")
    assert got.key_type == "i64"
    assert got.to_bytes() == one_shot(np.arange(1_000, dtype=np.int64), 1_000, fpr=0.01,
                                      key_type="i64").to_bytes()
    with pytest.raises(bloomlanes.KeyTypeError):
        bls.build_filter(spark.createDataFrame([(True,)], "k boolean"), "k", fpr=0.01)


def test_probe_adds_a_bool_column_matching_contains(spark):
    f = one_shot(np.arange(0, 50_000, 2, dtype=np.int64), 25_000, fpr=0.01, key_type="i64")
    probe = spark.range(0, 20_000, numPartitions=PARTITIONS).withColumnRenamed("id", "k")
    out = bls.contains(probe, "k", f)
    assert out.columns == ["k", "in_filter"]
    got = [row.in_filter for row in out.orderBy("k").collect()]
    want = f.contains(np.arange(20_000, dtype=np.int64))
    assert got == want.tolist()
    assert all(got[::2])  # every inserted key found
    kept = bls.filter_dataframe(probe, "k", f)
    assert kept.columns == ["k"] and kept.count() == int(want.sum())


def test_probe_refuses_a_column_of_another_key_type(spark):
    f = one_shot(pa.array(["a", "b"]), 10, fpr=0.01)
    df = spark.range(10)
    with pytest.raises(bloomlanes.KeyTypeError, match="id"):
        bls.contains(df, "id", f)  # raised on the driver, before any task
    # An int column probes an i64 filter (widened losslessly); nulls answer False.
    g = one_shot(np.array([1, 2], np.int64), 10, fpr=0.01, key_type="i64")
    ints = spark.createDataFrame([(1,), (None,), (3,)], "k int")
    assert [r.in_filter for r in bls.contains(ints, "k", g).collect()] == [True, False, False]
