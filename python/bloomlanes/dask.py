"""Building one filter across a Dask cluster, and filtering with it on every worker.

Split-block filters merge exactly: the OR of filters built from disjoint parts of a key stream is,
bit for bit, the filter of the whole stream, *provided every part was built with the same
parameters* (layout, block count, seed, key type). :func:`build_filter` therefore sizes the filter
once, for the TOTAL number of keys, and every shard uses those parameters:

* under a ``distributed`` Client, every worker process keeps one shard and inserts each
  partition it computes into it (``method="worker-shards"``: neither partitions nor filters move
  while keys are inserted); with any other scheduler, a few long *chains* of tasks insert
  partition after partition into one shard each (``method="chains"``);
* the shards are ORed together in a tree (``split_every`` at a time), and the key count of the
  result is the sum of the keys inserted, as in a single build.

The result is byte-identical to ``Filter(total, ...)`` with every key inserted on one machine
(``to_bytes()`` compares equal).

Sizing guidance for shards: never size a shard for its own share of the keys. A shard sized for
``n / k`` keys has ``1 / k`` of the blocks, cannot be ORed with the others, and would not give the
rate asked for anyway once merged. Size for the total (``capacity=`` or let :func:`build_filter`
count the keys); each worker then holds one full-size filter per chain (``Filter(...).nbytes``:
about 1.2 bytes per key at ``fpr=0.01``), plus one more while two shards are merged, and every
shard but one crosses the network once during the reduction. Memory per worker is therefore one
full-size filter (per chain with ``method="chains"``) plus the partitions in flight: when the
filter does not fit a worker, the keys do not fit one machine's filter either, and a single
filter is the wrong tool (split the key space, e.g. by a hash prefix, into separate filters).

Worker threads: each task runs the SIMD backend on as many threads as its worker has
(``threads_per_worker``), so run workers with ``threads_per_worker=1`` and one worker process
per core for the most parallel build.

Example (see ``python/examples/dask_build.py``)::

    from dask.distributed import Client, LocalCluster
    import dask.array as da
    import bloomlanes.dask as bld

    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster):
        keys = da.arange(10**8, dtype="u8", chunks=10**7)
        f = bld.build_filter(keys, fpr=0.01)
        mask = bld.contains(da.arange(10**8, 2 * 10**8, dtype="u8", chunks=10**7), f)
        print(mask.sum().compute())       # about 1% false positives
"""

from __future__ import annotations

import os
import threading
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import Filter, set_threads
from ._keytypes import arrow_cast_for, key_type_of_arrow, key_type_of_keys

__all__ = ["build_filter", "contains", "filter_dataframe", "parquet_pieces", "partition_keys"]

#: A shard while it is built: the filter and the number of keys inserted into it.
_Shard = Tuple[Filter, int]

_threads_set = False


def _use_worker_threads() -> None:
    """In a distributed worker, run the SIMD backend on the worker's own thread count."""
    global _threads_set
    if _threads_set:
        return
    _threads_set = True
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return
    nthreads = getattr(getattr(worker, "state", worker), "nthreads", 0)
    if nthreads:
        set_threads(int(nthreads))


def partition_keys(part: Any, column: Optional[str] = None) -> Any:
    """The keys of one partition in a form ``Filter.insert`` reads without a copy.

    numpy arrays pass as they are; a pandas DataFrame gives ``part[column]``; a pandas Series
    gives its Arrow data when it is Arrow-backed (``string[pyarrow]``, nullable dtypes: nulls are
    skipped), else its numpy array; a pyarrow Table gives ``part.column(column)``.
    """
    if isinstance(part, np.ndarray):
        return part
    if column is not None and hasattr(part, "column") and hasattr(part, "schema"):
        return part.column(column)  # pyarrow Table
    if column is not None and hasattr(part, "columns"):
        part = part[column]  # pandas DataFrame
    array = getattr(part, "array", None)
    if array is not None and hasattr(array, "__arrow_array__"):
        return array.__arrow_array__()
    if hasattr(part, "to_numpy"):
        return part.to_numpy()
    return part


