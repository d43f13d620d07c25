"""Building one filter from a Spark DataFrame's column, and probing DataFrames with it.

:func:`build_filter` sizes the filter once, on the driver, for the TOTAL number of keys, and
settles the key type there from the DataFrame's schema (``string``/``binary`` -> ``bytes``,
``long`` -> ``i64``, ``int``/``short``/``byte`` -> ``i32``, ``float`` -> ``f32``, ``double`` ->
``f64``, ``date`` -> ``date``, ``timestamp``/``timestamp_ntz`` -> ``timestamp-us``; ``key_type=``
overrides, the column then being cast to it). Every task then builds a filter of exactly those
parameters from its partition's Arrow batches (``mapInArrow``: no row becomes a Python object)
and yields its bytes; the shards are ORed in a tree (``treeAggregate``) and the last few on the
driver. Filters of the same parameters merge bit for bit, and ``|`` adds the key counts, so the
result is byte-identical to ``Filter(total, ...)`` with every key inserted on one machine.

:func:`contains` adds a boolean column (``mapInArrow`` again) from a broadcast copy of the filter,
deserialized once per Python worker; :func:`filter_dataframe` keeps the rows it matches. Both
check on the driver that the column's key type is the filter's, so a mismatch is an error before
any task starts, never a column of silent ``False``.

Threads: Spark already runs one task per core, so each task runs the filter on ``threads=1``
thread by default, passed per call (``insert(keys, threads=…)``, ``contains(keys, threads=…)``),
so the package-wide setting of the Python worker is left alone.

Memory: every task holds one full-size filter (``Filter(...).nbytes``: about 1.2 bytes per key
at ``fpr=0.01``), and the driver the merged filter plus the few shards that reach it. A Spark
binary value is at most 2 GiB, so is the filter.

Example (see ``python/tests/test_spark.py``)::

    from pyspark.sql import SparkSession
    import bloomlanes.spark as bls

    spark = SparkSession.builder.master("local[*]").getOrCreate()
    users = spark.range(10**7).withColumnRenamed("id", "user")
    f = bls.build_filter(users, "user", fpr=0.01)           # key type i64, from the schema
    events = spark.range(10**7, 2 * 10**7).withColumnRenamed("id", "user")
    bls.contains(events, "user", f).where("in_filter").count()   # about 1% false positives
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

from . import Filter, KeyTypeError
from ._keytypes import arrow_cast_for, key_type_of_arrow

__all__ = ["build_filter", "contains", "filter_dataframe", "key_type"]


def _arrow_type(df: Any, column: str) -> Any:
    """The Arrow type Spark gives ``column`` in ``mapInArrow`` batches."""
    try:
        from pyspark.sql.pandas.types import to_arrow_type
    except ImportError:  # pragma: no cover - very old PySpark
        from pyspark.sql.types import to_arrow_type  # type: ignore[attr-defined,no-redef]

    if column not in df.columns:
        raise ValueError(f"no column {column!r} in the DataFrame (columns: {df.columns})")
    data_type = df.schema[column].dataType
    try:
        return to_arrow_type(data_type)
    except (TypeError, ValueError, NotImplementedError) as e:
        raise KeyTypeError(f"column {column!r} ({data_type.simpleString()}) cannot be a "
                           f"filter's keys: {e}") from None


def key_type(df: Any, column: str, key_type: Optional[str] = None) -> str:
    """The key type a filter of ``df[column]`` records, settled from the DataFrame's schema
    (``key_type`` when given, checked against the column's type)."""
    data_type = df.schema[column].dataType.simpleString() if column in df.columns else "?"
    return key_type_of_arrow(_arrow_type(df, column), key_type,
                             what=f"column {column!r} ({data_type})")


def _task_keys(batch: Any, column: str, cast: Any) -> Any:
    keys = batch.column(batch.schema.get_field_index(column))
    return keys.cast(cast) if cast is not None else keys


def _or_bytes(a: Optional[bytes], b: Optional[bytes]) -> Optional[bytes]:
    """One step of the tree reduction: the OR of two shards' bytes (None: no shard yet)."""
    if a is None or b is None:
        return b if a is None else a
    merged = Filter.from_bytes(a)
    merged |= Filter.from_bytes(b)
    return merged.to_bytes()


def build_filter(df: Any, column: str, fpr: Optional[float] = None, *,
                 capacity: Optional[int] = None, key_type: Optional[str] = None,
                 threads: int = 1, depth: int = 2, **sizing: Any) -> Filter:
    """One filter of every non-null value of ``df[column]``, built in parallel by Spark.

    ``capacity`` is the TOTAL number of keys the filter is sized for (default: the column's
    non-null values, counted by one Spark job). ``fpr`` and the other ``sizing`` arguments
    (``bits_per_key``, ``layout``, ``seed``) are those of :class:`Filter`; ``key_type``
    overrides the one settled from the schema. ``threads`` is the thread count of each task's
    inserts; ``depth`` that of the ``treeAggregate`` that ORs the shards.

    Returns the :class:`Filter`, byte-identical to the single-machine build of the same keys
    with the same arguments (``to_bytes()`` compares equal), its key count the keys inserted.
    """
    import pyarrow as pa

    arrow_type = _arrow_type(df, column)
    settled = key_type_of_arrow(arrow_type, key_type, what=f"column {column!r}")
    cast = arrow_cast_for(arrow_type, key_type)
    keys = df.select(column)
    if capacity is None:
        capacity = keys.where(keys[column].isNotNull()).count()
    params = Filter(int(capacity), fpr, key_type=settled, **sizing).params
    schema = pa.schema([pa.field("filter", pa.binary(), nullable=False)])

    def build_shard(batches: Iterator[Any]) -> Iterator[Any]:
        shard = Filter.with_params(**params)
        for batch in batches:
            shard.insert(_task_keys(batch, column, cast), threads=threads)
        yield pa.RecordBatch.from_arrays([pa.array([shard.to_bytes()], pa.binary())],
                                         schema=schema)

    shards = keys.mapInArrow(build_shard, "filter binary").rdd.map(lambda row: bytes(row[0]))
    merged = shards.treeAggregate(None, _or_bytes, _or_bytes, depth=max(1, depth))
    if merged is None:  # no partition at all
        empty = Filter.with_params(**params)
        empty.key_count = 0
        return empty
    return Filter.from_bytes(merged)


def _probe_setup(df: Any, column: str, filt: Filter) -> Any:
    """The cast of ``column`` for probing ``filt``, after checking on the driver that the
    column's key type is the filter's."""
    arrow_type = _arrow_type(df, column)
    if filt.key_type is None:
        return arrow_cast_for(arrow_type)
    natural = key_type_of_arrow(arrow_type, what=f"column {column!r}")
    if natural == filt.key_type:
        return arrow_cast_for(arrow_type)
    # A filter of another type: only an explicit, lossless reading of the column (e.g. int ->
    # i64) is allowed; anything else would answer False for keys that are there.
    return _checked_cast(arrow_type, filt.key_type, column)


def _checked_cast(arrow_type: Any, wanted: str, column: str) -> Any:
    import pyarrow as pa

    cast = arrow_cast_for(arrow_type, wanted)
    widening = cast is not None and (
        (pa.types.is_integer(arrow_type) and pa.types.is_integer(cast)
         and pa.types.is_signed_integer(arrow_type) == pa.types.is_signed_integer(cast)
         and cast.bit_width >= arrow_type.bit_width)
        or (pa.types.is_binary(cast) and (pa.types.is_string(arrow_type)
                                          or pa.types.is_large_string(arrow_type)))
    )
    if not widening:
        raise KeyTypeError(f"column {column!r} ({arrow_type}) does not hold the filter's key "
                           f"type {wanted}: cast the column first")
    return cast


def contains(df: Any, column: str, filt: Filter, *, name: str = "in_filter",
             threads: int = 1) -> Any:
    """``df`` with a boolean column ``name``: whether ``df[column]`` may be in ``filt``
    (False for nulls). The filter is broadcast, and deserialized once per Python worker."""
    import pyarrow as pa
    from pyspark.sql.types import BooleanType, StructField, StructType

    if name in df.columns:
        raise ValueError(f"the DataFrame already has a column {name!r}: pass name=")
    cast = _probe_setup(df, column, filt)
    shared = df.sparkSession.sparkContext.broadcast(filt)
    out_schema = StructType(df.schema.fields + [StructField(name, BooleanType(), False)])

    def probe(batches: Iterator[Any]) -> Iterator[Any]:
        f = shared.value
        for batch in batches:
            hits = f.contains(_task_keys(batch, column, cast), threads=threads)
            yield pa.RecordBatch.from_arrays(
                list(batch.columns) + [pa.array(hits, pa.bool_())],
                names=list(batch.schema.names) + [name],
            )

    return df.mapInArrow(probe, out_schema)


def filter_dataframe(df: Any, column: str, filt: Filter, *, threads: int = 1) -> Any:
    """The rows of ``df`` whose ``column`` may be in ``filt`` (a lazy DataFrame)."""
    marker = "__bloomlanes_in_filter"
    return contains(df, column, filt, name=marker, threads=threads).where(marker).drop(marker)
