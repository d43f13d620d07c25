"""Type stubs of the extension module ``bloomlanes._native`` (re-exported by ``bloomlanes``)."""

import os
from typing import Any, Dict, Generic, Iterable, List, Optional, Sequence, Tuple, TypeVar, Union

import numpy as np
import numpy.typing as npt
from typing_extensions import Self

#: Anything ``insert``/``contains`` accept: a numpy array (uint64, int64, uint32, int32,
#: float32, float64, datetime64[D|ms|us|ns], fixed-width bytes 'S<n>' / 'V<n>', object arrays of
#: bytes/str), an object with ``__arrow_c_array__`` or ``__arrow_c_stream__`` (pyarrow Array or
#: ChunkedArray of integers, floats, date32, timestamp[ms|us|ns], string, large_string, binary,
#: large_binary, fixed_size_binary; a dictionary-encoded one as its values), a pandas Series
#: (``category`` too: its values, not its codes), a list, tuple or other iterable of
#: bytes/str/int/float, or one such scalar.
Keys = Union[
    npt.ArrayLike, Iterable[Union[bytes, str, int, float]], bytes, str, int, float, Any
]

class FormatError(ValueError):
    """A corrupt, truncated or foreign filter file or Parquet bloom filter."""

class IncompatibleFiltersError(ValueError):
    """Filters with different layout, block count, seed, hash or key type combined, spatial
    filters of other classes (names and order), or stable filters (which do not merge)."""

class KeyTypeError(TypeError):
    """Keys of another type than the filter's (they would hash other bytes)."""

class FileChangedError(OSError):
    """A memory-mapped filter file that another program cut short or rewrote in place while it
    was in use: nothing read from it is returned (never a SIGBUS death of the interpreter)."""

_K = TypeVar("_K")

class FilterUpdate(Generic[_K]):
    """The context manager of :meth:`Filter.update`, ``SpatialFilter.update`` and
    ``CountingFilter.update``."""

    def __enter__(self) -> _K: ...
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool: ...

