"""Type stubs of the extension module ``bloomlanes._native`` (re-exported by ``bloomlanes``)."""

import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

#: Anything ``insert``/``contains`` accept: a numpy array (uint64, int64, uint32, int32,
#: float32, float64, datetime64[D|ms|us|ns], fixed-width bytes 'S<n>' / 'V<n>', object arrays of
#: bytes/str), an object with ``__arrow_c_array__`` or ``__arrow_c_stream__`` (pyarrow Array or
#: ChunkedArray of integers, floats, date32, timestamp[ms|us|ns], string, large_string, binary,
#: large_binary, fixed_size_binary), a list or tuple of bytes/str/int/float, or one such scalar.
Keys = Union[npt.ArrayLike, Sequence[Union[bytes, str, int, float]], bytes, str, int, float, Any]

class FormatError(ValueError):
    """A corrupt, truncated or foreign filter file or Parquet bloom filter."""

class IncompatibleFiltersError(ValueError):
    """Filters with different layout, block count, seed, hash or key type combined."""

class KeyTypeError(TypeError):
    """Keys of another type than the filter's (they would hash other bytes)."""

class FileChangedError(OSError):
    """A memory-mapped filter file that another program cut short or rewrote in place while it
    was in use: nothing read from it is returned (never a SIGBUS death of the interpreter)."""

class FilterUpdate:
    """The context manager of :meth:`Filter.update`."""

    def __enter__(self) -> "Filter": ...
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool: ...

