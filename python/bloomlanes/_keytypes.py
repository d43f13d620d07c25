"""Settling a filter's key type from a column's declared type, before any shard is built.

A shard built with ``key_type=None`` records the type of the first keys it sees, so two shards of
one column could record different types (an all-null partition, an int32 partition beside an
int64 one) and refuse to merge on the driver after all the work. The distributed builders
(``bloomlanes.dask``, ``bloomlanes.spark``) therefore settle the key type once, on the driver,
from the column's schema or dtype, and give it to every shard.

The mapping is the extension's own: :func:`key_type_of_arrow` and :func:`key_type_of_numpy`
insert an empty array of the type into a scratch filter and read back the key type it records,
so they agree with ``Filter.insert`` by construction.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import Filter, KeyTypeError

#: Arrow types Filter.insert does not take, and the type their values are widened to (the
#: widening Parquet itself applies: INT8/INT16 are stored as INT32).
_WIDENED = {"int8": "int32", "int16": "int32", "uint8": "uint32", "uint16": "uint32"}

#: The Arrow type of each fixed key type (what a column is cast to when ``key_type=`` is given).
_ARROW_OF_KEY_TYPE = {
    "bytes": "binary",
    "u64": "uint64",
    "i64": "int64",
    "u32": "uint32",
    "i32": "int32",
    "f32": "float32",
    "f64": "float64",
    "date": "date32",
    "timestamp-ms": "timestamp[ms]",
    "timestamp-us": "timestamp[us]",
    "timestamp-ns": "timestamp[ns]",
}


def _learned(keys: Any, what: str) -> str:
    probe = Filter.with_params("8x32", 1)
    try:
        probe.insert(keys)
    except (KeyTypeError, TypeError, ValueError) as e:
        raise KeyTypeError(f"{what} cannot be a filter's keys: {e}") from None
    if probe.key_type is None:
        raise KeyTypeError(f"{what} does not settle a key type; pass key_type=")
    return probe.key_type


def arrow_cast_for(arrow_type: Any, key_type: Optional[str] = None) -> Any:
    """The Arrow type a column of ``arrow_type`` is cast to before it reaches the filter, or
    None when it goes as it is: int8/int16 widen to int32 (as Parquet stores them), and with an
    explicit ``key_type`` the column becomes that key type's Arrow type (string -> binary,
    int32 -> int64, ...)."""
    import pyarrow as pa

    if key_type is not None and key_type in _ARROW_OF_KEY_TYPE:
        target = pa.type_for_alias(_ARROW_OF_KEY_TYPE[key_type])
        if key_type == "bytes" and (pa.types.is_string(arrow_type) or pa.types.is_binary(arrow_type)
                                    or pa.types.is_large_string(arrow_type)
                                    or pa.types.is_large_binary(arrow_type)):
            return None  # text hashes as its UTF-8 bytes: no copy needed
        if pa.types.is_timestamp(target) and pa.types.is_timestamp(arrow_type):
            target = pa.timestamp(target.unit, arrow_type.tz)
        return None if target == arrow_type else target
    widened = _WIDENED.get(str(arrow_type))
    return pa.type_for_alias(widened) if widened else None


def key_type_of_arrow(arrow_type: Any, key_type: Optional[str] = None,
                      what: str = "the column") -> str:
    """The key type a filter of a column of ``arrow_type`` records: ``key_type`` when given
    (checked: the column must cast to it), else the extension's own choice for that type."""
    import pyarrow as pa

    cast = arrow_cast_for(arrow_type, key_type)
    empty = pa.array([], type=arrow_type)
    if cast is not None:
        try:
            empty = empty.cast(cast)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise KeyTypeError(f"{what} ({arrow_type}) cannot be read as key type "
                               f"{key_type}: {e}") from None
    learned = _learned(empty, f"{what} ({arrow_type})")
    if key_type is not None and learned != key_type and not key_type.startswith("fixed:"):
        raise KeyTypeError(f"{what} ({arrow_type}) gives key type {learned}, not {key_type}")
    return key_type if key_type is not None else learned


def key_type_of_numpy(dtype: Any, key_type: Optional[str] = None,
                      what: str = "the keys") -> str:
    """As :func:`key_type_of_arrow` for a numpy dtype (object columns of ``str``/``bytes``:
    ``bytes``, since both hash their bytes)."""
    dtype = np.dtype(dtype)
    if key_type is not None:
        return key_type
    if dtype.kind == "O":
        return "bytes"
    return _learned(np.empty(0, dtype=dtype), f"{what} ({dtype})")


def key_type_of_keys(keys: Any, what: str = "the keys") -> str:
    """As :func:`key_type_of_arrow` for keys as ``Filter.insert`` takes them (a pyarrow array
    or chunked array, or a numpy array), read from their type only: an empty sample (a Dask
    ``_meta``) settles it as well as a full one."""
    arrow_type = getattr(keys, "type", None)
    if arrow_type is not None and hasattr(keys, "null_count"):
        return key_type_of_arrow(arrow_type, what=what)
    return key_type_of_numpy(np.asarray(keys).dtype, what=what)
