//! Host-memory batches for the filter kinds, one chunk at a time.
//!
//! Counting deletes and window inserts must apply their chunks in order (a delete checks the
//! counters the previous chunk left; a window rotates between chunks), so their host-memory calls
//! copy each chunk into one set of device buffers and run it on the filter's stream before the
//! next: simpler than the static filter's three-stream pipeline ([`crate::pipeline`]), and bound
//! by the same host-to-device copy. Chunks follow [`crate::pipeline::plan`] (at most
//! `chunk_keys` keys and about 64 MiB of record or string bytes).

use std::ops::Range;
use std::sync::Arc;

use bloomlanes_core::Keys;
use cudarc::driver::{CudaSlice, CudaStream, CudaView};

use crate::buffer::alloc_zeros;
use crate::launch::KeyArgs;
use crate::pipeline::Pipeline;
use crate::GpuError;

/// Device buffers for one chunk of host keys, grown as needed and kept.
#[derive(Default)]
pub(crate) struct Stager {
    words: Option<CudaSlice<u64>>,
    bytes: Option<CudaSlice<u8>>,
    offsets: Option<CudaSlice<u64>>,
}

/// `slot`, grown to hold at least `n` elements (its contents are not kept when it grows).
pub(crate) fn grown<'s, T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    slot: &'s mut Option<CudaSlice<T>>,
    stream: &Arc<CudaStream>,
    what: &'static str,
    n: usize,
) -> Result<&'s mut CudaSlice<T>, GpuError> {
    if slot.as_ref().is_none_or(|b| b.len() < n) {
        *slot = None;
        *slot = Some(alloc_zeros::<T>(stream, what, n)?);
    }
    Ok(slot.as_mut().expect("allocated above"))
}

/// `src` copied into `slot` (grown to hold it) on `stream`, queued after everything queued there
/// before; returns the copy's view. The host memory may be reused when this returns (pageable
/// copies are staged by the driver before the call returns).
pub(crate) fn staged<'s, T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    slot: &'s mut Option<CudaSlice<T>>,
    stream: &Arc<CudaStream>,
    what: &'static str,
    src: &[T],
) -> Result<CudaView<'s, T>, GpuError> {
    let n = src.len();
    let buf = grown(slot, stream, what, n)?;
    if n > 0 {
        let bytes = std::mem::size_of_val(src) as u64;
        stream
            .memcpy_htod(src, &mut buf.slice_mut(..n))
            .map_err(|e| GpuError::cuda("cuMemcpyHtoD(staged chunk)", bytes, e))?;
    }
    Ok(buf.slice(..n))
}

impl Stager {
    /// Copies chunk `r` of `keys` to the device, queued on `stream` after everything queued there
    /// before (so a kernel still reading the previous chunk finishes first), and returns it as
    /// kernel arguments. The host memory may be reused when this returns (pageable copies are
    /// staged by the driver before the call returns).
    pub(crate) fn stage<'s>(
        &'s mut self,
        stream: &Arc<CudaStream>,
        keys: &Keys<'_>,
        r: Range<usize>,
    ) -> Result<KeyArgs<'s>, GpuError> {
        match *keys {
            Keys::U64(k) | Keys::Hashes(k) => {
                let view = staged(&mut self.words, stream, "key chunk", &k[r.clone()])?;
                Ok(if matches!(keys, Keys::U64(_)) {
                    KeyArgs::U64(view)
                } else {
                    KeyArgs::Hashes(view)
                })
            }
            Keys::Records(rec) => {
                let (data, _) = Pipeline::payload(keys, &r);
                Ok(KeyArgs::Records {
                    data: staged(&mut self.bytes, stream, "record chunk", data)?,
                    width: rec.width(),
                })
            }
            Keys::Strings(s) => {
                let (data, offs) = Pipeline::payload(keys, &r);
                Ok(KeyArgs::Strings {
                    data: staged(&mut self.bytes, stream, "string chunk", data)?,
                    offsets: staged(&mut self.offsets, stream, "offset chunk", offs)?,
                    base: s.offsets()[r.start],
                })
            }
        }
    }

    /// Frees the buffers.
    pub(crate) fn release(&mut self) {
        *self = Stager::default();
    }
}
