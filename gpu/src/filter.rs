//! [`GpuFilter`]: a split-block Bloom filter in GPU memory and its entry points. The work is
//! done in the other rooms: kernels are launched by [`crate::launch`], device keys are checked by
//! [`crate::device_keys`], the partitioned insert lives in [`crate::partition`] and the host
//! pipeline in [`crate::pipeline`].

use std::sync::Arc;

use bloomlanes_core::{Filter, FilterRef, HashId, Keys, Layout, Params};
use cudarc::driver::{CudaContext, CudaSlice, PushKernelArg};

use crate::buffer::{alloc_zeros, check_free};
use crate::kernel::{Kernel, KEYS_PER_THREAD, THREADS};
use crate::launch::{launch_keys, KeyArgs, Pass};
use crate::lookup::{LookupState, LookupTarget};
use crate::module::{grid, kernels, layout_free_kernels, Kernels};
use crate::partition::Partitioner;
use crate::pipeline::{HostOp, PinnedOp, Pipeline, DEFAULT_CHUNK_KEYS};
use crate::{
    context, DeviceBuffer, DeviceKeys, GpuError, GpuStream, InsertKernel, LookupAuto, LookupKernel,
    LookupOutput, LookupPath, PinnedBuffer,
};

/// A split-block Bloom filter in GPU memory.
pub struct GpuFilter {
    ctx: Arc<CudaContext>,
    /// What the synchronous calls run on.
    stream: GpuStream,
    /// Where device string offsets are checked before a launch uses them.
    check_stream: GpuStream,
    k: Arc<Kernels>,
    /// The bits: `params.u32_len()` words.
    words: CudaSlice<u32>,
    params: Params,
    keys: Option<u64>,
    chunk_keys: usize,
    insert_kernel: InsertKernel,
    partitioner: Partitioner,
    lookup: LookupState,
}

