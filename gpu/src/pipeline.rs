//! The host-memory pipeline: keys in host memory go to the device in chunks, through page-locked
//! staging buffers, on several streams, so that the copy in, the kernel and the copy out of
//! different chunks overlap. Pinned keys skip the staging copy.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use bloomlanes_core::{Keys, Params};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use crate::buffer::alloc_zeros;
use crate::launch::{launch_keys, Geometry, KeyArgs, KeyOp};
use crate::module::Kernels;
use crate::{GpuError, PinnedBuffer};

/// Keys per chunk by default (a multiple of 64, so bitmap words never straddle two chunks).
pub(crate) const DEFAULT_CHUNK_KEYS: usize = 1 << 22;
/// Byte cap of one chunk of record or string data.
const CHUNK_BYTES: usize = 64 << 20;
/// Streams (and buffer sets) of the pipeline: copy in, kernel, copy out all overlap.
const SLOTS: usize = 3;

/// One set of pipeline buffers, used by one stream.
struct Slot {
    stream: Arc<CudaStream>,
    stage: PinnedBuffer<u8>,
    stage_off: PinnedBuffer<u64>,
    dev: CudaSlice<u8>,
    dev_off: CudaSlice<u64>,
    dev_out: CudaSlice<u8>,
    out_stage: PinnedBuffer<u8>,
    /// The chunk whose results sit in `out_stage` once the stream is idle.
    pending: Option<Range<usize>>,
}

impl Slot {
    /// Whether every buffer holds a chunk of `bytes` key bytes, `offs` offsets and `out` result
    /// bytes.
    fn fits(&self, bytes: usize, offs: usize, out: usize) -> bool {
        self.stage.len() >= bytes
            && self.dev.len() >= bytes
            && self.stage_off.len() >= offs
            && self.dev_off.len() >= offs
            && self.out_stage.len() >= out
            && self.dev_out.len() >= out
    }
}

/// Staging slots kept between host-memory calls. Page-locked buffers and streams are expensive to
/// create (a `cuMemHostAlloc` of tens of MiB costs milliseconds), so a process makes them once and
/// reuses them; all belong to the one device-0 context of [`crate::context`].
static SLOT_POOL: Mutex<Vec<Slot>> = Mutex::new(Vec::new());

/// Copies a chunk of keys into its page-locked staging buffer, on several threads when the chunk
/// is large: from ordinary (pageable) memory, one thread's copy is what bounds a host-memory call,
/// not the PCIe transfer that follows it.
fn staging_copy(dst: &mut [u8], src: &[u8]) {
    const MIN_PART: usize = 2 << 20;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let parts = threads.min(src.len() / MIN_PART);
    if parts < 2 {
        dst.copy_from_slice(src);
        return;
    }
    let part = src.len().div_ceil(parts);
    std::thread::scope(|s| {
        for (d, from) in dst.chunks_mut(part).zip(src.chunks(part)) {
            s.spawn(move || d.copy_from_slice(from));
        }
    });
}

/// The chunks of `keys`: at most `chunk_keys` keys and (for records and strings) about
/// `CHUNK_BYTES` bytes each, in multiples of 64 keys but for the last.
pub(crate) fn plan(keys: &Keys<'_>, chunk_keys: usize) -> Vec<Range<usize>> {
    let n = keys.len();
    let mut v = Vec::new();
    match keys {
        Keys::Strings(s) => {
            let off = s.offsets();
            let mut a = 0;
            while a < n {
                // Grow in groups of 64 keys up to the key and byte caps (at least one group).
                let mut b = (a + 64).min(n);
                while b < n && b - a < chunk_keys {
                    let nb = (b + 64).min(n);
                    if off[nb] - off[a] > CHUNK_BYTES as u64 {
                        break;
                    }
                    b = nb;
                }
                v.push(a..b);
                a = b;
            }
        }
        _ => {
            let c = match keys {
                Keys::Records(r) => (CHUNK_BYTES / r.width())
                    .clamp(64, chunk_keys)
                    .next_multiple_of(64),
                _ => chunk_keys,
            };
            let mut a = 0;
            while a < n {
                let b = (a + c).min(n);
                v.push(a..b);
                a = b;
            }
        }
    }
    v
}