class Filter:
    """A split-block Bloom filter (layouts 8x32 = Parquet, 8x64, 16x32, 16x64).

    ``Filter(capacity, fpr=0.01)`` sizes a filter for ``capacity`` keys at a false-positive
    rate (or ``bits_per_key=b`` bits per key). ``layout=None`` picks, for a rate, the layout
    that meets it in the fewest bits (8x32 for ``bits_per_key``). ``key_type`` is one of
    ``bytes``, ``u64``, ``i64``, ``u32``, ``i32``, ``f32``, ``f64``, ``date``, ``timestamp-ms``,
    ``timestamp-us``, ``timestamp-ns``, ``fixed:N`` (``uuid`` = ``fixed:16``); ``None`` records
    the type of the first keys inserted. Every key type hashes the bytes of its Parquet plain
    encoding (docs/FORMAT.md section 2), so the filter matches Parquet writers' filters.

    Keys whose type differs from the filter's raise :class:`KeyTypeError`. Float lookups find
    ``0.0`` and ``-0.0`` alike and answer ``True`` for NaN. Arrow nulls are skipped on insert
    and answer ``False``; numpy NaT is refused.

    Thread safety: any number of threads may call ``contains`` at once (the GIL is released);
    ``insert`` and the in-place operators take the filter exclusively.

    Memory: every constructor and load allocates fallibly: a filter larger than the memory that
    can be allocated raises ``MemoryError`` (the bits are reserved and written at once).

    Files shared between processes follow the CLI's rules: ``save`` holds the file's write lock
    (the lock file ``PATH.lock`` beside it) while it writes, ``load`` a shared lock on the file
    while it is mapped, and :meth:`update` holds the write lock for a whole read-modify-write;
    another writer waits (``wait=False``: ``BlockingIOError``). A mapped file that another
    program cuts short or rewrites in place raises :class:`FileChangedError` from the next call
    that reads it.
    """

    def __init__(
        self,
        capacity: int,
        fpr: Optional[float] = None,
        *,
        bits_per_key: Optional[float] = None,
        layout: Optional[str] = None,
        seed: int = 0,
        key_type: Optional[str] = None,
    ) -> None: ...
    @staticmethod
    def with_params(
        layout: str, blocks: int, *, seed: int = 0, key_type: Optional[str] = None
    ) -> "Filter":
        """An empty filter of exactly ``blocks`` blocks of ``layout`` (e.g. to build shards
        that will be merged: they must all have the same parameters)."""
    def empty_like(self) -> "Filter":
        """An empty filter with the same parameters."""
    @property
    def layout(self) -> str: ...
    @property
    def blocks(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def key_type(self) -> Optional[str]:
        """The recorded key type, or ``None`` when not recorded (yet)."""
    @property
    def hash(self) -> str:
        """``"xxh64"`` (or ``"prehashed"`` for files of caller-hashed filters)."""
    @property
    def nbytes(self) -> int:
        """Size of the bit array in bytes."""
    @property
    def key_count(self) -> Optional[int]:
        """Number of keys inserted (recorded in the file header), ``None`` when unknown (after
        ``|`` or ``&``). Settable, e.g. after merging shards of one key stream."""
    @key_count.setter
    def key_count(self, keys: Optional[int]) -> None: ...
    @property
    def path(self) -> Optional[str]:
        """The file a memory-mapped filter reads (``None`` once it was changed, or in memory)."""
    @property
    def params(self) -> Dict[str, Any]:
        """``{"layout", "blocks", "seed", "key_type"}``: what ``with_params`` takes."""
    def insert(self, keys: Keys, *, backend: Optional[str] = None) -> None:
        """Inserts keys (arrays read in place; the GIL is released). ``backend``: ``"auto"``
        (default: device arrays on the GPU, the rest on the CPU), ``"cpu"`` or ``"gpu"`` (host
        keys of 64-bit integers, fixed-width bytes or 64-bit-offset strings are copied to the
        device). Device arrays (``__cuda_array_interface__``: CuPy, PyTorch, Numba) of uint64,
        int64, uint32 or int32 are read in place; the call waits for all queued device work
        first. A GPU insert copies the filter back to the host before it returns."""
    def contains(
        self,
        keys: Keys,
        *,
        bitmap: bool = False,
        backend: Optional[str] = None,
        out: Any = None,
    ) -> Any:
        """Looks keys up: a numpy ``bool`` array (``True`` = may be present), or with
        ``bitmap=True`` the packed bits as ``uint8`` (bit ``j``, least significant first, of
        byte ``i`` answers key ``8i + j``; ``np.unpackbits(b, bitorder="little")``), the
        format of the CLI's ``query --bitmap``. Device keys answer on the device: into ``out``
        (a bool/uint8 device array of at least ``len(keys)``, or uint64 words with
        ``bitmap=True``), which is returned, or a new CuPy array. ``backend`` as for
        ``insert``."""
    def __contains__(self, key: Any) -> bool: ...
    def clear(self) -> None:
        """Removes every key."""
    def stats(self) -> Dict[str, Any]:
        """Statistics with the field names of ``bloomlanes stats --json``: layout, lanes,
        word_bits, blocks, bytes, seed, hash, key_type, recorded_keys, set_bits, fill_ratio,
        estimated_keys, keys, expected_fpr, fpr_from_bits, bits_per_key, parquet_compatible,
        memory_mapped."""
    def save(self, path: Union[str, "os.PathLike[str]"], *, wait: bool = True) -> None:
        """Writes the ``.blf`` file (written to a temporary file, then renamed over ``path``)
        under the file's write lock: waits for another writer (the CLI's ``insert``, another
        ``save``), or with ``wait=False`` raises ``BlockingIOError`` naming it."""
    @staticmethod
    def load(
        path: Union[str, "os.PathLike[str]"],
        *,
        mmap: bool = True,
        verify: bool = True,
        wait: bool = True,
    ) -> "Filter":
        """Opens a ``.blf`` file, memory-mapped read-only by default (copied into memory on the
        first change), under a shared lock held while it is mapped. ``verify=False`` skips the
        payload checksum (the header is always checked). Raises :class:`FormatError` for a bad
        file, ``OSError`` for I/O errors, :class:`FileChangedError` (later, from the call that
        reads it) when another program cuts the mapped file short or rewrites it in place."""
    @staticmethod
    def update(path: Union[str, "os.PathLike[str]"], *, wait: bool = True) -> FilterUpdate:
        """A read-modify-write of the file at ``path`` that no other writer can come between::

            with Filter.update("ids.blf") as f:
                f.insert(new_ids)

        Takes the file's write lock (waiting, or with ``wait=False`` raising
        ``BlockingIOError``), loads the filter into memory, and on a clean exit saves it back
        before releasing the lock; an exception in the block saves nothing."""
    def to_bytes(self) -> bytes:
        """The whole ``.blf`` file."""
    @staticmethod
    def from_bytes(data: Union[bytes, bytearray, memoryview]) -> "Filter":
        """A filter from the bytes of a ``.blf`` file."""
    def to_parquet_bytes(self) -> bytes:
        """The Parquet split-block form (Thrift header + bitset): layout 8x32, seed 0 only."""
    @staticmethod
    def from_parquet_bytes(
        data: Union[bytes, bytearray, memoryview], *, key_type: Optional[str] = None
    ) -> "Filter":
        """A filter from a Parquet bloom filter (header + bitset and nothing after it)."""
    def copy(self) -> "Filter": ...
    def __copy__(self) -> "Filter": ...
    def __deepcopy__(self, memo: Any) -> "Filter": ...
    def __reduce__(self) -> Tuple[Any, Tuple[bytes, bool]]: ...
    @staticmethod
    def _unpickle(data: bytes, learn_key_type: bool) -> "Filter": ...
    def __or__(self, other: "Filter") -> "Filter":
        """The union (OR): the filter of both key sets; the key count becomes unknown."""
    def __and__(self, other: "Filter") -> "Filter":
        """The intersection (AND): contains every key of both sets' intersection."""
    def __ior__(self, other: "Filter") -> "Filter": ...
    def __iand__(self, other: "Filter") -> "Filter": ...
    def __eq__(self, other: object) -> bool: ...

def gpu_device() -> Optional[str]:
    """The name of the GPU that ``backend="gpu"`` and device arrays run on, or None."""
def simd_path() -> str:
    """The SIMD path of the bulk operations on this CPU (``BLOOMLANES_SIMD`` overrides)."""

def set_threads(threads: int) -> None:
    """Runs the bulk operations on ``threads`` threads from now on (0: every core, the
    default; the environment variable ``BLOOMLANES_THREADS`` sets it at import)."""

def threads() -> int:
    """Number of threads the bulk operations use."""