def _new_shard(params: dict) -> _Shard:
    return Filter.with_params(**params), 0


def _insert(shard: _Shard, part: Any, column: Optional[str]) -> _Shard:
    # The filter is updated in place (no copy of a full-size filter per partition). A retried
    # task re-inserts the same keys: the bits are unchanged, and the count comes from the
    # immutable count of the previous step.
    _use_worker_threads()
    filt, count = shard
    keys = partition_keys(part, column)
    before = filt.key_count or 0
    filt.insert(keys)
    return filt, count + ((filt.key_count or 0) - before)


def _read_piece(piece: Tuple[str, int], column: Tuple[str, str]) -> Any:
    """One row group's keys, cast to the build's key type where the file's type differs (a
    dataset whose files hold int32 here and int64 there builds one i64 filter)."""
    import pyarrow.parquet as pq

    (path, row_group), (name, key_type) = piece, column
    keys = pq.ParquetFile(path).read_row_group(row_group, columns=[name]).column(0)
    cast = arrow_cast_for(keys.type, key_type)
    return keys.cast(cast) if cast is not None else keys


def _insert_piece(shard: _Shard, piece: Tuple[str, int], column: Tuple[str, str]) -> _Shard:
    return _insert(shard, _read_piece(piece, column), None)


def _merge(*shards: _Shard) -> _Shard:
    _use_worker_threads()
    filt, count = shards[0]
    for other, n in shards[1:]:
        filt |= other
        count += n
    return filt, count


def _finish(shard: _Shard) -> Filter:
    filt, count = shard
    filt.key_count = count
    return filt


def parquet_pieces(paths: Union[str, Sequence[str]]) -> List[Tuple[str, int, int]]:
    """The row groups of a Parquet dataset: ``(file, row group, rows)`` for every row group of
    every ``.parquet`` file under ``paths`` (files or folders), in sorted order."""
    import pyarrow.parquet as pq

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: List[str] = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, n) for n in names if n.endswith(".parquet")]
        else:
            files.append(p)
    pieces = []
    for f in sorted(files):
        meta = pq.ParquetFile(f).metadata
        pieces += [(f, i, meta.row_group(i).num_rows) for i in range(meta.num_row_groups)]
    return pieces


def _parquet_key_type(path: str, column: str) -> str:
    """The key type of ``column`` from a Parquet file's schema (read on the driver)."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    if column not in schema.names:
        raise ValueError(f"{path}: no column {column!r} (columns: {schema.names})")
    return key_type_of_arrow(schema.field(column).type, what=f"{path}: column {column!r}")


def _client() -> Any:
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def _default_chains() -> int:
    try:
        from distributed import default_client

        return max(1, len(default_client().scheduler_info().get("workers", {})))
    except (ImportError, ValueError):
        return os.cpu_count() or 1


# Worker-local shards of the builds in progress in this worker process, by build id.
_LOCAL: dict = {}
_LOCAL_LOCK = threading.Lock()


def _insert_local(build_id: str, params: dict, part: Any, column: Optional[str]) -> Tuple[str, int]:
    """Inserts one partition into this worker's shard of the build; returns (worker, keys)."""
    _use_worker_threads()
    from distributed import get_worker

    address = get_worker().address
    keys = partition_keys(part, column)
    with _LOCAL_LOCK:  # one insert at a time per worker (each insert uses the worker's threads)
        shard = _LOCAL.get(build_id)
        if shard is None:
            shard = _LOCAL[build_id] = Filter.with_params(**params)
        before = shard.key_count or 0
        shard.insert(keys)
        return address, (shard.key_count or 0) - before


def _insert_local_piece(build_id: str, params: dict, piece: Tuple[str, int],
                        column: Tuple[str, str]) -> Tuple[str, int]:
    return _insert_local(build_id, params, _read_piece(piece, column), None)


def _take_local(build_id: str) -> Filter:
    with _LOCAL_LOCK:
        shard = _LOCAL.pop(build_id, None)
    if shard is None:
        raise RuntimeError("a worker's shard of the filter was lost during the build (the "
                           "worker restarted?); run build_filter again")
    return shard


