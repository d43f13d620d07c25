//! One error type for the whole host layer.
//!
//! Every variant names what was at fault (a file, a line, a byte offset, a flag) and, where the
//! fault came from another crate, carries that crate's typed error: [`std::error::Error::source`]
//! returns it, so callers can `downcast_ref` to [`FormatError`], [`SizingError`], [`MergeError`],
//! [`BatchError`], [`std::io::Error`], the input pipeline's [`bloomlanes_input::Error`] (an
//! input that could not be read, [`Error::Read`]), the Parquet crate's
//! [`bloomlanes_parquet::Error`] ([`Error::Parquet`]; its own source is the core's
//! [`ParquetError`](bloomlanes_core::ParquetError) or the `parquet` crate's error), and with the features `gpu` and `hdl` to
//! `GpuError` and `HdlError`.
//!
//! [`Display`](fmt::Display) writes the whole message, the inner error's text included, so a
//! program prints `{error}` alone (walking the source chain as well would repeat it).
//! [`Error::exit_code`] maps an error to the command line's exit code.

use std::collections::TryReserveError;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use bloomlanes_core::{BatchError, FilterKind, FormatError, MergeError, Params, SizingError};

pub use bloomlanes_input::{BoxedSource, Location};

/// Everything that can go wrong in the host layer.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The request itself is wrong (bad flag combination or value): exit code 2.
    Usage(String),
    /// The sizing request cannot be met (a rate outside (0, 1), bits per key too few, too many
    /// blocks): exit code 2.
    Sizing {
        /// Why.
        source: SizingError,
    },
    /// An I/O operation on a file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done ("open", "read", "write" …).
        op: &'static str,
        /// The system error.
        source: io::Error,
    },
    /// Reading keys from an input failed (the input pipeline's error: the file, line and byte
    /// offset at fault; exit code 2 when the request itself was wrong).
    Read {
        /// The input pipeline's error.
        source: bloomlanes_input::Error,
    },
    /// An input file's contents are malformed.
    Input {
        /// The file.
        path: PathBuf,
        /// Where, when known.
        at: Option<Location>,
        /// What was wrong.
        what: String,
        /// The parser's own error, when there is one (CSV, capture).
        source: Option<BoxedSource>,
    },
    /// A file is not a valid bloomlanes filter file.
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: FormatError,
    },
    /// A filter of the requested size cannot be allocated here.
    TooLarge {
        /// The keys it was sized for.
        keys: u64,
        /// Its parameters.
        params: Params,
        /// The allocator's refusal (`None` when the size does not even fit `usize`).
        source: Option<TryReserveError>,
    },
    /// Two filters cannot be merged.
    Merge {
        /// The first filter's file.
        first: PathBuf,
        /// The file that does not match it.
        other: PathBuf,
        /// How they differ.
        source: MergeError,
    },
    /// Reading, probing or writing Parquet bloom filters failed (the Parquet crate's error:
    /// the file, row group, column and field at fault; exit code 2 for a wrong request).
    Parquet {
        /// The Parquet crate's error.
        source: bloomlanes_parquet::Error,
    },
    /// Keys of one type were given to a filter of keys of another byte form: every present key
    /// would be answered "absent", so the query is refused (exit code 2).
    KeyType {
        /// The filter (or Parquet file).
        path: PathBuf,
        /// The filter's recorded key type.
        filter: bloomlanes_core::KeyType,
        /// The query's key type.
        query: bloomlanes_core::KeyType,
    },
    /// A batch of keys is malformed.
    Batch {
        /// How.
        source: BatchError,
    },
    /// An answer buffer handed to a [`Querier`](crate::Querier) has the wrong length.
    OutputLength {
        /// Words needed: one per 64 keys.
        needed: usize,
        /// Words given.
        found: usize,
    },
    /// `--backend gpu` was asked for and no GPU can be used (feature `gpu`).
    #[cfg(feature = "gpu")]
    NoGpu {
        /// Why not.
        source: bloomlanes_gpu::GpuError,
    },
    /// The GPU backend failed (feature `gpu`).
    #[cfg(feature = "gpu")]
    Gpu {
        /// The GPU crate's error.
        source: bloomlanes_gpu::GpuError,
    },
    /// Exporting or simulating the generated Verilog failed (feature `hdl`).
    #[cfg(feature = "hdl")]
    Hdl {
        /// The folder being written.
        dir: PathBuf,
        /// The HDL crate's error.
        source: bloomlanes_hdl::HdlError,
    },
    /// An operation that this kind of filter does not support (e.g. deleting from a window
    /// filter): exit code 2.
    KindUnsupported {
        /// The filter file.
        path: PathBuf,
        /// What was asked (`delete from`, `insert into` …).
        op: &'static str,
        /// The filter's kind, as the core describes it.
        kind: String,
        /// Which kinds do support it, and what to do instead.
        hint: &'static str,
    },
    /// A live capture on a network interface failed (no such interface, no privilege …).
    Capture {
        /// The interface.
        interface: String,
        /// What went wrong.
        what: String,
    },
    /// Another process is writing the file and this one was told not to wait
    /// ([`Wait::Fail`](crate::store::lock::Wait)).
    Locked {
        /// Which file, which lock file, and which process holds it.
        busy: bloomlanes_guard::Busy,
    },
    /// A filter file changed while it was being read (another program truncated or rewrote it
    /// in place): what was read from it cannot be trusted.
    Changed {
        /// The file.
        path: PathBuf,
        /// How it changed.
        what: bloomlanes_guard::Changed,
    },
    /// The request needs a feature this build of `bloomlanes-host` was compiled without.
    Unsupported {
        /// What was asked for (e.g. `--backend gpu`).
        what: &'static str,
        /// The missing Cargo feature.
        feature: &'static str,
    },
}

