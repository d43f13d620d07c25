//! The Python exceptions of the package, and the conversion of every Rust error into one of them
//! with the Rust error's own message.
//!
//! | exception | base | raised for |
//! |---|---|---|
//! | `FormatError` | `ValueError` | a corrupt, truncated or foreign `.blf` file or Parquet bloom filter |
//! | `IncompatibleFiltersError` | `ValueError` | `|`, `&` or a merge of filters with different parameters, class tables or kinds, or of stable filters |
//! | `KeyTypeError` | `TypeError` | keys whose type differs from the filter's key type |
//! | `ValueError` | | bad sizing, bad arguments, malformed key batches, malformed input files (with the file, line and byte offset) |
//! | `TypeError` | | inputs that are not keys (unsupported dtypes, objects) |
//! | `OSError` | | file system errors (with the path) |
//! | `FileChangedError` | `OSError` | a memory-mapped filter file cut short or rewritten in place by another program |
//! | `BlockingIOError` | `OSError` | `wait=False` and another process is writing the file |
//! | `MemoryError` | | a filter larger than the memory that can be allocated |

use std::fmt::Display;

use bloomlanes_core::{
    BatchError, FormatError as CoreFormatError, MergeError, ParquetError, SizingError,
};
use pyo3::exceptions::{PyBlockingIOError, PyMemoryError, PyOSError, PyTypeError, PyValueError};
use pyo3::{create_exception, PyErr};

create_exception!(
    bloomlanes,
    FormatError,
    PyValueError,
    "A corrupt, truncated or foreign filter file or Parquet bloom filter (a ValueError)."
);
create_exception!(
    bloomlanes,
    IncompatibleFiltersError,
    PyValueError,
    "Two filters that cannot be combined: different layout, block count, seed, hash or key type, \
     spatial filters of other classes, or stable filters, which do not merge (a ValueError)."
);
create_exception!(
    bloomlanes,
    KeyTypeError,
    PyTypeError,
    "Keys of another type than the filter's key type: they would hash to other bytes and be \
     reported absent (a TypeError)."
);

create_exception!(
    bloomlanes,
    FileChangedError,
    PyOSError,
    "A memory-mapped filter file that another program cut short or rewrote in place while it \
     was in use: nothing read from it is returned (an OSError)."
);

/// Why an operation failed, outside the GIL; turned into a Python exception by [`to_py`].
#[derive(Debug)]
pub(crate) enum Error {
    /// A bad file or Parquet form (`FormatError`), with an optional path prefix.
    Format(String),
    /// Filters that cannot be combined.
    Merge(MergeError),
    /// Keys of the wrong type.
    KeyType(String),
    /// A bad value (sizing, offsets, arguments).
    Value(String),
    /// An input of the wrong kind.
    Type(String),
    /// An I/O error on a path.
    Io(std::io::Error, String),
    /// A refused allocation.
    Memory(String),
    /// A mapped file changed underneath.
    Changed(String),
    /// Another process holds a lock and the caller would not wait.
    Busy(String),
}

impl Error {
    /// A value error with this message.
    pub(crate) fn value(msg: impl Display) -> Error {
        Error::Value(msg.to_string())
    }
    /// A type error with this message.
    pub(crate) fn type_(msg: impl Display) -> Error {
        Error::Type(msg.to_string())
    }
    /// A format error about `path`.
    pub(crate) fn format_at(path: impl Display, e: CoreFormatError) -> Error {
        Error::Format(format!("{path}: {e}"))
    }
}

/// `From` for errors kept as their message in one variant: `Type => Variant`.
macro_rules! from_message {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error::$variant(e.to_string())
            }
        }
    )*};
}
from_message!(
    CoreFormatError => Format,
    ParquetError => Format,
    SizingError => Value,
    BatchError => Value,
);

impl From<MergeError> for Error {
    fn from(e: MergeError) -> Error {
        Error::Merge(e)
    }
}

impl From<bloomlanes_input::Error> for Error {
    fn from(e: bloomlanes_input::Error) -> Error {
        match e {
            bloomlanes_input::Error::Io { path, source, .. } => {
                Error::Io(source, path.display().to_string())
            }
            bloomlanes_input::Error::KeyType { .. } => Error::KeyType(e.to_string()),
            e => Error::Value(e.to_string()),
        }
    }
}

/// The Python exception for `e`.
pub(crate) fn to_py(e: Error) -> PyErr {
    match e {
        Error::Format(m) => FormatError::new_err(m),
        Error::Merge(m) => IncompatibleFiltersError::new_err(m.to_string()),
        Error::KeyType(m) => KeyTypeError::new_err(m),
        Error::Value(m) => PyValueError::new_err(m),
        Error::Type(m) => PyTypeError::new_err(m),
        Error::Io(io, path) => {
            // pyo3 maps the io::ErrorKind to the matching OSError subclass (FileNotFoundError …).
            PyErr::from(std::io::Error::new(io.kind(), format!("{path}: {io}")))
        }
        Error::Memory(m) => PyMemoryError::new_err(m),
        Error::Changed(m) => FileChangedError::new_err(m),
        Error::Busy(m) => PyBlockingIOError::new_err(m),
    }
}

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        to_py(e)
    }
}