def _drop_local(build_id: str) -> None:
    with _LOCAL_LOCK:
        _LOCAL.pop(build_id, None)


def _or_filters(*filters: Filter) -> Filter:
    _use_worker_threads()
    out = filters[0]
    for f in filters[1:]:
        out |= f
    return out


def _build_on_worker_shards(client: Any, steps: list, params: dict, split_every: int) -> Filter:
    """One shard per worker process: every partition is inserted, on the worker that holds it,
    into that worker's shard (no partition and no filter moves while inserting); then the
    shards are ORed in a tree. Needs a distributed Client."""
    import uuid

    import dask

    build_id = uuid.uuid4().hex
    local = {_insert: _insert_local, _insert_piece: _insert_local_piece}
    tasks = [dask.delayed(local[fn], pure=False)(build_id, params, part, col)
             for fn, part, col in steps]
    try:
        done = dask.compute(*tasks)
        counts: dict = {}
        for address, n in done:
            counts[address] = counts.get(address, 0) + n
        if not counts:
            empty = Filter.with_params(**params)
            empty.key_count = 0
            return empty
        shards = [client.submit(_take_local, build_id, workers=[address],
                                allow_other_workers=False, pure=False)
                  for address in sorted(counts)]
        while len(shards) > 1:
            shards = [client.submit(_or_filters, *shards[i:i + split_every], pure=False)
                      for i in range(0, len(shards), split_every)]
        result = shards[0].result()
        result.key_count = sum(counts.values())
        return result
    finally:
        client.run(_drop_local, build_id)


