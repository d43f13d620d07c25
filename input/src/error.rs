//! The input pipeline's error type: what was at fault (a file, a line, a byte offset, a flag)
//! and, where a parser of its own found it (CSV, capture), that parser's error as
//! [`std::error::Error::source`].
//!
//! [`Display`](fmt::Display) writes the whole message, so a program prints `{error}` alone.
//! A caller with an error type of its own converts this one into it (`bloomlanes-host` keeps it
//! as the `source()` of its `Error::Read`); a [`Stage`](crate::Stage) of such a caller returns
//! that caller's error, which the pipeline hands back unchanged.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use bloomlanes_core::{KeyType, Physical};

/// Where in an input a fault was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// A 1-based line number.
    Line(u64),
    /// A 0-based byte offset.
    Byte(u64),
    /// A 1-based line number and the 0-based byte offset of its start.
    LineByte(u64, u64),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line(l) => write!(f, "line {l}"),
            Location::Byte(b) => write!(f, "byte offset {b}"),
            Location::LineByte(l, b) => write!(f, "line {l} (byte offset {b})"),
        }
    }
}

/// A boxed inner error of an input parser (CSV, capture).
pub type BoxedSource = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong while reading keys from inputs.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The request itself is wrong (a format and key type that do not go together, a CSV
    /// column index without a header …): exit code 2.
    Usage(String),
    /// An I/O operation on an input failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done ("open", "read" …).
        op: &'static str,
        /// The system error.
        source: io::Error,
    },
    /// An input's contents are malformed.
    Input {
        /// The file (`<stdin>` for standard input).
        path: PathBuf,
        /// Where, when known.
        at: Option<Location>,
        /// What was wrong.
        what: String,
        /// The parser's own error, when there is one (CSV, capture).
        source: Option<BoxedSource>,
    },
    /// Keys of one byte form were read for a filter of keys of another: every present key
    /// would be answered "absent", so the read is refused (exit code 2).
    KeyType {
        /// The input.
        path: PathBuf,
        /// The filter's recorded key type.
        filter: KeyType,
        /// The key type the input's keys were read as.
        query: KeyType,
    },
}

impl Error {
    /// A usage error (exit code 2).
    pub fn usage(msg: impl Into<String>) -> Error {
        Error::Usage(msg.into())
    }

    /// A malformed input at `at`.
    pub fn input(path: &Path, at: Option<Location>, what: impl Into<String>) -> Error {
        Error::Input {
            path: path.to_path_buf(),
            at,
            what: what.into(),
            source: None,
        }
    }

    /// A malformed input at `at`, found by a parser with its own error type.
    pub fn input_with(
        path: &Path,
        at: Option<Location>,
        what: impl Into<String>,
        source: impl Into<BoxedSource>,
    ) -> Error {
        Error::Input {
            path: path.to_path_buf(),
            at,
            what: what.into(),
            source: Some(source.into()),
        }
    }

    /// An I/O failure on `path`.
    pub fn io(path: &Path, op: &'static str, source: io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            op,
            source,
        }
    }

    /// The process exit code for this error: 2 for usage and key-type errors, 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::KeyType { .. } => 2,
            Error::Io { .. } | Error::Input { .. } => 1,
        }
    }
}

/// Writes the message of an I/O failure: `PATH: cannot OP: WHY` (missing files and refused
/// permissions in plain words).
pub fn write_io(f: &mut fmt::Formatter<'_>, path: &Path, op: &str, e: &io::Error) -> fmt::Result {
    let why = match e.kind() {
        io::ErrorKind::NotFound => "no such file or directory".to_string(),
        io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    };
    write!(f, "{}: cannot {op}: {why}", path.display())
}

/// Writes the message of a malformed input: `PATH: [WHERE: ]WHAT`.
pub fn write_input(
    f: &mut fmt::Formatter<'_>,
    path: &Path,
    at: Option<Location>,
    what: &str,
) -> fmt::Result {
    match at {
        Some(at) => write!(f, "{}: {at}: {what}", path.display()),
        None => write!(f, "{}: {what}", path.display()),
    }
}

/// Writes the message of keys whose byte form differs from the filter's: both types, their
/// byte forms and the fix.
pub fn write_key_type_mismatch(
    f: &mut fmt::Formatter<'_>,
    path: &Path,
    filter: KeyType,
    query: KeyType,
) -> fmt::Result {
    write!(
        f,
        "{}: the filter holds {filter} keys ({}), but the keys given are {query} ({}): \
         every present key would be answered \"absent\"; give --key-type {filter} \
         (text keys are then parsed as {filter})",
        path.display(),
        byte_form(filter),
        byte_form(query)
    )
}

/// How keys of a type are hashed, for messages.
fn byte_form(t: KeyType) -> String {
    match t.physical() {
        Physical::ByteArray => "variable-length bytes".into(),
        Physical::Int32 => "4-byte little-endian integers".into(),
        Physical::Int64 => "8-byte little-endian integers".into(),
        Physical::Float => "4-byte IEEE floats".into(),
        Physical::Double => "8-byte IEEE doubles".into(),
        Physical::FixedLenByteArray(n) => format!("{n}-byte strings"),
        Physical::Unknown => "not recorded".into(),
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) => f.write_str(m),
            Error::Io { path, op, source } => write_io(f, path, op, source),
            Error::Input { path, at, what, .. } => write_input(f, path, *at, what),
            Error::KeyType {
                path,
                filter,
                query,
            } => write_key_type_mismatch(f, path, *filter, *query),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Usage(_) | Error::KeyType { .. } => None,
            Error::Io { source, .. } => Some(source),
            Error::Input { source, .. } => source
                .as_deref()
                .map(|e| e as &(dyn std::error::Error + 'static)),
        }
    }
}

/// The input pipeline's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn errors_cross_threads_and_keep_their_parser_error() {
        fn send_sync<T: Send + Sync + 'static>() {}
        send_sync::<Error>();
        let inner = io::Error::other("bad record");
        let e = Error::input_with(
            Path::new("t.csv"),
            Some(Location::Line(3)),
            "malformed",
            inner,
        );
        assert_eq!(e.to_string(), "t.csv: line 3: malformed");
        assert_eq!(e.source().unwrap().to_string(), "bad record");
        assert_eq!(e.exit_code(), 1);
        let io = Error::io(Path::new("x"), "open", io::ErrorKind::NotFound.into());
        assert_eq!(io.to_string(), "x: cannot open: no such file or directory");
        assert!(io.source().unwrap().downcast_ref::<io::Error>().is_some());
        assert_eq!(Error::usage("no").exit_code(), 2);
        let kt = Error::KeyType {
            path: "q.txt".into(),
            filter: KeyType::I32,
            query: KeyType::U64,
        };
        assert_eq!(kt.exit_code(), 2);
        let m = kt.to_string();
        assert!(
            m.contains("4-byte little-endian") && m.contains("--key-type i32"),
            "{m}"
        );
    }
}