class Filter:
    """A split-block Bloom filter (layouts 8x32 = Parquet, 8x64, 16x32, 16x64).

    ``Filter(capacity, fpr=0.01)`` sizes a filter for ``capacity`` keys at a false-positive
    rate (or ``bits_per_key=b`` bits per key). ``layout=None`` picks, for a rate, the layout
    that meets it in the fewest bits (8x32 for ``bits_per_key``). ``key_type`` is one of
    ``bytes``, ``u64``, ``i64``, ``u32``, ``i32``, ``f32``, ``f64``, ``date``, ``timestamp-ms``,
    ``timestamp-us``, ``timestamp-ns``, ``fixed:N`` (``uuid`` = ``fixed:16``), ``ip`` or
    ``flow``; ``None`` records the type of the first keys inserted. ``ip`` and ``flow`` keys
    are given as text (``"10.0.0.1"``, ``"10.0.0.1:1234 -> 10.0.0.2:53 proto 17"`` or
    ``"10.0.0.1:1234>10.0.0.2:53/udp"``), parsed as ``bloomlanes query`` parses them. Every key type hashes the bytes of its Parquet plain
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
    def insert(
        self, keys: Keys, *, backend: Optional[str] = None, threads: Optional[int] = None
    ) -> None:
        """Inserts keys (arrays read in place; the GIL is released). Lists, tuples and other
        iterables (sets, generators …) of ``str``/``bytes``/``bytearray``, ``int`` or ``float``
        are read in one pass through the C API with the GIL held, with no Python-level call per
        key (``str`` keys are hashed as UTF-8 as they are read; a non-ASCII ``str`` keeps its
        UTF-8 form cached, as ``PyUnicode_AsUTF8`` does), then inserted on every core with the
        GIL released; all keys must be of the first key's kind (a bad one raises ``TypeError``
        naming its index; an int out of the key type's range ``ValueError``).
        ``threads``: run this call on that many threads (0: every core; ``None``: the package's
        setting, ``set_threads``), e.g. ``threads=1`` in a Spark or Dask task that owns one
        core; more than 1024 or negative raises ``ValueError``. ``backend``: ``"auto"``
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
        threads: Optional[int] = None,
    ) -> Any:
        """Looks keys up (keys and ``threads`` as for ``insert``): a numpy ``bool`` array
        (``True`` = may be present), or with
        ``bitmap=True`` the packed bits as ``uint8`` (bit ``j``, least significant first, of
        byte ``i`` answers key ``8i + j``; ``np.unpackbits(b, bitorder="little")``), the
        format of the CLI's ``query --bitmap``. Device keys answer on the device: into ``out``
        (a bool/uint8 device array of at least ``len(keys)``, or uint64 words with
        ``bitmap=True``), which is returned, or a new CuPy array. ``backend`` as for
        ``insert``."""
    def insert_file(
        self,
        path: Union[str, "os.PathLike[str]"],
        *,
        format: str = "auto",
        key_type: Optional[str] = None,
        column: Union[str, int, None] = None,
        header: bool = True,
        delimiter: Optional[str] = None,
    ) -> int:
        """Inserts the keys of a file, read exactly as ``bloomlanes build`` and ``insert`` read
        it, and returns how many. ``format``: ``"auto"`` (from the contents and the name),
        ``"lines"`` (one key per line), ``"decimal"`` (integers, hashed as u64), ``"flows"``
        (text 5-tuples), ``"csv"`` (one column: ``column`` a header name or 0-based index,
        ``header``, ``delimiter``), ``"u64"`` (binary little-endian) or ``"pcap"`` (the flow key
        of every IP packet of a pcap or pcapng capture). gzip, zstd and xz files are
        decompressed; ``"-"`` reads standard input. Text is parsed as ``key_type`` if given,
        else as the filter's key type, else as the format's own (bytes; u64 for decimal and
        binary; flow for captures); a filter made without a key type records the file's. The
        file is parsed and hashed on every thread of the package (``set_threads``) with the GIL
        released and bounded memory. A malformed file raises ``ValueError`` naming the file,
        line and byte offset, and leaves the filter unchanged (the keys go into an empty copy of
        the filter, ORed in at the end); keys of another type than the filter's raise
        ``KeyTypeError``; a missing file ``FileNotFoundError``."""
    def contains_file(
        self,
        path: Union[str, "os.PathLike[str]"],
        *,
        format: str = "auto",
        key_type: Optional[str] = None,
        column: Union[str, int, None] = None,
        header: bool = True,
        delimiter: Optional[str] = None,
        bitmap: bool = False,
    ) -> Any:
        """Looks up the keys of a file, read as ``insert_file`` reads it (text as the filter's
        key type unless ``key_type`` says otherwise, as ``bloomlanes query`` does): a numpy
        ``bool`` array, one answer per key in file order (per packet for a capture), or with
        ``bitmap=True`` the packed bits as ``uint8`` (the format of ``query --bitmap``). Float
        keys follow the ±0 / NaN rule. Parsed and probed on every thread with the GIL released."""
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
    def update(
        path: Union[str, "os.PathLike[str]"], *, wait: bool = True
    ) -> "FilterUpdate[Filter]":
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
        """The union (OR): the filter of both key sets; the key count is the sum of both (unknown
        if either is), so shards of one build merge into the bytes of a one-shot build."""
    def __and__(self, other: "Filter") -> "Filter":
        """The intersection (AND): contains every key of both sets' intersection."""
    def __ior__(self, other: "Filter") -> "Filter": ...
    def __iand__(self, other: "Filter") -> "Filter": ...
    def __eq__(self, other: object) -> bool: ...

class _CellFilter:
    """Stub only (no class of this name at runtime): the methods ``SpatialFilter`` and
    ``CountingFilter`` share, which the extension writes once for both. Each is the image of a
    static filter with a cell (a class or a counter) behind each bit; the image, the
    *projection* (a cell above 0 sets its bit), answers ``contains`` as a static ``Filter``."""

    @property
    def params(self) -> Dict[str, Any]:
        """Layout, blocks, seed and key type (``Filter.with_params(**f.params)`` makes the
        static filter of the same shape)."""
    @property
    def key_type(self) -> Optional[str]: ...
    @property
    def nbytes(self) -> int:
        """Bytes of the bits and the cells."""
    def contains(self, keys: Keys) -> "np.ndarray":
        """Whether each key may be present (numpy bool): the projection's answers, those of
        ``classify(keys) != 0`` for a ``SpatialFilter``, ``count(keys) != 0`` for a
        ``CountingFilter``."""
    def __contains__(self, key: Any) -> bool: ...
    def to_filter(self) -> Filter:
        """The projection as a static ``Filter``: the filter of the keys present."""
    def save(self, path: Union[str, "os.PathLike[str]"], *, wait: bool = True) -> None:
        """Writes the file (the CLI's format of the kind: spatial, counting or stable) under its
        write lock, as ``Filter.save``."""
    @classmethod
    def update(
        cls, path: Union[str, "os.PathLike[str]"], *, wait: bool = True
    ) -> "FilterUpdate[Self]":
        """A read-modify-write of the file, as ``Filter.update``: ``with
        SpatialFilter.update("rules.blf") as rules: rules.insert(ips, "deny")`` holds the
        file's write lock from the load to the save, so no other writer (the CLI's ``insert``
        or ``delete``, another ``update`` or ``save``) is lost; an exception in the block saves
        nothing. ``wait=False`` raises ``BlockingIOError`` instead of waiting."""
    def to_bytes(self) -> bytes: ...
    def copy(self) -> Self: ...
    def __copy__(self) -> Self: ...
    def __deepcopy__(self, memo: Any) -> Self: ...
    def __reduce__(self) -> Tuple[Any, Tuple[bytes, bool]]: ...
    def __or__(self, other: Self) -> Self:
        """The union: the filter of both key sets, byte for byte the filter one would get by
        inserting every key of both (``SpatialFilter``: each key in its highest class, so both
        need the same classes in the same order; ``CountingFilter``: counts added, stuck at the
        counters' maximum; a stable filter does not merge). The larger is folded to the
        smaller's block count first, as ``Filter.__or__`` does; incompatible filters raise
        ``IncompatibleFiltersError``. Shards of one build merge this way."""
    def __eq__(self, other: object) -> bool: ...