impl Error {
    /// A usage error (exit code 2).
    pub fn usage(msg: impl Into<String>) -> Error {
        Error::Usage(msg.into())
    }

    /// A malformed input at `at`.
    pub fn input(path: &Path, at: Option<Location>, what: impl Into<String>) -> Error {
        Error::located(bloomlanes_input::Error::input(path, at, what))
    }

    /// A malformed input at `at`, found by a parser with its own error type.
    pub fn input_with(
        path: &Path,
        at: Option<Location>,
        what: impl Into<String>,
        source: impl Into<BoxedSource>,
    ) -> Error {
        Error::located(bloomlanes_input::Error::input_with(path, at, what, source))
    }

    /// An I/O failure on `path`.
    pub fn io(path: &Path, op: &'static str, source: io::Error) -> Error {
        Error::located(bloomlanes_input::Error::io(path, op, source))
    }

    /// This library's variant of a fault the input crate describes with the same fields (a
    /// malformed input, an I/O failure); any other is kept as [`Error::Read`].
    fn located(e: bloomlanes_input::Error) -> Error {
        match e {
            bloomlanes_input::Error::Input {
                path,
                at,
                what,
                source,
            } => Error::Input {
                path,
                at,
                what,
                source,
            },
            bloomlanes_input::Error::Io { path, op, source } => Error::Io { path, op, source },
            e => Error::Read { source: e },
        }
    }

    /// The process exit code for this error: 2 for usage and sizing errors, 1 for everything
    /// else.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Read { source } => source.exit_code(),
            Error::Parquet { source } => source.exit_code(),
            Error::Usage(_)
            | Error::Sizing { .. }
            | Error::KeyType { .. }
            | Error::KindUnsupported { .. } => 2,
            _ => 1,
        }
    }
}

impl From<SizingError> for Error {
    fn from(source: SizingError) -> Error {
        Error::Sizing { source }
    }
}

impl From<bloomlanes_input::Error> for Error {
    fn from(source: bloomlanes_input::Error) -> Error {
        Error::Read { source }
    }
}

impl From<bloomlanes_parquet::Error> for Error {
    fn from(source: bloomlanes_parquet::Error) -> Error {
        Error::Parquet { source }
    }
}

impl From<BatchError> for Error {
    fn from(source: BatchError) -> Error {
        Error::Batch { source }
    }
}