/// What a host-memory call does, with the filter's bits and the caller's output.
pub(crate) type HostOp<'o> = KeyOp<'o, &'o mut [u8], &'o mut [u64]>;

impl HostOp<'_> {
    /// Bytes of device output for a chunk of `keys` keys.
    fn out_bytes(&self, keys: usize) -> usize {
        match self {
            HostOp::Insert { .. } => 0,
            HostOp::Contains { .. } => keys,
            HostOp::Bitmap { .. } => keys.div_ceil(64) * 8,
        }
    }

    /// Copies the finished results of chunk `r` from `stage` to the caller's output.
    fn deliver(&mut self, r: Range<usize>, stage: &[u8]) {
        match self {
            HostOp::Insert { .. } => {}
            HostOp::Contains { out, .. } => out[r.clone()].copy_from_slice(&stage[..r.len()]),
            HostOp::Bitmap { out, .. } => {
                let words = r.len().div_ceil(64);
                let src: &[u64] = bytemuck::cast_slice(&stage[..words * 8]);
                out[r.start / 64..r.start / 64 + words].copy_from_slice(src);
            }
        }
    }
}

/// What a pinned-memory call does: an insert, or a lookup into bytes straight into pinned memory
/// (no bitmaps).
pub(crate) type PinnedOp<'o> = KeyOp<'o, &'o mut PinnedBuffer<u8>, std::convert::Infallible>;

/// The filter a pipeline runs against.
pub(crate) struct Pipeline<'a> {
    /// The device-0 context.
    pub ctx: &'a Arc<CudaContext>,
    /// The filter's layout's kernels.
    pub kernels: &'a Kernels,
    /// The filter's parameters.
    pub params: &'a Params,
    /// Where the image's blocks lie (and the generation inserts go to).
    pub geo: Geometry,
    /// The filter's stream: the pipeline's streams start after everything queued on it.
    pub after: &'a CudaStream,
    /// Keys per chunk (a multiple of 64).
    pub chunk_keys: usize,
}

