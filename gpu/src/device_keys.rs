//! Keys already in device memory, and the checks that make them safe to hand to a kernel.
//!
//! Shapes (record width, offset count, buffer lengths) are checked on the host. String offsets
//! live on the device, so their values are checked there: a small kernel finds the first offset
//! that is out of order or past the end of the data, and the launch that would use them is not
//! queued unless there is none; the error is core's [`BatchError::BadOffset`]. (Memory safety
//! does not rest on this check: the string kernels clamp every string to the data buffer.)

use std::sync::Arc;

use bloomlanes_core::BatchError;
use cudarc::driver::{CudaStream, CudaView, PushKernelArg};

use crate::kernel::{Kernel, THREADS};
use crate::launch::KeyArgs;
use crate::module::{grid, Kernels};
use crate::{DeviceBuffer, GpuError};

/// Keys already in device memory.
#[derive(Clone, Copy, Debug)]
pub enum DeviceKeys<'a> {
    /// Integer keys, hashed as their 8 little-endian bytes.
    U64(&'a DeviceBuffer<u64>),
    /// Caller-supplied 64-bit hashes.
    Hashes(&'a DeviceBuffer<u64>),
    /// Fixed-width records laid end to end.
    Records {
        /// The record bytes.
        data: &'a DeviceBuffer<u8>,
        /// Record width in bytes (at least 1).
        width: usize,
    },
    /// Strings `data[offsets[i]..offsets[i + 1]]`.
    Strings {
        /// The string bytes.
        data: &'a DeviceBuffer<u8>,
        /// `n + 1` non-decreasing offsets into `data`, each at most `data.len()`. Checked on the
        /// device before every launch that uses them (a short kernel, waited for): bad offsets
        /// give [`GpuError::Batch`]`(`[`BatchError::BadOffset`]`)` and nothing is queued.
        offsets: &'a DeviceBuffer<u64>,
    },
}

impl<'a> DeviceKeys<'a> {
    /// Number of keys.
    pub fn len(&self) -> usize {
        match self {
            DeviceKeys::U64(k) | DeviceKeys::Hashes(k) => k.len(),
            DeviceKeys::Records { data, width } => data.len() / (*width).max(1),
            DeviceKeys::Strings { offsets, .. } => offsets.len().saturating_sub(1),
        }
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether these are caller-supplied hashes.
    pub(crate) fn are_hashes(&self) -> bool {
        matches!(self, DeviceKeys::Hashes(_))
    }

    /// The checks that need no device: the records' width and length, the offsets' count.
    pub(crate) fn check_shape(&self) -> Result<(), GpuError> {
        validate_shape(self.shape())
    }

    fn shape(&self) -> Shape {
        match self {
            DeviceKeys::U64(_) | DeviceKeys::Hashes(_) => Shape::Words,
            DeviceKeys::Records { data, width } => Shape::Records {
                len: data.len(),
                width: *width,
            },
            DeviceKeys::Strings { offsets, .. } => Shape::Strings {
                offsets: offsets.len(),
            },
        }
    }

    /// The keys as kernel arguments, after every check: the shape here, and for strings the
    /// offsets' values on the device (queued on `check_stream`, which this waits for).
    pub(crate) fn to_args(
        self,
        kernels: &Kernels,
        check_stream: &Arc<CudaStream>,
    ) -> Result<KeyArgs<'a>, GpuError> {
        self.check_shape()?;
        Ok(match self {
            DeviceKeys::U64(k) => KeyArgs::U64(k.view()),
            DeviceKeys::Hashes(k) => KeyArgs::Hashes(k.view()),
            DeviceKeys::Records { data, width } => KeyArgs::Records {
                data: data.view(),
                width,
            },
            DeviceKeys::Strings { data, offsets } => {
                check_offsets(kernels, check_stream, offsets.view(), data.len())?;
                KeyArgs::Strings {
                    data: data.view(),
                    offsets: offsets.view(),
                    base: 0,
                }
            }
        })
    }
}

/// What the host can see of a batch's shape.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// u64 keys or hashes: every length is valid.
    Words,
    /// `len` bytes of records of `width` bytes.
    Records { len: usize, width: usize },
    /// `offsets` offsets.
    Strings { offsets: usize },
}

