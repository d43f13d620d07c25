"""Shared by the distributed-build tests (Dask, Spark): the one-shot build a sharded build must
equal byte for byte."""

import bloomlanes


def one_shot(keys, total, **kw):
    """``Filter(total, fpr, ...)`` with every key inserted at once, on this machine."""
    f = bloomlanes.Filter(total, kw.pop("fpr", None), **kw)
    f.insert(keys)
    return f