impl Pipeline<'_> {
    /// The bytes and offsets of chunk `r` of `keys`.
    pub(crate) fn payload<'k>(keys: &Keys<'k>, r: &Range<usize>) -> (&'k [u8], &'k [u64]) {
        match *keys {
            Keys::U64(k) | Keys::Hashes(k) => (bytemuck::cast_slice(&k[r.clone()]), &[]),
            Keys::Records(rec) => (&rec.data()[r.start * rec.width()..r.end * rec.width()], &[]),
            Keys::Strings(s) => {
                let off = s.offsets();
                (
                    &s.data()[off[r.start] as usize..off[r.end] as usize],
                    &off[r.start..=r.end],
                )
            }
        }
    }

    /// Takes `SLOTS.min(chunks)` slots from the pool that fit the largest chunk, making new ones
    /// as needed, each with a stream that starts after the filter's stream.
    fn slots(
        &self,
        chunks: usize,
        bytes: usize,
        offs: usize,
        out: usize,
    ) -> Result<Vec<Slot>, GpuError> {
        let want = SLOTS.min(chunks);
        let mut slots = Vec::with_capacity(want);
        {
            let mut pool = SLOT_POOL.lock().unwrap_or_else(|e| e.into_inner());
            while slots.len() < want {
                match pool.iter().position(|s| s.fits(bytes, offs, out)) {
                    Some(i) => slots.push(pool.swap_remove(i)),
                    None => break,
                }
            }
        }
        while slots.len() < want {
            let stream = self.new_stream()?;
            slots.push(Slot {
                stage: PinnedBuffer::zeros(bytes)?,
                stage_off: PinnedBuffer::zeros(offs)?,
                dev: alloc_zeros::<u8>(&stream, "key chunk", bytes)?,
                dev_off: alloc_zeros::<u64>(&stream, "offset chunk", offs)?,
                dev_out: alloc_zeros::<u8>(&stream, "result chunk", out)?,
                out_stage: PinnedBuffer::zeros(out)?,
                pending: None,
                stream,
            });
        }
        self.start_after_filter(slots.iter().map(|s| &*s.stream))?;
        Ok(slots)
    }

    fn new_stream(&self) -> Result<Arc<CudaStream>, GpuError> {
        self.ctx
            .new_stream()
            .map_err(|e| GpuError::cuda("cuStreamCreate", 0, e))
    }

    /// Makes `streams` wait for everything queued on the filter's stream so far.
    fn start_after_filter<'s>(
        &self,
        streams: impl Iterator<Item = &'s CudaStream>,
    ) -> Result<(), GpuError> {
        let ready = self
            .after
            .record_event(None)
            .map_err(|e| GpuError::cuda("cuEventRecord", 0, e))?;
        for s in streams {
            s.wait(&ready)
                .map_err(|e| GpuError::cuda("cuStreamWaitEvent", 0, e))?;
        }
        Ok(())
    }

    /// Runs `op` over `keys` from host memory and waits for the results.
    pub(crate) fn run_host(&self, keys: Keys<'_>, mut op: HostOp<'_>) -> Result<(), GpuError> {
        if keys.is_empty() {
            return Ok(());
        }
        let chunks = plan(&keys, self.chunk_keys);
        let (mut max_bytes, mut max_off, mut max_keys) = (0, 0, 0);
        for c in &chunks {
            let (d, o) = Self::payload(&keys, c);
            max_bytes = max_bytes.max(d.len());
            max_off = max_off.max(o.len());
            max_keys = max_keys.max(c.len());
        }
        let mut slots = self.slots(chunks.len(), max_bytes, max_off, op.out_bytes(max_keys))?;
        let nslots = slots.len();
        let result = (|| {
            for (i, c) in chunks.iter().enumerate() {
                let slot = &mut slots[i % nslots];
                Self::drain(slot, &mut op)?;
                let (data, off) = Self::payload(&keys, c);
                staging_copy(&mut slot.stage[..data.len()], data);
                slot.stage_off[..off.len()].copy_from_slice(off);
                self.run_chunk(slot, &keys, c, data.len(), off.len(), &mut op)?;
            }
            slots
                .iter_mut()
                .try_for_each(|slot| Self::drain(slot, &mut op))
        })();
        // Never leave queued copies reading staging memory that is freed or handed out again,
        // even on an error: slots whose stream did not finish are leaked, neither reused nor
        // freed.
        let mut pool = SLOT_POOL.lock().unwrap_or_else(|e| e.into_inner());
        for mut slot in slots {
            if slot.stream.synchronize().is_ok() {
                slot.pending = None;
                if pool.len() >= 2 * SLOTS {
                    pool.remove(0); // the oldest goes: the pool follows the recent chunk sizes
                }
                pool.push(slot);
            } else {
                std::mem::forget(slot);
            }
        }
        result
    }

    /// Waits for the slot's stream and hands its finished results to the caller's output.
    fn drain(slot: &mut Slot, op: &mut HostOp<'_>) -> Result<(), GpuError> {
        slot.stream
            .synchronize()
            .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
        if let Some(r) = slot.pending.take() {
            op.deliver(r, &slot.out_stage);
        }
        Ok(())
    }

    /// Queues chunk `c` on the slot's stream: the copies in, the kernel, the copy out.
    fn run_chunk(
        &self,
        slot: &mut Slot,
        keys: &Keys<'_>,
        c: &Range<usize>,
        data_len: usize,
        off_len: usize,
        op: &mut HostOp<'_>,
    ) -> Result<(), GpuError> {
        let stream = slot.stream.clone();
        // SAFETY: for both copies, `slot.dev` and `slot.dev_off` hold at least `data_len` bytes and
        // `off_len` offsets (`Slot::fits`), which are what the sources `slot.stage[..data_len]`
        // and `slot.stage_off[..off_len]` hold. The staging buffers are page-locked, and neither
        // written nor freed until this stream has been synchronised: the next write to them
        // follows `drain` of this slot, and slots return to the pool (or are leaked) only after a
        // synchronisation.
        unsafe {
            copy_in(&mut slot.dev, &slot.stage[..data_len], &stream)?;
            copy_in(&mut slot.dev_off, &slot.stage_off[..off_len], &stream)?;
        }
        let n = c.len();
        let args = match keys {
            Keys::U64(_) => KeyArgs::U64(data_as_words(&slot.dev, n)),
            Keys::Hashes(_) => KeyArgs::Hashes(data_as_words(&slot.dev, n)),
            Keys::Records(r) => KeyArgs::Records {
                data: slot.dev.slice(..data_len),
                width: r.width(),
            },
            Keys::Strings(s) => KeyArgs::Strings {
                data: slot.dev.slice(..data_len),
                offsets: slot.dev_off.slice(..off_len),
                base: s.offsets()[c.start],
            },
        };
        let pass = op.pass(
            &mut slot.dev_out,
            |dev_out| dev_out.slice_mut(..n),
            |dev_out, _| {
                // SAFETY: any 8 bytes are a valid u64, so viewing the byte buffer as u64s cannot
                // produce an invalid value; its start is 256-byte aligned (a `cuMemAlloc`
                // allocation), so aligned for u64; and `transmute_mut` returns `None` unless the
                // buffer holds the chunk's `n.div_ceil(64)` u64s, which `Slot::fits` guaranteed.
                unsafe { dev_out.transmute_mut::<u64>(n.div_ceil(64)) }
                    .expect("the slot's output buffer holds the chunk's bitmap")
            },
        );
        launch_keys(self.kernels, self.params, self.geo, &stream, args, pass)?;
        let out_bytes = op.out_bytes(n);
        if out_bytes > 0 {
            let (src, _record_read) = slot.dev_out.device_ptr(&stream);
            // SAFETY: `src` is the start of `slot.dev_out`, which holds at least `out_bytes`
            // bytes (`Slot::fits`), and the destination is `out_bytes` bytes of the page-locked
            // `slot.out_stage`, which is read only after `drain` synchronises this stream and is
            // neither freed nor reused before that (see the copies above).
            unsafe {
                cudarc::driver::result::memcpy_dtoh_async(
                    &mut slot.out_stage[..out_bytes],
                    src,
                    stream.cu_stream(),
                )
            }
            .map_err(|e| GpuError::cuda("cuMemcpyDtoHAsync", out_bytes as u64, e))?;
        }
        slot.pending = Some(c.clone());
        Ok(())
    }

    /// Runs `op` over u64 keys in pinned memory: chunks are copied straight from `keys` (and
    /// results straight into the pinned output), with copies and kernels overlapped on several
    /// streams; waits for every stream before returning.
    pub(crate) fn run_pinned(
        &self,
        keys: &PinnedBuffer<u64>,
        mut op: PinnedOp<'_>,
    ) -> Result<(), GpuError> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let chunk = self.chunk_keys.min(n);
        let nchunks = n.div_ceil(chunk);
        let out_len = match op {
            PinnedOp::Insert { .. } => 0,
            PinnedOp::Contains { .. } => chunk,
            PinnedOp::Bitmap { out, .. } => match out {},
        };
        let mut slots = Vec::with_capacity(SLOTS.min(nchunks));
        for _ in 0..SLOTS.min(nchunks) {
            let stream = self.new_stream()?;
            let dev_keys = alloc_zeros::<u64>(&stream, "key chunk", chunk)?;
            let dev_out = alloc_zeros::<u8>(&stream, "result chunk", out_len)?;
            slots.push((stream, dev_keys, dev_out));
        }
        self.start_after_filter(slots.iter().map(|s| &*s.0))?;
        let nslots = slots.len();
        let result = (|| {
            for i in 0..nchunks {
                let (stream, dev_keys, dev_out) = &mut slots[i % nslots];
                let r = i * chunk..((i + 1) * chunk).min(n);
                let m = r.len();
                {
                    let (dst, _record_write) = dev_keys.device_ptr_mut(stream);
                    // SAFETY: `dst` is the start of `dev_keys`, `chunk` ≥ `m` u64s, and the
                    // source is the `m` u64s `keys[r]`. `keys` is page-locked and borrowed for
                    // this whole call, which synchronises every stream before it returns, so it
                    // outlives the asynchronous copy.
                    unsafe {
                        cudarc::driver::result::memcpy_htod_async(
                            dst,
                            &keys[r.clone()],
                            stream.cu_stream(),
                        )
                    }
                    .map_err(|e| GpuError::cuda("cuMemcpyHtoDAsync", m as u64 * 8, e))?;
                }
                let args = KeyArgs::U64(dev_keys.slice(..m));
                let pass = op.pass(
                    &mut *dev_out,
                    |d| d.slice_mut(..m),
                    |_, never| match *never {},
                );
                launch_keys(self.kernels, self.params, self.geo, stream, args, pass)?;
                if let PinnedOp::Contains { out, .. } = &mut op {
                    let (src, _record_read) = dev_out.device_ptr(stream);
                    // SAFETY: `src` is the start of `dev_out`, `chunk` ≥ `m` bytes, and the
                    // destination is the `m` bytes `out[r]` of a page-locked buffer the caller
                    // lent mutably for this whole call, which synchronises every stream before it
                    // returns.
                    unsafe {
                        cudarc::driver::result::memcpy_dtoh_async(
                            &mut out[r.clone()],
                            src,
                            stream.cu_stream(),
                        )
                    }
                    .map_err(|e| GpuError::cuda("cuMemcpyDtoHAsync", m as u64, e))?;
                }
            }
            Ok(())
        })();
        let mut sync = Ok(());
        for s in &slots {
            if let Err(e) = s.0.synchronize() {
                sync = Err(GpuError::cuda("cuStreamSynchronize", 0, e));
            }
        }
        result.and(sync)
    }
}