class SpatialFilter(_CellFilter):
    """A spatial Bloom filter: which of several classes a key belongs to, in one lookup.

    ``SpatialFilter(["allow", "mirror", "deny"], capacity, fpr=0.01)`` sizes the filter for
    ``capacity`` keys in all classes (or ``bits_per_key=b``; or ``blocks=n`` with a ``layout``)
    as ``Filter`` does; ``layout``, ``seed`` and ``key_type`` as for ``Filter``. Classes are
    numbered from 1 in the order given, which is their priority: where keys of two classes share
    a cell the higher class wins, so a key may be reported in a higher class than its own
    ("emersion"), never in a lower one, and an absent key is reported in some class at the
    rates of ``stats()["classes"]``. ``cell_bits`` (4, 8 or 16; default the narrowest that holds
    the classes: up to 15, 255, 65535) sets the cell width. The projection (a cell above 0 sets
    its bit) is byte-identical to the static ``Filter`` of every key inserted (``to_filter``).

    Keys as for ``Filter`` (numpy, pyarrow, lists), except floats (``KeyTypeError``: ``0.0`` and
    ``-0.0`` hash differently) and nulls on insert (``ValueError``; ``classify`` answers 0).
    Runs on the SIMD backend and every core without the GIL, or on the GPU as ``Filter`` does:
    ``insert`` and ``classify`` take device arrays (``__cuda_array_interface__`` or DLPack:
    CuPy, PyTorch; uint64, int64, uint32 or int32 keys) in place, and ``backend="gpu"`` sends
    host keys there; the bits are the CPU backend's. Lives in memory: ``load`` reads and checks
    the whole file (no memory map).
    """

    def __init__(
        self,
        classes: Sequence[str],
        capacity: Optional[int] = None,
        fpr: Optional[float] = None,
        *,
        bits_per_key: Optional[float] = None,
        blocks: Optional[int] = None,
        cell_bits: Optional[int] = None,
        layout: Optional[str] = None,
        seed: int = 0,
        key_type: Optional[str] = None,
    ) -> None: ...
    @property
    def class_names(self) -> List[str]:
        """The class names; class ``i`` is ``class_names[i - 1]``."""
    @property
    def cell_bits(self) -> int: ...
    @property
    def key_count(self) -> Optional[int]:
        """Keys inserted in all classes."""
    @property
    def keys_per_class(self) -> List[int]:
        """Keys inserted per class, class 1 first."""
    def insert(
        self,
        keys: Keys,
        classes: Union[str, int, npt.ArrayLike],
        *,
        backend: Optional[str] = None,
    ) -> None:
        """Inserts keys: ``classes`` is one class name or number for all of them, or one class
        per key: numbers (1-based; a numpy array or list of integers; with device keys also a
        uint32 device array) or names (a list of str, a numpy str or object array, a pyarrow
        string array, a pandas column: a rule table's class column as read). An unknown class,
        a number outside 1..n, a null or a class list of another length is a ``ValueError``
        naming its index, and inserts nothing. ``backend``: ``"auto"``
        (device keys on the GPU, others on the CPU), ``"cpu"`` (device keys refused) or
        ``"gpu"`` (host keys too; the filter is copied back to the host before it returns)."""
    def classify(
        self,
        keys: Keys,
        *,
        backend: Optional[str] = None,
        out: Optional[Any] = None,
        names: bool = False,
    ) -> Any:
        """Each key's class number (numpy uint16; 0: absent). Never below the key's class.
        Device keys answer in a uint16 device array: ``out`` (at least one element per key) or
        a new CuPy array. ``backend`` as for ``insert``. ``names=True``: each key's class name
        instead, ``None`` for an absent key (a numpy object array, host keys; e.g. a DataFrame
        column: ``df["action"] = rules.classify(df.ip, names=True)``)."""
    def stats(self) -> Dict[str, Any]:
        """``Filter.stats()``'s fields for the projection, ``cell_bits``, and ``classes``: a
        list of dicts (``class``, ``name``, ``keys``, ``cells`` owned, ``expected_cells``,
        ``expected_fpr``: the chance that an absent key is reported in this class,
        ``expected_emersion``: that a key of this class is reported in a higher one)."""
    @staticmethod
    def load(path: Union[str, "os.PathLike[str]"], *, wait: bool = True) -> "SpatialFilter":
        """Reads a spatial filter file under a shared lock; a corrupt file is a
        ``FormatError`` naming it."""
    @staticmethod
    def from_bytes(data: Union[bytes, bytearray, memoryview]) -> "SpatialFilter": ...
    @staticmethod
    def _unpickle(data: bytes, learn_key_type: bool) -> "SpatialFilter": ...

