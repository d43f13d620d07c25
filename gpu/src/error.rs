//! Errors of the GPU backend: each says what failed and how much was asked for.

use bloomlanes_core::{BatchError, Layout, MergeError};
use cudarc::driver::{sys::cudaError_enum, DriverError};

/// Why a GPU operation failed.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum GpuError {
    /// The CUDA driver library (`libcuda`) is not installed: "no CUDA driver found".
    NoDriver(String),
    /// The driver loaded but reported no usable device.
    NoDevice(String),
    /// NVRTC could not be loaded or used.
    NoNvrtc(String),
    /// NVRTC rejected the generated kernel source.
    Compile {
        /// The layout whose kernels failed.
        layout: Layout,
        /// The module that failed (`static`, `window`, `cells`).
        module: &'static str,
        /// The architecture flag.
        target: String,
        /// NVRTC's log.
        log: String,
    },
    /// Device memory ran out.
    OutOfMemory {
        /// What was being allocated.
        what: &'static str,
        /// Bytes asked for.
        requested_bytes: u64,
        /// Bytes free on the device at the time.
        free_bytes: u64,
    },
    /// Any other CUDA driver error.
    Cuda {
        /// The operation, e.g. "cuMemcpyHtoDAsync".
        op: &'static str,
        /// Bytes (or keys) involved, 0 if none.
        bytes: u64,
        /// The driver's error.
        message: String,
    },
    /// An input that must hold one entry per key (e.g. a class per key) holds fewer.
    InputTooShort {
        /// What the input is.
        what: &'static str,
        /// Entries needed.
        needed: usize,
        /// Entries given.
        found: usize,
    },
    /// A spatial filter's classes or class names were refused by core's check (its message:
    /// core does not export `SpatialError`).
    Spatial(String),
    /// An output slice is too short for the keys.
    OutputTooShort {
        /// Elements needed.
        needed: usize,
        /// Elements given.
        found: usize,
    },
    /// The keys cannot be hashed by this filter (e.g. raw keys for a prehashed filter).
    HashMismatch(&'static str),
    /// A malformed batch (for device-resident strings, found by the offset check that runs on
    /// the device before the keys are used).
    Batch(BatchError),
    /// Two filters of different shape or seed.
    Incompatible(MergeError),
    /// A filter bigger than the format allows.
    TooLarge {
        /// Blocks asked for.
        blocks: u64,
    },
    /// The parameters are of another kind of filter than the GPU type asked for (e.g. a static
    /// filter's parameters for [`GpuCountingFilter`](crate::GpuCountingFilter)).
    WrongKind {
        /// The kind the type holds, e.g. "counting".
        expected: &'static str,
        /// The kind of the parameters given.
        found: &'static str,
    },
    /// An operation this filter does not support, and why (e.g. an insert without a time into a
    /// window counted in nanoseconds).
    Unsupported(&'static str),
    /// A buffer or launch whose size cannot be expressed: `len` elements of `elem_bytes` bytes
    /// overflow the address space, or (with `elem_bytes` 0) `len` items need more CTAs than a
    /// grid may have.
    TooManyElements {
        /// What was being sized, e.g. "pinned buffer".
        what: &'static str,
        /// Elements (or items) asked for.
        len: u64,
        /// Bytes per element; 0 for a kernel launch.
        elem_bytes: u64,
    },
    /// Memory another library said was on the device is not one allocation of this process on
    /// the device in use, or is misaligned (see [`BorrowedBuffer`](crate::BorrowedBuffer)).
    NotDeviceMemory(String),
}

/// `Err(`[`GpuError::OutputTooShort`]`)` unless an output of `found` entries holds the `needed`
/// ones.
pub(crate) fn output_holds(needed: usize, found: usize) -> Result<(), GpuError> {
    if found < needed {
        return Err(GpuError::OutputTooShort { needed, found });
    }
    Ok(())
}

impl GpuError {
    /// A launch refused because its arguments break what the kernel relies on (a bug of this
    /// crate, never of the caller's input): `op` and what was wrong.
    pub(crate) fn internal(op: &'static str, message: String) -> GpuError {
        GpuError::Cuda {
            op,
            bytes: 0,
            message,
        }
    }

    pub(crate) fn cuda(op: &'static str, bytes: u64, e: DriverError) -> GpuError {
        if e.0 == cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
            let free = cudarc::driver::result::mem_get_info()
                .map(|(f, _)| f as u64)
                .unwrap_or(0);
            return GpuError::OutOfMemory {
                what: op,
                requested_bytes: bytes,
                free_bytes: free,
            };
        }
        GpuError::Cuda {
            op,
            bytes,
            message: format!("{e:?}"),
        }
    }
}

impl std::fmt::Display for GpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuError::NoDriver(m) => write!(f, "{m}"),
            GpuError::NoDevice(m) => write!(f, "no CUDA device: {m}"),
            GpuError::NoNvrtc(m) => write!(f, "NVRTC unavailable: {m}"),
            GpuError::Compile {
                layout,
                module,
                target,
                log,
            } => write!(
                f,
                "NVRTC failed on the {layout} {module} kernels ({target}): {log}"
            ),
            GpuError::OutOfMemory {
                what,
                requested_bytes,
                free_bytes,
            } => write!(
                f,
                "out of GPU memory: {what} needs {requested_bytes} bytes, {free_bytes} bytes free"
            ),
            GpuError::Cuda { op, bytes, message } => {
                write!(f, "CUDA error in {op} ({bytes} bytes): {message}")
            }
            GpuError::InputTooShort {
                what,
                needed,
                found,
            } => write!(f, "{what}: {found} given, one per key ({needed}) needed"),
            GpuError::Spatial(e) => write!(f, "{e}"),
            GpuError::OutputTooShort { needed, found } => {
                write!(f, "output holds {found} entries, {needed} needed")
            }
            GpuError::HashMismatch(m) => write!(f, "{m}"),
            GpuError::Batch(e) => write!(f, "malformed batch: {e}"),
            GpuError::Incompatible(e) => write!(f, "{e}"),
            GpuError::WrongKind { expected, found } => {
                write!(
                    f,
                    "expected the parameters of a {expected} filter, found {found}"
                )
            }
            GpuError::Unsupported(m) => write!(f, "unsupported: {m}"),
            GpuError::NotDeviceMemory(m) => write!(f, "not usable device memory: {m}"),
            GpuError::TooLarge { blocks } => {
                write!(f, "{blocks} blocks is more than a filter may have")
            }
            GpuError::TooManyElements {
                what,
                len,
                elem_bytes: 0,
            } => write!(
                f,
                "{what}: {len} items need more thread blocks than a kernel launch may have"
            ),
            GpuError::TooManyElements {
                what,
                len,
                elem_bytes,
            } => write!(
                f,
                "{what}: {len} elements of {elem_bytes} bytes overflow the address space"
            ),
        }
    }
}

impl std::error::Error for GpuError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GpuError::Batch(e) => Some(e),
            GpuError::Incompatible(e) => Some(e),
            _ => None,
        }
    }
}

impl From<MergeError> for GpuError {
    fn from(e: MergeError) -> Self {
        GpuError::Incompatible(e)
    }
}

impl From<BatchError> for GpuError {
    fn from(e: BatchError) -> Self {
        GpuError::Batch(e)
    }
}