/// Queues the copy of `src` (page-locked) to the start of `dst` on `stream`; nothing if `src` is
/// empty.
///
/// # Safety
/// `dst` holds at least `src.len()` elements, and `src` is page-locked memory that is neither
/// written nor freed until `stream` has been synchronised.
unsafe fn copy_in<T: cudarc::driver::DeviceRepr>(
    dst: &mut CudaSlice<T>,
    src: &[T],
    stream: &Arc<CudaStream>,
) -> Result<(), GpuError> {
    if src.is_empty() {
        return Ok(());
    }
    let bytes = std::mem::size_of_val(src) as u64;
    let (ptr, _record_write) = dst.device_ptr_mut(stream);
    // SAFETY: `ptr` is the start of `dst`, which holds `src.len()` elements (the caller's
    // contract), and `src` stays valid and unwritten until the asynchronous copy is done (the
    // caller's contract).
    unsafe { cudarc::driver::result::memcpy_htod_async(ptr, src, stream.cu_stream()) }
        .map_err(|e| GpuError::cuda("cuMemcpyHtoDAsync", bytes, e))
}

/// The first `n` keys of a chunk's byte buffer, as u64s.
fn data_as_words(dev: &CudaSlice<u8>, n: usize) -> cudarc::driver::CudaView<'_, u64> {
    // SAFETY: any 8 bytes are a valid u64; the buffer starts 256-byte aligned (a `cuMemAlloc`
    // allocation), so aligned for u64; and `transmute` returns `None` unless it holds `n` u64s,
    // which it does: it was sized for the chunk's `n × 8` key bytes (`Slot::fits`).
    unsafe { dev.transmute::<u64>(n) }.expect("the slot's key buffer holds the chunk's keys")
}

