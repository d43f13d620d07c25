//! Keys as the hash-taking kernels see them: u64 keys (hashed inside the kernel) or 64-bit hashes.
//!
//! The kinds' kernels (counting, window), the partition passes and the probe kernels take
//! `(const u64* keys, u64 n, u64 seed, int mode)`: mode [`MODE_U64`] hashes each key with XXH64,
//! mode [`MODE_HASHES`] uses it as the hash. Records and strings are hashed once into a scratch
//! buffer by `bl_hash_records` / `bl_hash_strings` and then passed as hashes, so every path takes
//! every key form without a kernel per (operation × form).

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, PushKernelArg};

use crate::buffer::alloc_zeros;
use crate::error::output_holds;
use crate::kernel::{Kernel, THREADS};
use crate::launch::KeyArgs;
use crate::module::{grid, Kernels};
use crate::GpuError;

/// Kernel `mode` of u64 keys, hashed on the device.
pub(crate) const MODE_U64: i32 = 0;
/// Kernel `mode` of 64-bit hashes, used as they are.
pub(crate) const MODE_HASHES: i32 = 1;

/// u64 keys or hashes in device memory, with the kernel mode that reads them.
#[derive(Debug)]
pub(crate) struct Hashed<'a> {
    /// The keys or hashes.
    pub(crate) keys: CudaView<'a, u64>,
    /// [`MODE_U64`] or [`MODE_HASHES`].
    pub(crate) mode: i32,
}

impl<'a> Hashed<'a> {
    /// Hashes grouped by partition, as the partitioner writes them.
    pub(crate) fn grouped(keys: CudaView<'a, u64>) -> Hashed<'a> {
        Hashed {
            keys,
            mode: MODE_HASHES,
        }
    }

    /// Number of keys.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Keys `r` (panics past the end, like slicing).
    pub(crate) fn slice(&self, r: Range<usize>) -> Hashed<'a> {
        Hashed {
            keys: self.keys.slice(r),
            mode: self.mode,
        }
    }

    /// Whether these are hashes (else u64 keys).
    pub(crate) fn are_hashes(&self) -> bool {
        self.mode == MODE_HASHES
    }
}

/// A device buffer for the hashes of records and strings, grown as needed and kept.
#[derive(Default)]
pub(crate) struct HashScratch {
    buf: Option<CudaSlice<u64>>,
}

impl HashScratch {
    /// `keys` as u64 keys or hashes: u64 keys and hashes as they are; records and strings hashed
    /// with `seed` into this scratch buffer, queued on `stream` (read them on the same stream).
    pub(crate) fn hashed<'s>(
        &'s mut self,
        kernels: &Kernels,
        seed: u64,
        stream: &Arc<CudaStream>,
        keys: KeyArgs<'s>,
    ) -> Result<Hashed<'s>, GpuError> {
        match keys {
            KeyArgs::U64(k) => Ok(Hashed {
                keys: k,
                mode: MODE_U64,
            }),
            KeyArgs::Hashes(k) => Ok(Hashed {
                keys: k,
                mode: MODE_HASHES,
            }),
            other => {
                let n = other.len();
                if self.buf.as_ref().is_none_or(|b| b.len() < n) {
                    self.buf = None;
                    self.buf = Some(alloc_zeros::<u64>(stream, "key hashes", n)?);
                }
                let buf = self.buf.as_mut().expect("allocated above");
                hash_keys(kernels, seed, stream, &other, &mut buf.slice_mut(..n))?;
                let buf: &'s CudaSlice<u64> = buf;
                Ok(Hashed {
                    keys: buf.slice(..n),
                    mode: MODE_HASHES,
                })
            }
        }
    }

    /// Frees the buffer.
    pub(crate) fn release(&mut self) {
        self.buf = None;
    }
}

/// Queues the hashes of the records or strings `keys` into `out[..keys.len()]` on `stream`.
fn hash_keys(
    kernels: &Kernels,
    seed: u64,
    stream: &Arc<CudaStream>,
    keys: &KeyArgs<'_>,
    out: &mut CudaViewMut<'_, u64>,
) -> Result<(), GpuError> {
    let n = keys.len() as u64;
    output_holds(keys.len(), out.len())?;
    if n == 0 {
        return Ok(());
    }
    let cfg = grid(n, u64::from(THREADS))?;
    match keys {
        KeyArgs::Records { data, width } => {
            if *width == 0 {
                return Err(GpuError::Batch(bloomlanes_core::BatchError::ZeroWidth));
            }
            let width = *width as u64;
            let mut l = stream.launch_builder(kernels.get(Kernel::HashRecords)?);
            l.arg(data).arg(&width).arg(&n).arg(&seed).arg(out);
            // SAFETY: `bl_hash_records(const u8* data, u64 width, u64 n, u64 seed, u64* out)`
            // takes these arguments in this order. Thread `i < n` reads
            // `data[i × width .. (i + 1) × width]`, inside `data` because `n = data.len() / width`
            // (width ≥ 1, checked), and writes `out[i]`, inside `out` (`out.len() ≥ n`, checked).
            unsafe { l.launch(cfg) }
                .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_hash_records)", n, e))?;
        }
        KeyArgs::Strings {
            data,
            offsets,
            base,
        } => {
            let data_len = data.len() as u64;
            let mut l = stream.launch_builder(kernels.get(Kernel::HashStrings)?);
            l.arg(data)
                .arg(&data_len)
                .arg(offsets)
                .arg(base)
                .arg(&n)
                .arg(&seed)
                .arg(out);
            // SAFETY: `bl_hash_strings(const u8* data, u64 data_len, const u64* offsets, u64 base,
            // u64 n, u64 seed, u64* out)` takes these arguments in this order. Thread `i < n`
            // reads `offsets[i]` and `offsets[i + 1]`, inside `offsets` (`n = offsets.len() − 1`),
            // and the bytes between them clamped to `data_len` = `data.len()`, so inside `data`
            // whatever the offsets hold; it writes `out[i]`, inside `out` (`out.len() ≥ n`,
            // checked).
            unsafe { l.launch(cfg) }
                .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_hash_strings)", n, e))?;
        }
        KeyArgs::U64(_) | KeyArgs::Hashes(_) => {
            return Err(GpuError::Cuda {
                op: "hash_keys",
                bytes: 0,
                message: "u64 keys and hashes need no hashing pass".into(),
            })
        }
    }
    Ok(())
}
