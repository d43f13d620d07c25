"""The Dask build on a LocalCluster of worker processes: byte-identical to the single-machine
build, for dask arrays, dataframes and Parquet datasets; filtering on the workers."""

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import bloomlanes.dask as bld
from shards import one_shot as single

dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_array_build_is_byte_identical(client):
    n = 3_000_000
    keys = da.arange(n, dtype="u8", chunks=400_000)
    want = single(np.arange(n, dtype=np.uint64), n, fpr=0.01)
    for kw in ({}, {"method": "worker-shards", "split_every": 3}, {"method": "chains"},
               {"method": "chains", "chains": 1}, {"method": "chains", "chains": 3, "split_every": 3},
               {"method": "chains", "chains": 8}):
        got = bld.build_filter(keys, fpr=0.01, **kw)
        assert got.to_bytes() == want.to_bytes(), kw
    assert got.key_count == n and got.key_type == "u64"
    lazy = bld.build_filter(keys, fpr=0.01, compute=False)
    assert lazy.compute().to_bytes() == want.to_bytes()
    # The worker shards are gone once the build is over.
    assert client.run(lambda: len(bld._LOCAL)) == {w: 0 for w in client.scheduler_info()["workers"]}


def test_worker_shards_lost_is_an_error(client):
    keys = da.arange(100_000, dtype="u8", chunks=10_000)

    def lose(build_id, *args):
        bld._LOCAL.pop(build_id, None)
        return bld._take_local(build_id)

    original = bld._take_local
    try:
        bld._take_local = lose  # the shard vanishes, as when a worker restarts
        with pytest.raises(RuntimeError, match="shard of the filter was lost"):
            bld.build_filter(keys, fpr=0.01, method="worker-shards")
    finally:
        bld._take_local = original


def test_local_scheduler_without_client():
    import dask

    keys = da.arange(200_000, dtype="u8", chunks=30_000)
    with dask.config.set(scheduler="threads"):
        got = bld.build_filter(keys, fpr=0.01, method="chains", chains=2)
    want = single(np.arange(200_000, dtype=np.uint64), 200_000, fpr=0.01)
    assert got.to_bytes() == want.to_bytes()


def test_sharding_params_and_layout_options(client):
    n = 500_000
    keys = da.arange(n, dtype="i8", chunks=60_000) * 7
    for kw in (dict(bits_per_key=12, layout="16x64", seed=3, key_type="i64"),
               dict(fpr=0.001, layout="8x32")):
        got = bld.build_filter(keys, **kw)
        want = single(np.arange(n, dtype=np.int64) * 7, n, **dict(kw))
        assert got.to_bytes() == want.to_bytes(), kw


def test_dataframe_strings_and_filtering(client):
    n = 200_000
    pdf = pd.DataFrame({"k": [f"user-{i}" for i in range(n)], "v": np.arange(n)})
    ddf = dd.from_pandas(pdf, npartitions=7)
    got = bld.build_filter(ddf, column="k", fpr=0.001)
    want = single(list(pdf.k), n, fpr=0.001)
    assert got.to_bytes() == want.to_bytes()
    q = dd.from_pandas(pd.DataFrame({"k": [f"user-{i}" for i in range(n - 50, n + 50)]}),
                       npartitions=3)
    kept = bld.filter_dataframe(q, got, "k").compute()
    assert set(f"user-{i}" for i in range(n - 50, n)) <= set(kept.k)
    assert len(kept) < 60
    mask = bld.contains(q, got, column="k").compute()
    assert mask.iloc[:50].all() and mask.sum() == len(kept)


def test_parquet_dataset(client, tmp_path):
    n = 400_000
    ids = np.arange(n, dtype=np.int64) * 3 + 1
    names = pa.array([f"n{i}" for i in range(n)])
    for part in range(4):
        sl = slice(part * n // 4, (part + 1) * n // 4)
        table = pa.table({"id": ids[sl], "name": names[sl]})
        pq.write_table(table, tmp_path / f"part-{part}.parquet", row_group_size=30_000)
    pieces = bld.parquet_pieces(str(tmp_path))
    assert len(pieces) == 4 * 4 and sum(r for *_, r in pieces) == n
    got = bld.build_filter(str(tmp_path), column="id", fpr=0.01, layout="8x32")
    want = single(ids, n, fpr=0.01, layout="8x32")
    assert got.to_bytes() == want.to_bytes() and got.key_type == "i64"
    got_names = bld.build_filter([str(p) for p in sorted(tmp_path.iterdir())], column="name",
                                 fpr=0.01)
    assert got_names.to_bytes() == single(names, n, fpr=0.01).to_bytes()
    # Filter another dataset with the result broadcast to the workers.
    other = da.from_array(np.arange(n, dtype=np.int64), chunks=50_000)
    hits = bld.contains(other, got).compute()
    assert hits[ids[ids < n]].all()
    assert hits.sum() < len(ids[ids < n]) * 1.05


def test_key_type_settled_before_any_shard(client, tmp_path):
    # A dataset whose files hold the column as int64 here and int32 there: every shard builds
    # with the key type of the first file's schema (files in sorted order: a-wide's int64, so
    # i64) and casts its row groups to it; before, the shards learned i64 and i32 and the
    # merge failed on the client after all the work.
    pq.write_table(pa.table({"k": pa.array(np.arange(0, 500), pa.int64())}),
                   tmp_path / "a-wide.parquet")
    pq.write_table(pa.table({"k": pa.array(np.arange(500, 1_000), pa.int32())}),
                   tmp_path / "b-narrow.parquet")
    want = single(np.arange(1_000, dtype=np.int64), 1_000, fpr=0.01, key_type="i64")
    for method in ("worker-shards", "chains"):
        got = bld.build_filter(str(tmp_path), column="k", fpr=0.01, method=method)
        assert got.key_type == "i64" and got.key_count == 1_000
        assert got.to_bytes() == want.to_bytes()
    # No shard sees a key: the key type still comes from the dtype or the meta.
    empty = da.from_array(np.empty(0, dtype=np.int32), chunks=1)
    assert bld.build_filter(empty, capacity=10, fpr=0.01).key_type == "i32"
    names = dd.from_pandas(pd.Series(["x", "y"], dtype="string[pyarrow]"), npartitions=1)
    assert bld.build_filter(names[names == "z"], capacity=10, fpr=0.01).key_type == "bytes"