#[cfg(test)]
mod tests {
    use super::*;
    use bloomlanes_core::{Records, Strings};

    /// Chunks tile `0..n` in order, each a multiple of 64 keys but the last.
    fn assert_tiles(chunks: &[Range<usize>], n: usize) {
        let mut next = 0;
        for (i, c) in chunks.iter().enumerate() {
            assert_eq!(c.start, next, "chunk {i} starts where the last ended");
            assert!(!c.is_empty(), "chunk {i} is empty");
            if i + 1 < chunks.len() {
                assert_eq!(c.len() % 64, 0, "chunk {i}: whole bitmap words");
            }
            next = c.end;
        }
        assert_eq!(next, n, "every key is in a chunk");
    }

    #[test]
    fn plan_splits_words_by_the_key_cap() {
        let keys = vec![0u64; 1000];
        let chunks = plan(&Keys::U64(&keys), 128);
        assert_tiles(&chunks, 1000);
        assert_eq!(chunks.len(), 8);
        assert!(chunks.iter().all(|c| c.len() <= 128));
        assert!(plan(&Keys::Hashes(&[]), 128).is_empty());
    }

    #[test]
    fn plan_caps_record_chunks_by_bytes() {
        // 1 MiB records: CHUNK_BYTES / width = 64 keys per chunk, whatever the key cap.
        let width = 1 << 20;
        let data = vec![0u8; width * 130];
        let keys = Keys::Records(Records::new(&data, width).unwrap());
        let chunks = plan(&keys, DEFAULT_CHUNK_KEYS);
        assert_tiles(&chunks, 130);
        assert_eq!(
            chunks.iter().map(|c| c.len()).collect::<Vec<_>>(),
            [64, 64, 2]
        );
    }

