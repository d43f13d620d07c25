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
use cudarc::driver::{CudaSlice, CudaStream};

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
        let n = r.len();
        let copy = |e| GpuError::cuda("cuMemcpyHtoD(key chunk)", n as u64, e);
        match *keys {
            Keys::U64(k) | Keys::Hashes(k) => {
                let buf = grown(&mut self.words, stream, "key chunk", n)?;
                if n > 0 {
                    stream
                        .memcpy_htod(&k[r.clone()], &mut buf.slice_mut(..n))
                        .map_err(copy)?;
                }
                let view = buf.slice(..n);
                Ok(if matches!(keys, Keys::U64(_)) {
                    KeyArgs::U64(view)
                } else {
                    KeyArgs::Hashes(view)
                })
            }
            Keys::Records(rec) => {
                let (data, _) = Pipeline::payload(keys, &r);
                let buf = grown(&mut self.bytes, stream, "record chunk", data.len())?;
                if !data.is_empty() {
                    stream
                        .memcpy_htod(data, &mut buf.slice_mut(..data.len()))
                        .map_err(copy)?;
                }
                Ok(KeyArgs::Records {
                    data: buf.slice(..data.len()),
                    width: rec.width(),
                })
            }
            Keys::Strings(s) => {
                let (data, offs) = Pipeline::payload(keys, &r);
                let bytes = grown(&mut self.bytes, stream, "string chunk", data.len())?;
                if !data.is_empty() {
                    stream
                        .memcpy_htod(data, &mut bytes.slice_mut(..data.len()))
                        .map_err(copy)?;
                }
                let offsets = grown(&mut self.offsets, stream, "offset chunk", offs.len())?;
                stream
                    .memcpy_htod(offs, &mut offsets.slice_mut(..offs.len()))
                    .map_err(copy)?;
                Ok(KeyArgs::Strings {
                    data: bytes.slice(..data.len()),
                    offsets: offsets.slice(..offs.len()),
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