impl std::fmt::Debug for GpuFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuFilter")
            .field("params", &self.params)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl GpuFilter {
    /// An empty filter with these parameters on device 0.
    pub fn new(params: Params) -> Result<GpuFilter, GpuError> {
        let ctx = context()?;
        let bytes = params.byte_len();
        // Refuse before compiling anything: the clear error for a filter too big for the device.
        check_free(&ctx, "filter bits", bytes)?;
        let k = kernels(&ctx, params.layout)?;
        let stream = GpuStream::new()?;
        let check_stream = GpuStream::new()?;
        let len = usize::try_from(params.u32_len()).map_err(|_| GpuError::TooManyElements {
            what: "filter bits",
            len: params.u32_len(),
            elem_bytes: 4,
        })?;
        let words = alloc_zeros::<u32>(stream.raw(), "filter bits", len)?;
        stream.synchronize()?;
        Ok(GpuFilter {
            partitioner: Partitioner::new(&ctx),
            ctx,
            stream,
            check_stream,
            k,
            words,
            params,
            keys: Some(0),
            chunk_keys: DEFAULT_CHUNK_KEYS,
            insert_kernel: InsertKernel::Auto,
            lookup: LookupState::default(),
        })
    }

    /// A device copy of a host filter.
    pub fn upload(filter: &Filter) -> Result<GpuFilter, GpuError> {
        let mut g = Self::upload_view(filter.as_view())?;
        g.keys = filter.key_count();
        Ok(g)
    }

    /// A device copy of a borrowed filter (its parameters and words; e.g. a memory-mapped file).
    /// The key count is unknown.
    pub fn upload_view(view: FilterRef<'_, u32>) -> Result<GpuFilter, GpuError> {
        let mut g = Self::new(*view.params())?;
        let words = view.words();
        let bytes = std::mem::size_of_val(words) as u64;
        g.stream
            .raw()
            .memcpy_htod(words, &mut g.words)
            .map_err(|e| GpuError::cuda("cuMemcpyHtoD", bytes, e))?;
        g.stream.synchronize()?;
        g.keys = None;
        Ok(g)
    }

    /// The filter copied back to the host; its bytes equal what the core builds from the same keys.
    pub fn download(&self) -> Result<Filter, GpuError> {
        let mut f = Filter::new(self.params);
        let bytes = self.byte_len();
        self.stream
            .raw()
            .memcpy_dtoh(&self.words, f.words_mut())
            .map_err(|e| GpuError::cuda("cuMemcpyDtoH", bytes, e))?;
        self.stream.synchronize()?;
        f.set_key_count(self.keys);
        Ok(f)
    }

    /// Copies the filter's words into `out` (at least [`byte_len`](Self::byte_len) / 4 words;
    /// e.g. the words of the host filter it was uploaded from) and waits, without allocating.
    pub fn download_words(&self, out: &mut [u32]) -> Result<(), GpuError> {
        let n = self.words.len();
        if out.len() < n {
            return Err(GpuError::OutputTooShort {
                needed: n,
                found: out.len(),
            });
        }
        self.stream
            .raw()
            .memcpy_dtoh(&self.words, &mut out[..n])
            .map_err(|e| GpuError::cuda("cuMemcpyDtoH", self.byte_len(), e))?;
        self.stream.synchronize()
    }

    /// The filter's parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }
    /// The block shape.
    pub fn layout(&self) -> Layout {
        self.params.layout
    }
    /// Number of blocks.
    pub fn blocks(&self) -> u32 {
        self.params.blocks
    }
    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.params.seed
    }
    /// Keys inserted since the filter was empty, if known.
    pub fn key_count(&self) -> Option<u64> {
        self.keys
    }
    /// Size of the bit array in bytes.
    pub fn byte_len(&self) -> u64 {
        self.params.byte_len()
    }
    /// The filter's own stream (what the synchronous calls use).
    pub fn stream(&self) -> &GpuStream {
        &self.stream
    }
    /// Keys per chunk when streaming from host memory (rounded up to a multiple of 64).
    pub fn set_chunk_keys(&mut self, keys: usize) {
        self.chunk_keys = keys.max(64).next_multiple_of(64);
    }

    /// Chooses the insert kernel for u64 keys and hashes (results are identical); the default is
    /// [`InsertKernel::Auto`].
    pub fn set_insert_kernel(&mut self, kernel: InsertKernel) {
        self.insert_kernel = kernel;
    }

    /// The insert kernel chosen with [`GpuFilter::set_insert_kernel`].
    pub fn insert_kernel(&self) -> InsertKernel {
        self.insert_kernel
    }

    /// Sets the partitioned insert's target partition size in bytes (0 = automatic: a third of
    /// the device's L2 cache, at most 24 MiB). At most 2048 partitions are used, so partitions of
    /// very large filters may be bigger.
    pub fn set_partition_bytes(&mut self, bytes: u64) {
        self.partitioner.set_partition_bytes(bytes);
    }

    /// The partitioned insert's target partition size in bytes.
    pub fn partition_bytes(&self) -> u64 {
        self.partitioner.partition_bytes()
    }

    /// Number of partitions the partitioned insert splits this filter into (1 to 2048).
    pub fn partitions(&self) -> u32 {
        self.partitioner.partitions(&self.params)
    }

    /// Caps the partitioning scratch of partitioned inserts and lookups at `keys` keys (8 bytes
    /// each, 12 with the positions of a lookup; at least 64). By default it is sized to the batch
    /// (up to 2^32 − 1 keys), so the filter is swept once per batch; larger batches than the cap
    /// go through in chunks of at most this many keys, one sweep each. A buffer already allocated
    /// larger is kept (see [`GpuFilter::release_scratch`]).
    pub fn set_scratch_keys(&mut self, keys: usize) {
        self.partitioner.set_scratch_keys(keys);
    }

    /// Frees the scratch buffers of partitioned inserts and lookups (allocated again when
    /// needed).
    pub fn release_scratch(&mut self) {
        self.partitioner.release_scratch();
        self.lookup.release();
    }

    /// The L2 cache size the device reports, in bytes (0 if unknown).
    pub fn l2_bytes(&self) -> u64 {
        self.partitioner.l2_bytes()
    }

    /// Whether a device-resident insert of `keys` u64 keys or hashes takes the partitioned path
    /// with the current [`InsertKernel`] (see [`InsertKernel::Auto`] for the rule).
    pub fn partitioned_for(&self, keys: usize) -> bool {
        self.partitioner
            .wanted(self.insert_kernel, &self.params, keys)
    }

    /// Clears every bit (the key count becomes 0).
    pub fn clear(&mut self) -> Result<(), GpuError> {
        self.stream
            .raw()
            .memset_zeros(&mut self.words)
            .map_err(|e| GpuError::cuda("cuMemsetD8", self.byte_len(), e))?;
        self.keys = Some(0);
        self.stream.synchronize()
    }

    /// Refuses raw keys for a filter of caller-supplied hashes.
    fn check_hash(&self, hashes: bool) -> Result<(), GpuError> {
        if !hashes && self.params.hash != HashId::Xxh64 {
            return Err(GpuError::HashMismatch(
                "this filter holds caller-supplied hashes; pass Keys::Hashes",
            ));
        }
        Ok(())
    }

    fn count(&mut self, n: usize) {
        self.keys = self.keys.map(|k| k.saturating_add(n as u64));
    }

    // ---- device-resident keys -------------------------------------------------------------

    /// Writes the hashes of device-resident u64 keys (or the hashes themselves, for
    /// [`DeviceKeys::Hashes`]) into `out`, grouped by the partition of the filter they fall in:
    /// the first three passes of [`InsertKernel::Partitioned`]. Inserting `out` as
    /// [`DeviceKeys::Hashes`] then sets the same bits as inserting `keys`. Queued on `stream`.
    /// Records and strings are refused with [`GpuError::HashMismatch`]; batches must hold fewer
    /// than 2^32 keys.
    pub fn partition_device_async(
        &mut self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u64>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        let (k, hashes) = match keys {
            DeviceKeys::U64(k) => (k, false),
            DeviceKeys::Hashes(k) => (k, true),
            _ => {
                return Err(GpuError::HashMismatch(
                    "partitioning takes u64 keys or hashes",
                ))
            }
        };
        self.check_hash(hashes)?;
        self.partitioner.group(
            &self.k,
            &self.params,
            &k.view(),
            hashes,
            &mut out.view_mut(),
            stream.raw(),
        )
    }

    /// Inserts device-resident keys, queued on `stream` (returns before the kernel finishes).
    /// String offsets are checked on the device first (see [`DeviceKeys::Strings`]), which waits
    /// for the offsets to be written and checked.
    pub fn insert_device_async(
        &mut self,
        keys: DeviceKeys<'_>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        keys.check_shape()?;
        self.check_hash(keys.are_hashes())?;
        let args = keys.to_args(&self.k, self.check_stream.raw())?;
        let n = keys.len();
        let words_keys = match &args {
            KeyArgs::U64(k) => Some((k, false)),
            KeyArgs::Hashes(k) => Some((k, true)),
            KeyArgs::Records { .. } | KeyArgs::Strings { .. } => None,
        };
        if let Some((k, hashes)) = words_keys.filter(|_| self.partitioned_for(n)) {
            let stream = stream.raw();
            let (kernels, params) = (&self.k, &self.params);
            match self
                .partitioner
                .insert(kernels, params, &mut self.words, k, hashes, stream)
            {
                Ok(()) => {
                    self.count(n);
                    return Ok(());
                }
                // Nothing was queued (the scratch buffer is allocated before any launch): fall
                // back to the direct insert.
                Err(GpuError::OutOfMemory { .. }) if self.insert_kernel == InsertKernel::Auto => {}
                Err(e) => return Err(e),
            }
        }
        let pass = Pass::Insert {
            words: &mut self.words,
            kernel: self.insert_kernel.direct(),
        };
        launch_keys(&self.k, &self.params, stream.raw(), args, pass)?;
        self.count(n);
        Ok(())
    }

    /// Inserts device-resident keys and waits.
    pub fn insert_device(&mut self, keys: DeviceKeys<'_>) -> Result<(), GpuError> {
        let s = self.stream.clone();
        self.insert_device_async(keys, &s)?;
        s.synchronize()
    }

    /// Looks up device-resident keys into `out` (one byte per key, 1 = maybe present), queued on
    /// `stream`.
    pub fn contains_device_async(
        &self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u8>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        keys.check_shape()?;
        self.check_hash(keys.are_hashes())?;
        if out.len() < keys.len() {
            return Err(GpuError::OutputTooShort {
                needed: keys.len(),
                found: out.len(),
            });
        }
        let args = keys.to_args(&self.k, self.check_stream.raw())?;
        let pass = Pass::Contains {
            words: &self.words,
            out: out.view_mut(),
        };
        launch_keys(&self.k, &self.params, stream.raw(), args, pass)
    }

    /// Looks up device-resident keys into `out` and waits.
    pub fn contains_device(
        &self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u8>,
    ) -> Result<(), GpuError> {
        self.contains_device_async(keys, out, &self.stream)?;
        self.stream.synchronize()
    }

    /// Looks up device-resident keys into a packed bitmap (bit `i % 64` of word `i / 64`), queued
    /// on `stream`. Bits past the last key in its word are zero.
    pub fn contains_bitmap_device_async(
        &self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u64>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        keys.check_shape()?;
        self.check_hash(keys.are_hashes())?;
        let needed = keys.len().div_ceil(64);
        if out.len() < needed {
            return Err(GpuError::OutputTooShort {
                needed,
                found: out.len(),
            });
        }
        let args = keys.to_args(&self.k, self.check_stream.raw())?;
        let pass = Pass::Bitmap {
            words: &self.words,
            out: out.view_mut(),
        };
        launch_keys(&self.k, &self.params, stream.raw(), args, pass)
    }

    // ---- lookups with a choice of output and path --------------------------------------------

    /// Chooses how [`GpuFilter::lookup_device_async`] probes the filter (answers are identical);
    /// the default is [`LookupKernel::Auto`].
    pub fn set_lookup_kernel(&mut self, kernel: LookupKernel) {
        self.lookup.kernel = kernel;
    }

    /// The choice made with [`GpuFilter::set_lookup_kernel`].
    pub fn lookup_kernel(&self) -> LookupKernel {
        self.lookup.kernel
    }

    /// Sets the rule by which [`LookupKernel::Auto`] partitions lookups.
    pub fn set_lookup_auto(&mut self, rule: LookupAuto) {
        self.lookup.auto = rule;
    }

    /// The rule by which [`LookupKernel::Auto`] partitions lookups.
    pub fn lookup_auto(&self) -> LookupAuto {
        self.lookup.auto
    }

    fn lookup_target(&mut self) -> LookupTarget<'_> {
        LookupTarget {
            kernels: &self.k,
            params: &self.params,
            words: &self.words,
            partitioner: &mut self.partitioner,
            state: &mut self.lookup,
        }
    }

    /// Whether a lookup of `keys` device-resident keys through [`GpuFilter::lookup_device_async`]
    /// is partitioned under the current settings.
    pub fn lookup_partitioned_for(&self, keys: usize) -> bool {
        self.lookup
            .partitioned_for(self.byte_len(), self.partitioner.l2_or_fallback(), keys)
    }

    /// Looks up device-resident keys into `out` (bytes, a bitmap, or the list of maybe-present
    /// positions), queued on `stream`, directly or partitioned (see [`LookupKernel`]); returns
    /// the path taken. Records and strings are hashed into a scratch buffer first. The scratch
    /// buffers belong to the filter, hence `&mut self` (their reuse by calls on other streams is
    /// ordered by the buffers' events).
    pub fn lookup_device_async(
        &mut self,
        keys: DeviceKeys<'_>,
        out: LookupOutput<'_>,
        stream: &GpuStream,
    ) -> Result<LookupPath, GpuError> {
        keys.check_shape()?;
        self.check_hash(keys.are_hashes())?;
        let args = keys.to_args(&self.k, self.check_stream.raw())?;
        self.lookup_target().lookup(args, out, stream.raw())
    }

    /// [`GpuFilter::lookup_device_async`] on the filter's stream, waiting for the answers.
    pub fn lookup_device(
        &mut self,
        keys: DeviceKeys<'_>,
        out: LookupOutput<'_>,
    ) -> Result<LookupPath, GpuError> {
        let s = self.stream.clone();
        let path = self.lookup_device_async(keys, out, &s)?;
        s.synchronize()?;
        Ok(path)
    }

    /// The screening form, waiting: writes the indices of the keys that may be present into
    /// `list` (in no particular order) and returns how many. `list` holds one entry per key.
    pub fn positions_device(
        &mut self,
        keys: DeviceKeys<'_>,
        list: &mut DeviceBuffer<u32>,
    ) -> Result<usize, GpuError> {
        let mut count = match self.lookup.count.take() {
            Some(c) => c,
            None => DeviceBuffer::<u64>::zeros(1)?,
        };
        let r = self.lookup_device(
            keys,
            LookupOutput::Positions {
                list,
                count: &mut count,
            },
        );
        let found = r.and_then(|_| count.to_host());
        self.lookup.count = Some(count);
        Ok(found?[0] as usize)
    }

    /// The speed-of-light reference for a lookup, for benchmarks: for each key, one random
    /// 32-byte read from `buf` (whose size sets the working set), the key read and one byte
    /// written to `out`. Queued on `stream`.
    pub fn speed_of_light_async(
        buf: &DeviceBuffer<u64>,
        keys: &DeviceBuffer<u64>,
        out: &mut DeviceBuffer<u8>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        let k = layout_free_kernels(&context()?)?;
        let n = keys.len() as u64;
        let sectors = (buf.len() / 4) as u64;
        if out.len() < keys.len() || sectors == 0 {
            return Err(GpuError::OutputTooShort {
                needed: keys.len(),
                found: out.len(),
            });
        }
        if n == 0 {
            return Ok(());
        }
        let cfg = grid(n, u64::from(THREADS * KEYS_PER_THREAD))?;
        let (buf, keys, mut out) = (buf.view(), keys.view(), out.view_mut());
        let mut l = stream.raw().launch_builder(k.get(Kernel::SpeedOfLight));
        l.arg(&buf).arg(&sectors).arg(&keys).arg(&n).arg(&mut out);
        // SAFETY: `bl_speed_of_light(const uint4* buf, u64 sectors, const u64* keys, u64 n,
        // u8* out)` takes these arguments in this order. It reads the two 16-byte halves of
        // sector `s = ((key >> 32) * sectors) >> 32 < sectors`, i.e. bytes `32 s .. 32 s + 32` of
        // `buf`, which holds `4 × sectors` u64s = `32 × sectors` bytes (16-aligned: a u64
        // allocation starts 256-aligned); it reads `keys[i]` and writes `out[i]` for `i < n`,
        // and both hold at least `n` elements (checked above).
        unsafe { l.launch(cfg) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(bl_speed_of_light)", n, e))?;
        Ok(())
    }

    // ---- set operations ---------------------------------------------------------------------

    fn combine(&mut self, other: &GpuFilter, kernel: Kernel) -> Result<(), GpuError> {
        self.params.check_compatible(&other.params)?;
        let n = self.params.u32_len();
        let cfg = grid(n, u64::from(THREADS))?;
        let mut l = self.stream.raw().launch_builder(self.k.get(kernel));
        l.arg(&mut self.words).arg(&other.words).arg(&n);
        // SAFETY: `bl_union` / `bl_intersect(u32* a, const u32* b, u64 n)` take these arguments
        // in this order and touch `a[i]`, `b[i]` for `i < n` only. Both filters' buffers hold
        // `u32_len()` = `n` words of their parameters, which are the same (checked above), and
        // `&mut self` with `&other` makes them distinct buffers.
        unsafe { l.launch(cfg) }
            .map_err(|e| GpuError::cuda("cuLaunchKernel(set operation)", n * 4, e))?;
        self.keys = None;
        self.stream.synchronize()
    }

    /// ORs `other` into `self` on the device: the filter of the union of both key sets.
    pub fn union_with(&mut self, other: &GpuFilter) -> Result<(), GpuError> {
        self.combine(other, Kernel::Union)
    }

    /// ANDs `other` into `self` on the device (contains every key of the intersection).
    pub fn intersect_with(&mut self, other: &GpuFilter) -> Result<(), GpuError> {
        self.combine(other, Kernel::Intersect)
    }

    // ---- host keys ----------------------------------------------------------------------------

    /// Inserts keys from host memory, streamed through pinned buffers in chunks.
    pub fn insert(&mut self, keys: Keys<'_>) -> Result<(), GpuError> {
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        let kernel = self.insert_kernel.direct();
        let (pipeline, words) = self.pipeline_and_words();
        pipeline.run_host(keys, HostOp::Insert { words, kernel })?;
        self.count(keys.len());
        Ok(())
    }

    /// Looks up keys from host memory: `out[i]` = 1 if key `i` may be present, else 0.
    pub fn contains(&self, keys: Keys<'_>, out: &mut [u8]) -> Result<(), GpuError> {
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        if out.len() < keys.len() {
            return Err(GpuError::OutputTooShort {
                needed: keys.len(),
                found: out.len(),
            });
        }
        let words = &self.words;
        self.pipeline()
            .run_host(keys, HostOp::Contains { words, out })
    }

    /// Looks up keys from host memory into a packed bitmap: bit `i % 64` of `out[i / 64]`.
    /// Bits past the last key are cleared.
    pub fn contains_bitmap(&self, keys: Keys<'_>, out: &mut [u64]) -> Result<(), GpuError> {
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        let needed = keys.len().div_ceil(64);
        if out.len() < needed {
            return Err(GpuError::OutputTooShort {
                needed,
                found: out.len(),
            });
        }
        let words = &self.words;
        self.pipeline()
            .run_host(keys, HostOp::Bitmap { words, out })
    }

    /// Inserts u64 keys already in pinned memory: chunks are copied straight from `keys`, with
    /// copies and kernels overlapped on several streams.
    pub fn insert_pinned(&mut self, keys: &PinnedBuffer<u64>) -> Result<(), GpuError> {
        self.check_hash(false)?;
        let kernel = self.insert_kernel.direct();
        let (pipeline, words) = self.pipeline_and_words();
        pipeline.run_pinned(keys, PinnedOp::Insert { words, kernel })?;
        self.count(keys.len());
        Ok(())
    }

    /// Looks up u64 keys in pinned memory into a pinned result buffer (one byte per key).
    pub fn contains_pinned(
        &self,
        keys: &PinnedBuffer<u64>,
        out: &mut PinnedBuffer<u8>,
    ) -> Result<(), GpuError> {
        self.check_hash(false)?;
        if out.len() < keys.len() {
            return Err(GpuError::OutputTooShort {
                needed: keys.len(),
                found: out.len(),
            });
        }
        let words = &self.words;
        self.pipeline()
            .run_pinned(keys, PinnedOp::Contains { words, out })
    }

    /// The host pipeline of this filter, for lookups.
    fn pipeline(&self) -> Pipeline<'_> {
        Pipeline {
            ctx: &self.ctx,
            kernels: &self.k,
            params: &self.params,
            after: self.stream.raw(),
            chunk_keys: self.chunk_keys,
        }
    }

    /// The host pipeline of this filter and its bits, writable, for inserts.
    fn pipeline_and_words(&mut self) -> (Pipeline<'_>, &mut CudaSlice<u32>) {
        let pipeline = Pipeline {
            ctx: &self.ctx,
            kernels: &self.k,
            params: &self.params,
            after: self.stream.raw(),
            chunk_keys: self.chunk_keys,
        };
        (pipeline, &mut self.words)
    }
}