class Retrieval:
    """A retrieval table (Bloomier filter; 4-wise binary fuse): a static map from each key of a
    build set to a value of 1 to 32 bits, exact for every key of the set, in about
    ``1.08 × (value_bits + check_bits)`` bits per key. A key outside the set is answered "not
    found" except with probability ``2^-check_bits``, when it gets an arbitrary value.

    Keys as for ``Filter`` (no floats, no nulls at build; ``get`` answers nulls not found).
    Immutable once built; runs on the SIMD backend and every core, or on the GPU (device keys,
    ``backend="gpu"``: see ``get``), where the table is copied once.
    """

    @staticmethod
    def build(
        keys: Keys,
        values: npt.ArrayLike,
        *,
        value_bits: Optional[int] = None,
        check_bits: int = 8,
        arity: Optional[int] = None,
        seed: int = 0,
        key_type: Optional[str] = None,
    ) -> "Retrieval":
        """Builds the table mapping ``keys[i]`` to ``values[i]`` (non-negative integers below
        2^32). ``value_bits`` defaults to the width of the largest value; a value wider than
        it, or a key given twice with two values, is a ``ValueError`` naming the key (the
        same key twice with one value is stored once). ``arity`` 3 trades space for one read
        less per lookup (default 4)."""
    def get(self, keys: Keys, *, backend: Optional[str] = None) -> Tuple[Any, Any]:
        """``(values, found)``: each key's value (numpy uint32) and whether it was found (numpy
        bool); a key not found has value 0. Mask with ``values[found]`` or
        ``numpy.ma.masked_array(values, ~found)``. Device keys (uint64, int64, uint32 or int32
        device arrays) are looked up on the GPU and answered in new CuPy arrays (uint32 and
        bool); ``backend="gpu"`` looks host keys up there, ``"cpu"`` refuses device keys."""
    def __contains__(self, key: Any) -> bool: ...
    def __len__(self) -> int:
        """Keys stored."""
    @property
    def value_bits(self) -> int: ...
    @property
    def check_bits(self) -> int: ...
    @property
    def arity(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def key_type(self) -> Optional[str]: ...
    @property
    def key_count(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    def stats(self) -> Dict[str, Any]:
        """``Filter.stats()``'s fields (``expected_fpr`` is ``2^-check_bits``) with
        ``value_bits``, ``check_bits``, ``arity``, ``construction_seed``."""
    def save(self, path: Union[str, "os.PathLike[str]"], *, wait: bool = True) -> None: ...
    @staticmethod
    def load(path: Union[str, "os.PathLike[str]"], *, wait: bool = True) -> "Retrieval": ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: Union[bytes, bytearray, memoryview]) -> "Retrieval": ...
    def __reduce__(self) -> Tuple[Any, Tuple[bytes]]: ...
    def __eq__(self, other: object) -> bool: ...

class CountingFilter(_CellFilter):
    """A counting filter: a filter whose keys can be deleted and counted (one 4- or 8-bit counter
    behind each bit of a static filter), or with ``kind="stable"`` a stable Bloom filter (a
    stream filter that forgets old keys at a steady false-positive rate; no deletes).

    ``CountingFilter(capacity, fpr=0.01)`` sizes it as ``Filter`` does (or ``bits_per_key=b``;
    or ``blocks=n`` with a ``layout``); ``layout``, ``seed`` and ``key_type`` as for ``Filter``.
    ``counter_bits`` is 4 (counters up to 15) or 8 (up to 255); a stable filter's
    ``decrements`` (cells decremented per insert) default to the fewest that keep its stable
    rate under ``fpr``, as ``bloomlanes build --kind stable`` chooses them. A counter at its
    maximum is saturated: it is never incremented or decremented again, so a key whose counter
    saturated is never lost by deletes (and ``count`` stops growing there).

    The projection (a counter above 0 sets its bit) is byte-identical to the static ``Filter``
    of the keys present (``to_filter``). Files are the CLI's counting and stable files, byte for
    byte (``bloomlanes build --kind counting``, ``delete``, ``query --counts`` read and write
    them). Keys as for ``Filter`` (numpy, pyarrow, lists), except floats (``KeyTypeError``) and
    nulls on insert and delete (``ValueError``; ``count`` answers 0). Runs on the SIMD backend
    and every core without the GIL; lives in memory (``load`` reads and checks the whole file).
    """

    def __init__(
        self,
        capacity: Optional[int] = None,
        fpr: Optional[float] = None,
        *,
        bits_per_key: Optional[float] = None,
        blocks: Optional[int] = None,
        kind: str = "counting",
        counter_bits: int = 4,
        decrements: Optional[int] = None,
        layout: Optional[str] = None,
        seed: int = 0,
        key_type: Optional[str] = None,
    ) -> None: ...
    @property
    def kind(self) -> str:
        """``"counting"`` or ``"stable"``."""
    @property
    def counter_bits(self) -> int: ...
    @property
    def decrements(self) -> Optional[int]:
        """Cells decremented per insert (stable filters; None for counting ones)."""
    @property
    def key_count(self) -> Optional[int]:
        """Keys inserted less keys deleted."""
    @property
    def saturated(self) -> int:
        """Counters stuck at their maximum."""
    def __len__(self) -> int:
        """``key_count`` (0 if unknown)."""
    def insert(self, keys: Keys) -> None:
        """Inserts keys; a key inserted twice counts twice."""
    def delete(self, keys: Keys, *, strict: bool = False) -> int:
        """Deletes keys, in order, as ``bloomlanes delete`` does (counting filters; a stable
        filter's delete is a ``ValueError``); returns how many were deleted. A key with a
        counter at zero is not in the filter: it is refused and changes nothing, and a
        ``UserWarning`` counts and names the refused keys; with ``strict=True`` nothing at all
        is deleted and a ``ValueError`` names them (the CLI's ``--strict``). A key never
        inserted whose counters are all positive (a false positive, at about the filter's
        rate) cannot be told from a present one: it is deleted, and present keys sharing its
        counters may then be answered absent, so delete only keys that were inserted."""
    def count(self, keys: Keys) -> "np.ndarray":
        """Each key's count (numpy uint8): the smallest of its counters, 0 for an absent key;
        never below the times it was inserted less deleted (while its counters are not
        saturated), above it where other keys share all its counters. ``query --counts``."""
    def stats(self) -> Dict[str, Any]:
        """``Filter.stats()``'s fields for the projection, with ``kind``, ``counter_bits``,
        ``saturated`` and, for a stable filter, ``decrements`` and ``stable_fpr`` (the rate it
        settles at)."""
    @staticmethod
    def load(path: Union[str, "os.PathLike[str]"], *, wait: bool = True) -> "CountingFilter":
        """Reads a counting or stable filter file under a shared lock; a corrupt file, or one
        of another kind, is a ``FormatError`` naming it."""
    @staticmethod
    def from_bytes(data: Union[bytes, bytearray, memoryview]) -> "CountingFilter": ...
    @staticmethod
    def _unpickle(data: bytes, learn_key_type: bool) -> "CountingFilter": ...

def gpu_device() -> Optional[str]:
    """The name of the GPU that ``backend="gpu"`` and device arrays run on, or None."""
def simd_path() -> str:
    """The SIMD path of the bulk operations on this CPU (``BLOOMLANES_SIMD`` overrides)."""

def set_threads(threads: int) -> None:
    """Runs the bulk operations on ``threads`` threads from now on (0: every core, the
    default; the environment variable ``BLOOMLANES_THREADS`` sets it at import)."""

def threads() -> int:
    """Number of threads the bulk operations use."""