/// Whether a filter of `kind` is one static image (a static filter) or has one behind its
/// cells (`export --static` writes it).
fn has_projection(kind: FilterKind) -> bool {
    matches!(
        kind,
        FilterKind::Static
            | FilterKind::Counting { .. }
            | FilterKind::Stable { .. }
            | FilterKind::Spatial { .. }
    )
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) => write!(f, "{m}"),
            Error::Sizing { source } => write!(f, "{source}"),
            Error::Read { source } => write!(f, "{source}"),
            Error::Io { path, op, source } => {
                bloomlanes_input::error::write_io(f, path, op, source)
            }
            Error::Input { path, at, what, .. } => {
                bloomlanes_input::error::write_input(f, path, *at, what)
            }
            Error::Format { path, source } => write!(
                f,
                "{}: not a valid bloomlanes filter: {source}",
                path.display()
            ),
            Error::TooLarge { keys, params, .. } => write!(
                f,
                "a filter for {keys} keys needs {} bytes ({} blocks of layout {}), \
                 more memory than this machine can allocate; lower --capacity or raise --fpp",
                params.byte_len(),
                params.blocks,
                params.layout
            ),
            Error::Merge {
                first,
                other,
                source,
            } => {
                let hint = match source {
                    MergeError::Classes => {
                        " (build both with the same --classes list; `bloomlanes stats` shows a \
                         filter's classes)"
                    }
                    MergeError::Unmergeable(FilterKind::Stable { .. }) => {
                        " (its projection does: `bloomlanes export --static OUT.blf FILE` writes \
                         it as a static filter)"
                    }
                    MergeError::Unmergeable(_) => "",
                    MergeError::Kind(a, b) if a.name() == b.name() => {
                        " (build both with the same --counter-bits, or --cell-bits and classes)"
                    }
                    MergeError::Kind(a, b) if has_projection(*a) && has_projection(*b) => {
                        " (filters merge only with filters of their own kind; `bloomlanes \
                         export --static OUT.blf FILE` writes a counting, stable or spatial \
                         filter's projection as a static filter, which merges with static ones)"
                    }
                    MergeError::Kind(..) => " (filters merge only with filters of their own kind)",
                    _ => {
                        " (filters merge only when layout, hash and seed match and one block \
                         count is a multiple of the other; build them with the same --layout, \
                         --capacity/--fpp or --bits-per-key and --seed)"
                    }
                };
                write!(
                    f,
                    "cannot merge {} with {}: {source}{hint}",
                    first.display(),
                    other.display()
                )
            }
            Error::Parquet { source } => write!(f, "{source}"),
            Error::KeyType {
                path,
                filter,
                query,
            } => bloomlanes_input::error::write_key_type_mismatch(f, path, *filter, *query),
            Error::Batch { source } => write!(f, "malformed batch of keys: {source}"),
            Error::OutputLength { needed, found } => write!(
                f,
                "the answer buffer holds {found} words; the keys need {needed} (one per 64 keys)"
            ),
            #[cfg(feature = "gpu")]
            Error::NoGpu { source } => write!(
                f,
                "--backend gpu: no usable GPU on this machine ({source}); use --backend auto, \
                 simd or scalar"
            ),
            #[cfg(feature = "gpu")]
            Error::Gpu { source } => write!(f, "GPU: {source}"),
            #[cfg(feature = "hdl")]
            Error::Hdl { dir, source } => {
                write!(f, "export --hdl {}: {source}", dir.display())
            }
            Error::KindUnsupported {
                path,
                op,
                kind,
                hint,
            } => write!(f, "{}: cannot {op} a {kind} filter: {hint}", path.display()),
            Error::Capture { interface, what } => write!(f, "interface {interface}: {what}"),
            Error::Locked { busy } => write!(
                f,
                "{busy}; not waiting for it (--no-wait): try again once it is done"
            ),
            Error::Changed { path, what } => write!(
                f,
                "{}: {what}; nothing read from it is used (bloomlanes itself replaces a filter \
                 by renaming a new file over it; another program rewrote this one in place)",
                path.display()
            ),
            Error::Unsupported { what, feature } => write!(
                f,
                "{what}: not available in this build (bloomlanes-host was compiled without its \
                 `{feature}` feature)"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Usage(_)
            | Error::OutputLength { .. }
            | Error::Unsupported { .. }
            | Error::KindUnsupported { .. }
            | Error::Capture { .. }
            | Error::Locked { .. }
            | Error::KeyType { .. } => None,
            Error::Changed { what, .. } => Some(what),
            Error::Sizing { source } => Some(source),
            Error::Read { source } => Some(source),
            Error::Io { source, .. } => Some(source),
            Error::Input { source, .. } => source
                .as_deref()
                .map(|e| e as &(dyn std::error::Error + 'static)),
            Error::Format { source, .. } => Some(source),
            Error::TooLarge { source, .. } => source
                .as_ref()
                .map(|e| e as &(dyn std::error::Error + 'static)),
            Error::Merge { source, .. } => Some(source),
            Error::Parquet { source } => Some(source),
            Error::Batch { source } => Some(source),
            #[cfg(feature = "gpu")]
            Error::NoGpu { source } | Error::Gpu { source } => Some(source),
            #[cfg(feature = "hdl")]
            Error::Hdl { source, .. } => Some(source),
        }
    }
}

/// The host layer's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use bloomlanes_core::{FormatError, Layout, MergeError};

    use super::*;

    #[test]
    fn errors_cross_threads() {
        fn send_sync<T: Send + Sync + 'static>() {}
        send_sync::<Error>();
    }

    #[test]
    fn source_is_the_typed_inner_error() {
        let e = Error::Merge {
            first: "a.blf".into(),
            other: "b.blf".into(),
            source: MergeError::Seed(1, 2),
        };
        let inner = e.source().and_then(|s| s.downcast_ref::<MergeError>());
        assert_eq!(inner, Some(&MergeError::Seed(1, 2)));
        assert!(e.to_string().contains("a.blf") && e.to_string().contains("seed 1 vs 2"));

        let e = Error::Format {
            path: "f.blf".into(),
            source: FormatError::BadMagic,
        };
        assert!(e
            .source()
            .and_then(|s| s.downcast_ref::<FormatError>())
            .is_some());

        let io = Error::io(Path::new("x"), "read", io::ErrorKind::NotFound.into());
        assert!(io
            .source()
            .and_then(|s| s.downcast_ref::<io::Error>())
            .is_some());
        assert_eq!(io.exit_code(), 1);

        let sizing =
            Error::from(bloomlanes_core::math::blocks_for_rate(Layout::L8x32, 1, 2.0).unwrap_err());
        assert_eq!(sizing.exit_code(), 2);
        assert!(sizing
            .source()
            .and_then(|s| s.downcast_ref::<SizingError>())
            .is_some());
        assert_eq!(Error::usage("bad flag").exit_code(), 2);
        assert!(Error::usage("bad flag").source().is_none());
    }

    #[test]
    fn question_mark_into_box_dyn_error() {
        fn run() -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
            Err(Error::usage("nope"))?
        }
        assert_eq!(run().unwrap_err().to_string(), "nope");
    }
}
