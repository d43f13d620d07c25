"""Split-block Bloom filters that give the same answers, bit for bit, on every backend.

``bloomlanes.Filter`` is the filter of the Rust crate ``bloomlanes-core`` (the same bits, the same
``.blf`` files as the ``bloomlanes`` command-line tool, and the Parquet split-block form for layout
``8x32``), driven from Python:

* sized by capacity and false-positive rate (``fpr``) or ``bits_per_key``, with a layout
  (``8x32`` = Parquet, ``8x64``, ``16x32``, ``16x64``), a hash seed and a key type;
* ``insert`` / ``contains`` take numpy arrays (uint64, int64, uint32, int32, float32, float64,
  datetime64[D|ms|us|ns], fixed-width bytes ``S<n>``), pyarrow arrays and chunked arrays
  (integers, floats, date32, timestamps, string, large_string, binary, fixed_size_binary) and
  lists of ``bytes``/``str``; arrays are read in place, without a copy, and the bulk calls run
  without the GIL on the SIMD backend and every core;
* keys of another type than the filter's are refused (``KeyTypeError``), never silently absent;
* ``save`` / ``load`` (memory-mapped) / ``update`` (a locked read-modify-write), shared with
  other processes and the CLI under the same file locks, ``|`` and ``&``, ``stats()``, pickling,
  ``to_parquet_bytes`` / ``from_parquet_bytes``.

``bloomlanes.SpatialFilter`` answers which class a key belongs to (``classify``: 0 absent, never
below the key's own class), ``bloomlanes.Retrieval`` which value (``get``: exact for every key it
was built from), and ``bloomlanes.CountingFilter`` deletes keys and counts them (``delete``,
``count``); all take the same keys, and save, load, pickle and (spatial, counting) ``update``
like ``Filter``.

``bloomlanes.dask`` builds one filter over a Dask collection or a Parquet dataset across a
cluster, and ``bloomlanes.spark`` one over a Spark DataFrame's column (``mapInArrow``), both
byte-identical to the single-machine build.

With a GPU, ``insert`` and ``contains`` take device arrays (anything with
``__cuda_array_interface__``: CuPy, PyTorch, Numba) of uint64, int64, uint32 or int32 keys and
use them in place, without a copy to the host; ``contains`` then answers in a device array (a new
CuPy array, or ``out=``). ``backend="gpu"`` also sends host keys to the GPU; ``backend="cpu"``
refuses device arrays. ``SpatialFilter.insert``/``classify`` and ``Retrieval.get`` take device
arrays and ``backend=`` the same way. ``gpu_device()`` names the GPU, or is None.
"""

from ._native import (
    CountingFilter,
    FileChangedError,
    Filter,
    FormatError,
    gpu_device,
    IncompatibleFiltersError,
    KeyTypeError,
    Retrieval,
    set_threads,
    SpatialFilter,
    simd_path,
    threads,
)

try:
    from importlib.metadata import version as _version

    __version__ = _version("bloomlanes")
except Exception:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"

#: The key type names accepted by ``Filter(key_type=...)``.
KEY_TYPES = (
    "bytes",
    "u64",
    "i64",
    "u32",
    "i32",
    "f32",
    "f64",
    "date",
    "timestamp-ms",
    "timestamp-us",
    "timestamp-ns",
    "fixed:N",
)

__all__ = [
    "CountingFilter",
    "FileChangedError",
    "Filter",
    "FormatError",
    "gpu_device",
    "IncompatibleFiltersError",
    "KeyTypeError",
    "KEY_TYPES",
    "Retrieval",
    "set_threads",
    "SpatialFilter",
    "simd_path",
    "threads",
]
