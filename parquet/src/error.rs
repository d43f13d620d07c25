//! The Parquet crate's error type: what was at fault (a file, a byte offset, a row group and
//! column, a flag) and, where another reader found it (the core's Parquet form, this crate's
//! footer reader, the `parquet` crate), that reader's error as [`std::error::Error::source`].
//!
//! [`Display`](fmt::Display) writes the whole message, so a program prints `{error}` alone;
//! `bloomlanes-host` keeps this error as the `source()` of its `Error::Parquet`.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use bloomlanes_core::{Params, ParquetError, SizingError};

/// A boxed inner error of a reader (the footer reader's [`FooterError`](crate::footer::FooterError)).
pub type BoxedSource = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong reading, probing or writing Parquet bloom filters.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The request itself is wrong (no such column, a row group out of range …): exit code 2.
    Usage(String),
    /// A filter cannot be sized as asked (a rate outside (0, 1) …): exit code 2.
    Sizing {
        /// Why.
        source: SizingError,
    },
    /// A file's contents are malformed or not what was asked for, or an I/O operation on it
    /// failed (`what` says `cannot open: …`, the source is the [`io::Error`]).
    Input {
        /// The file.
        path: PathBuf,
        /// The byte offset at fault, when known.
        at: Option<u64>,
        /// What was wrong.
        what: String,
        /// The reader's own error, when there is one.
        source: Option<BoxedSource>,
    },
    /// A Parquet bloom filter could not be read.
    Import {
        /// The file.
        path: PathBuf,
        /// The column whose filter it is, with its row group and offset (`None`: a bare Parquet
        /// bloom filter file).
        column: Option<String>,
        /// What is wrong with it.
        source: ParquetError,
    },
    /// A filter has no Parquet form.
    Export {
        /// The filter's parameters.
        params: Params,
        /// Why not.
        source: ParquetError,
    },
    /// The `parquet` crate could not read a `.parquet` file (feature `decode`).
    #[cfg(feature = "decode")]
    Decode {
        /// The file.
        path: PathBuf,
        /// The `parquet` crate's error.
        source: parquet::errors::ParquetError,
    },
}

impl Error {
    /// A usage error (exit code 2).
    pub fn usage(msg: impl Into<String>) -> Error {
        Error::Usage(msg.into())
    }

    /// A malformed file, at byte offset `at` when known.
    pub fn input(path: &Path, at: Option<u64>, what: impl Into<String>) -> Error {
        Error::located(path, at, what.into(), None)
    }

    /// A malformed file, found by a reader with its own error type.
    pub fn input_with(
        path: &Path,
        at: Option<u64>,
        what: impl Into<String>,
        source: impl Into<BoxedSource>,
    ) -> Error {
        Error::located(path, at, what.into(), Some(source.into()))
    }

    fn located(path: &Path, at: Option<u64>, what: String, source: Option<BoxedSource>) -> Error {
        let path = path.to_path_buf();
        Error::Input {
            path,
            at,
            what,
            source,
        }
    }

    /// An I/O failure on `path` while doing `op` ("open", "read", "list" …): a message in
    /// plain words (missing files, refused permissions), the [`io::Error`] as its source.
    pub fn io(path: &Path, op: &'static str, source: io::Error) -> Error {
        let why = match source.kind() {
            io::ErrorKind::NotFound => "no such file or directory".to_string(),
            io::ErrorKind::PermissionDenied => "permission denied".to_string(),
            _ => source.to_string(),
        };
        Error::located(
            path,
            None,
            format!("cannot {op}: {why}"),
            Some(source.into()),
        )
    }

    /// The process exit code for this error: 2 for usage and sizing errors, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Sizing { .. } => 2,
            _ => 1,
        }
    }
}

impl From<SizingError> for Error {
    fn from(source: SizingError) -> Error {
        Error::Sizing { source }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) => f.write_str(m),
            Error::Sizing { source } => write!(f, "{source}"),
            Error::Input { path, at, what, .. } => match at {
                Some(at) => write!(f, "{}: byte offset {at}: {what}", path.display()),
                None => write!(f, "{}: {what}", path.display()),
            },
            Error::Import {
                path,
                column: None,
                source,
            } => write!(
                f,
                "{}: neither a Parquet file nor a Parquet bloom filter: {source}",
                path.display()
            ),
            Error::Import {
                path,
                column: Some(column),
                source,
            } => write!(
                f,
                "{}: the bloom filter of column {column:?} is not a split-block filter this tool \
                 reads: {source}",
                path.display()
            ),
            Error::Export { params, source } => write!(
                f,
                "cannot export to Parquet: {source} (this filter is {} with seed {}; build with \
                 --layout 8x32 --seed 0)",
                params.layout, params.seed
            ),
            #[cfg(feature = "decode")]
            Error::Decode { path, source } => {
                write!(f, "{}: unreadable Parquet file: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Usage(_) => None,
            Error::Sizing { source } => Some(source),
            Error::Input { source, .. } => source
                .as_deref()
                .map(|e| e as &(dyn std::error::Error + 'static)),
            Error::Import { source, .. } | Error::Export { source, .. } => Some(source),
            #[cfg(feature = "decode")]
            Error::Decode { source, .. } => Some(source),
        }
    }
}

/// The Parquet crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