def build_filter(
    keys: Any,
    *,
    column: Optional[str] = None,
    capacity: Optional[int] = None,
    fpr: Optional[float] = None,
    bits_per_key: Optional[float] = None,
    layout: Optional[str] = None,
    seed: int = 0,
    key_type: Optional[str] = None,
    chains: Optional[int] = None,
    split_every: int = 2,
    compute: bool = True,
    method: str = "auto",
) -> Any:
    """Builds one filter from all keys of a Dask collection or a Parquet dataset.

    ``keys`` is a 1-D ``dask.array.Array``, a ``dask.dataframe`` Series, a DataFrame with
    ``column``, or Parquet files/folders (a path or a list of paths) with ``column``: then every
    row group is read on a worker (pyarrow, no copy on the way to the filter).

    ``capacity`` is the TOTAL number of keys the filter is sized for (default: counted, from the
    Parquet metadata, the array's size, or one pass over the dataframe). ``fpr``,
    ``bits_per_key``, ``layout``, ``seed`` and ``key_type`` are those of :class:`Filter`;
    ``key_type=None`` settles it here, before any shard is built, from the array's dtype, the
    Series' meta or the Parquet schema (so no shard learns a type of its own). The
    keys go into ``chains`` shards (default: one per worker of the current client, else one per
    core), which are ORed ``split_every`` at a time.

    ``method``: ``"worker-shards"`` keeps one shard in each worker process and inserts every
    partition where it was computed (needs a ``distributed`` Client; the fastest: nothing but
    the final shards crosses the network); ``"chains"`` builds ``chains`` shards as chains of
    dask tasks (any scheduler; a shard may move between workers with its chain, and so may
    partitions); ``"auto"``: worker shards under a distributed Client, else chains.
    ``compute=False`` (chains only) returns a ``dask.delayed`` object instead.

    Returns the :class:`Filter`, byte-identical to the single-machine build of the same keys
    with the same arguments.
    """
    import dask

    if isinstance(keys, (str, os.PathLike)) or (
        isinstance(keys, (list, tuple)) and keys and isinstance(keys[0], (str, os.PathLike))
    ):
        if column is None:
            raise ValueError("a Parquet dataset needs column=")
        pieces = parquet_pieces(keys)
        total = sum(rows for _, _, rows in pieces)
        if key_type is None and pieces:
            key_type = _parquet_key_type(pieces[0][0], column)
        steps = [(_insert_piece, (path, rg), (column, key_type)) for path, rg, _ in pieces]
    else:
        collection = keys
        if column is not None and hasattr(collection, "columns"):
            collection = collection[column]
        if hasattr(collection, "ndim") and hasattr(collection, "chunks"):  # dask array
            if collection.ndim != 1:
                raise ValueError(f"expected a 1-D dask array, got {collection.ndim} dimensions")
            total = collection.size if capacity is None else capacity
            if total != total:  # NaN: unknown chunk sizes
                total = int(collection.map_blocks(lambda b: np.array([b.size])).sum().compute())
            parts = list(collection.to_delayed().ravel())
        elif hasattr(collection, "to_delayed"):  # dask dataframe Series
            parts = list(collection.to_delayed())
            total = capacity if capacity is not None else int(collection.size.compute())
        else:
            raise TypeError(
                f"keys must be a dask array, a dask Series/DataFrame or Parquet paths, "
                f"not {type(keys).__name__}"
            )
        steps = [(_insert, part, None) for part in parts]
        if key_type is None:  # from the dtype or meta, so that no shard learns its own
            meta = getattr(collection, "_meta", None)
            key_type = key_type_of_keys(partition_keys(meta) if meta is not None
                                        else np.empty(0, collection.dtype))
    total = int(capacity if capacity is not None else total)

    sizing = Filter(
        total, fpr, bits_per_key=bits_per_key, layout=layout, seed=seed, key_type=key_type
    )
    params = sizing.params
    del sizing

    client = _client()
    if method == "auto":
        method = "worker-shards" if client is not None and compute else "chains"
    if method == "worker-shards":
        if client is None:
            raise ValueError("method='worker-shards' needs a dask.distributed Client")
        return _build_on_worker_shards(client, steps, params, max(2, split_every))
    if method != "chains":
        raise ValueError(f"unknown method {method!r} (auto, worker-shards or chains)")

    n_chains = max(1, min(chains or _default_chains(), len(steps) or 1))
    per_chain = -(-len(steps) // n_chains) if steps else 0
    shards = []
    for c in range(n_chains):
        shard = dask.delayed(_new_shard, pure=False)(params)
        for fn, part, col in steps[c * per_chain : (c + 1) * per_chain]:
            shard = dask.delayed(fn, pure=False)(shard, part, col)
        shards.append(shard)
    split_every = max(2, split_every)
    while len(shards) > 1:
        shards = [
            dask.delayed(_merge, pure=False)(*shards[i : i + split_every])
            for i in range(0, len(shards), split_every)
        ]
    result = dask.delayed(_finish, pure=False)(shards[0])
    return result.compute() if compute else result


def _broadcast(filt: Filter) -> Any:
    """The filter as one graph key that every task shares (shipped once to each worker)."""
    import dask

    return dask.delayed(filt, pure=True)


def _mask(part: Any, filt: Filter, column: Optional[str]) -> np.ndarray:
    _use_worker_threads()
    return filt.contains(partition_keys(part, column))


def contains(keys: Any, filt: Filter, *, column: Optional[str] = None) -> Any:
    """``filt.contains`` on every partition, on the workers: a dask bool array for a dask array,
    a boolean dask Series for a Series (or a DataFrame with ``column``). The filter is sent to
    each worker once."""
    shared = _broadcast(filt)
    if hasattr(keys, "chunks") and hasattr(keys, "map_blocks"):
        return keys.map_blocks(_mask, shared, None, dtype=bool, meta=np.empty(0, dtype=bool))
    series = keys[column] if column is not None and hasattr(keys, "columns") else keys
    import pandas as pd

    def mask_series(part: Any, f: Filter) -> Any:
        return pd.Series(_mask(part, f, None), index=part.index, name=part.name)

    return series.map_partitions(mask_series, shared, meta=(series.name, bool))


def filter_dataframe(df: Any, filt: Filter, column: str) -> Any:
    """The rows of a dask DataFrame whose ``column`` may be in ``filt`` (a lazy DataFrame),
    computed on the workers with the filter sent to each of them once."""
    shared = _broadcast(filt)

    def keep(part: Any, f: Filter) -> Any:
        return part[_mask(part, f, column)]

    return df.map_partitions(keep, shared, meta=df._meta)