fn validate_shape(shape: Shape) -> Result<(), GpuError> {
    match shape {
        Shape::Words => Ok(()),
        Shape::Records { width: 0, .. } => Err(GpuError::Batch(BatchError::ZeroWidth)),
        Shape::Records { len, width } if !len.is_multiple_of(width) => {
            Err(GpuError::Batch(BatchError::RaggedRecords { len, width }))
        }
        Shape::Records { .. } => Ok(()),
        Shape::Strings { offsets: 0 } => Err(GpuError::Batch(BatchError::NoOffsets)),
        Shape::Strings { .. } => Ok(()),
    }
}

/// What the check kernel leaves in its result word when every offset is valid.
const ALL_VALID: u64 = u64::MAX;

/// The error for the first bad offset found by the device, or none.
fn offsets_verdict(first_bad: u64, value_at: impl FnOnce(u64) -> u64) -> Result<(), GpuError> {
    if first_bad == ALL_VALID {
        return Ok(());
    }
    Err(GpuError::Batch(BatchError::BadOffset {
        index: first_bad as usize,
        value: value_at(first_bad),
    }))
}

/// Checks on the device that `offsets` is non-decreasing and every offset is at most
/// `data_len`, the rule of [`bloomlanes_core::Strings::new`]. Queued on `stream` after every
/// earlier write of `offsets` (cudarc orders the launch after the buffer's last write event),
/// then waited for.
fn check_offsets(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    offsets: CudaView<'_, u64>,
    data_len: usize,
) -> Result<(), GpuError> {
    let count = offsets.len() as u64;
    let data_len = data_len as u64;
    let mut first_bad = stream
        .clone_htod(&[ALL_VALID])
        .map_err(|e| GpuError::cuda("cuMemcpyHtoD(offset check)", 8, e))?;
    let cfg = grid(count, u64::from(THREADS))?;
    let mut l = stream.launch_builder(kernels.get(Kernel::CheckOffsets)?);
    l.arg(&offsets)
        .arg(&count)
        .arg(&data_len)
        .arg(&mut first_bad);
    // SAFETY: `bl_check_offsets(const u64* offsets, u64 count, u64 data_len, u64* first_bad)`
    // takes these four arguments in this order. Its threads read `offsets[i]` and
    // `offsets[i - 1]` for `i < count` = the view's length only, and update the one u64 of
    // `first_bad` with an atomic minimum.
    unsafe { l.launch(cfg) }
        .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_check_offsets)", count * 8, e))?;
    let found = stream
        .clone_dtoh(&first_bad)
        .map_err(|e| GpuError::cuda("cuMemcpyDtoH(offset check)", 8, e))?;
    stream
        .synchronize()
        .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
    // The offending offset's value, for the error message (0 if it cannot be read back).
    let value_at = |i: u64| {
        let i = i as usize;
        let v = stream.clone_dtoh(&offsets.slice(i..i + 1));
        match (v, stream.synchronize()) {
            (Ok(v), Ok(())) => v.first().copied().unwrap_or(0),
            _ => 0,
        }
    };
    offsets_verdict(found[0], value_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked_on_the_host() {
        assert!(validate_shape(Shape::Words).is_ok());
        assert_eq!(
            validate_shape(Shape::Records { len: 26, width: 0 }).unwrap_err(),
            GpuError::Batch(BatchError::ZeroWidth)
        );
        assert_eq!(
            validate_shape(Shape::Records { len: 27, width: 13 }).unwrap_err(),
            GpuError::Batch(BatchError::RaggedRecords { len: 27, width: 13 })
        );
        assert!(validate_shape(Shape::Records { len: 26, width: 13 }).is_ok());
        assert!(validate_shape(Shape::Records { len: 0, width: 13 }).is_ok());
        assert_eq!(
            validate_shape(Shape::Strings { offsets: 0 }).unwrap_err(),
            GpuError::Batch(BatchError::NoOffsets)
        );
        assert!(validate_shape(Shape::Strings { offsets: 1 }).is_ok());
    }

    #[test]
    fn the_first_bad_offset_becomes_the_core_error() {
        assert!(offsets_verdict(ALL_VALID, |_| unreachable!()).is_ok());
        let offsets = [0u64, 5, 3, 9];
        let e = offsets_verdict(2, |i| offsets[i as usize]).unwrap_err();
        assert_eq!(
            e,
            GpuError::Batch(BatchError::BadOffset { index: 2, value: 3 })
        );
        assert!(e.to_string().contains("string offset 2 (3)"), "{e}");
    }
}