    #[test]
    fn plan_caps_string_chunks_by_bytes_in_groups_of_64() {
        // 300 strings of 512 KiB: a 64-key group is 32 MiB, so two groups fill CHUNK_BYTES.
        let len = 512 << 10;
        let data = vec![0u8; len * 300];
        let offsets: Vec<u64> = (0..=300).map(|i| (i * len) as u64).collect();
        let keys = Keys::Strings(Strings::new(&data, &offsets).unwrap());
        let chunks = plan(&keys, DEFAULT_CHUNK_KEYS);
        assert_tiles(&chunks, 300);
        for c in &chunks {
            let bytes = offsets[c.end] - offsets[c.start];
            assert!(
                bytes <= CHUNK_BYTES as u64 || c.len() <= 64,
                "{c:?}: {bytes} bytes"
            );
        }
        assert_eq!(chunks[0], 0..128);
        // Tiny strings: the key cap decides.
        let offsets = vec![0u64; 1001];
        let keys = Keys::Strings(Strings::new(&[], &offsets).unwrap());
        let chunks = plan(&keys, 256);
        assert_tiles(&chunks, 1000);
        assert!(chunks.iter().all(|c| c.len() <= 256));
    }

    #[test]
    fn payload_is_the_chunk_bytes_and_its_offsets() {
        let data = b"abcdefghij";
        let offsets = [0u64, 2, 2, 7, 10];
        let keys = Keys::Strings(Strings::new(data, &offsets).unwrap());
        let (bytes, offs) = Pipeline::payload(&keys, &(1..3));
        assert_eq!(bytes, b"cdefg");
        assert_eq!(offs, &[2, 2, 7]);
        let words = [1u64, 2, 3];
        let (bytes, offs) = Pipeline::payload(&Keys::U64(&words), &(1..3));
        assert_eq!(bytes, bytemuck::cast_slice::<u64, u8>(&words[1..3]));
        assert!(offs.is_empty());
    }

    #[test]
    fn staging_copy_copies_every_byte_in_parallel_parts() {
        let src: Vec<u8> = (0..(5 << 20) + 7).map(|i| (i * 31 % 251) as u8).collect();
        let mut dst = vec![0u8; src.len()];
        staging_copy(&mut dst, &src);
        assert_eq!(dst, src);
        let mut small = [0u8; 5];
        staging_copy(&mut small, &[1, 2, 3, 4, 5]);
        assert_eq!(small, [1, 2, 3, 4, 5]);
    }
}
