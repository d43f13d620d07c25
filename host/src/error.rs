//! One error type for the whole host layer. Every message names what was at fault (a file, a
//! line, a byte offset) and what was wrong; [`Error::exit_code`] maps it to the CLI's exit code.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

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

/// Everything that can go wrong in the host layer.
#[derive(Debug)]
pub enum Error {
    /// The request itself is wrong (bad flag combination or value): exit code 2.
    Usage(String),
    /// An I/O operation on a file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done ("open", "read", "write" …).
        op: &'static str,
        /// The system error.
        source: io::Error,
    },
    /// An input file's contents are malformed.
    Input {
        /// The file.
        path: PathBuf,
        /// Where, when known.
        at: Option<Location>,
        /// What was wrong.
        what: String,
    },
    /// A requested backend is not present on this machine, or failed.
    Backend(String),
    /// Any other failure (exit code 1).
    Failed(String),
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

    /// The process exit code for this error: 2 for usage errors, 1 for everything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            _ => 1,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) => write!(f, "{m}"),
            Error::Io { path, op, source } => {
                let why = match source.kind() {
                    io::ErrorKind::NotFound => "no such file or directory".to_string(),
                    io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                    _ => source.to_string(),
                };
                write!(f, "{}: cannot {op}: {why}", path.display())
            }
            Error::Input { path, at, what } => match at {
                Some(at) => write!(f, "{}: {at}: {what}", path.display()),
                None => write!(f, "{}: {what}", path.display()),
            },
            Error::Backend(m) | Error::Failed(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The host layer's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
