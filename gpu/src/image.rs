//! [`GpuImage`]: the bits a filter's static lookups read, on the device, and every lookup path.
//!
//! Every filter kind keeps a static image: a static filter's words, a counting or spatial
//! filter's projection (bit set iff its cell is positive), a sliding window's generations
//! (interleaved by block, each probed). So one type holds the image, the filter's streams,
//! kernels and partitioning settings, and the lookups (device keys into bytes, a bitmap or
//! positions, directly or partitioned; host keys through the pipeline), and every filter type
//! dereferences to it: [`GpuFilter`](crate::GpuFilter), [`GpuCellFilter`](crate::GpuCellFilter)
//! (and through it [`GpuCountingFilter`](crate::GpuCountingFilter) and
//! [`GpuSpatialFilter`](crate::GpuSpatialFilter)) and [`GpuWindowFilter`](crate::GpuWindowFilter).
//! The inserts of the static image (direct, bulk reduce, partitioned; from device or host keys)
//! live here too, for a static filter and a window's generations alike.

use std::sync::Arc;

use bloomlanes_core::{HashId, Keys, Params};
use cudarc::driver::{CudaContext, CudaSlice};

use crate::buffer::{alloc_zeros, check_free};
use crate::error::output_holds;
use crate::launch::{launch_keys, Geometry, KeyArgs, Pass};
use crate::lookup::{LookupState, LookupTarget};
use crate::module::{kernels, Kernels};
use crate::partition::Partitioner;
use crate::pipeline::{HostOp, PinnedOp, Pipeline, DEFAULT_CHUNK_KEYS};
use crate::{
    context, DeviceBuffer, DeviceKeys, GpuError, GpuStream, InsertKernel, LookupAuto, LookupKernel,
    LookupOutput, LookupPath, PinnedBuffer,
};

/// Makes `$ty` a filter type over its field `$inner`: `Deref` and `DerefMut` to it (so its
/// lookups and settings are the wrapper's), and a `Debug` that shows the parameters and the
/// listed fields.
macro_rules! filter_wrapper {
    ($ty:ident, $inner:ident: $target:ty, [$($shown:ident),*]) => {
        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("params", self.params())
                    $(.field(stringify!($shown), &self.$shown))*
                    .finish_non_exhaustive()
            }
        }

        impl std::ops::Deref for $ty {
            type Target = $target;
            fn deref(&self) -> &$target {
                &self.$inner
            }
        }

        impl std::ops::DerefMut for $ty {
            fn deref_mut(&mut self) -> &mut $target {
                &mut self.$inner
            }
        }
    };
}
pub(crate) use filter_wrapper;

/// The device lookups into bytes and into a bitmap, from one definition: checks the keys, then
/// launches the static lookup kernel of the image's geometry into `out`.
macro_rules! device_lookups {
    ($($(#[$doc:meta])* $name:ident($elem:ty) => $op:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(
            &self,
            keys: DeviceKeys<'_>,
            out: &mut DeviceBuffer<$elem>,
            stream: &GpuStream,
        ) -> Result<(), GpuError> {
            let args = self.device_args(keys)?;
            let pass = Pass::$op {
                words: &self.words,
                out: out.view_mut(),
            };
            launch_keys(&self.k, &self.params, self.geometry(0), stream.raw(), args, pass)
        }
    )*};
}

/// A filter's static image in GPU memory and its lookups (see the module documentation): what
/// every filter type dereferences to.
pub struct GpuImage {
    pub(crate) ctx: Arc<CudaContext>,
    /// What the synchronous calls run on.
    pub(crate) stream: GpuStream,
    /// Where device string offsets are checked before a launch uses them.
    pub(crate) check_stream: GpuStream,
    pub(crate) k: Arc<Kernels>,
    /// The bits: `gens × params.u32_len()` words.
    pub(crate) words: CudaSlice<u32>,
    pub(crate) params: Params,
    /// Generations of the image (1 but for a window).
    pub(crate) gens: u32,
    /// Bytes a partitioned update sweeps: the words, and a cell filter's cells.
    pub(crate) footprint: u64,
    pub(crate) chunk_keys: usize,
    pub(crate) insert_kernel: InsertKernel,
    pub(crate) partitioner: Partitioner,
    pub(crate) lookup: LookupState,
}

impl std::fmt::Debug for GpuImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuImage")
            .field("params", &self.params)
            .field("gens", &self.gens)
            .finish_non_exhaustive()
    }
}

/// Converts `len` elements into a `usize` length for an allocation.
pub(crate) fn alloc_len(what: &'static str, len: u64, elem_bytes: u64) -> Result<usize, GpuError> {
    usize::try_from(len).map_err(|_| GpuError::TooManyElements {
        what,
        len,
        elem_bytes,
    })
}

impl GpuImage {
    /// An empty image of `gens` generations for `params` on device 0, refused up front if the
    /// device cannot hold it and `extra_bytes` more (a cell filter's cells).
    pub(crate) fn new(params: Params, gens: u32, extra_bytes: u64) -> Result<GpuImage, GpuError> {
        let ctx = context()?;
        let len = u64::from(gens.max(1)) * params.u32_len();
        // Refuse before compiling anything: the clear error for a filter too big for the device.
        check_free(&ctx, "filter bits", len * 4 + extra_bytes)?;
        let k = kernels(&ctx, params.layout)?;
        let stream = GpuStream::new()?;
        let words = alloc_zeros::<u32>(
            stream.raw(),
            "filter bits",
            alloc_len("filter bits", len, 4)?,
        )?;
        stream.synchronize()?;
        Ok(GpuImage {
            partitioner: Partitioner::new(&ctx),
            ctx,
            stream,
            check_stream: GpuStream::new()?,
            k,
            words,
            params,
            gens: gens.max(1),
            footprint: len * 4 + extra_bytes,
            chunk_keys: DEFAULT_CHUNK_KEYS,
            insert_kernel: InsertKernel::Auto,
            lookup: LookupState::default(),
        })
    }

    /// Copies `words` (the image's words, every generation) to the device and waits.
    pub(crate) fn upload_words(&mut self, words: &[u32]) -> Result<(), GpuError> {
        let bytes = std::mem::size_of_val(words) as u64;
        self.stream
            .raw()
            .memcpy_htod(words, &mut self.words)
            .map_err(|e| GpuError::cuda("cuMemcpyHtoD", bytes, e))?;
        self.stream.synchronize()
    }

    /// Copies the image's words (every generation) into `out` (at least
    /// [`byte_len`](Self::byte_len) / 4 words; e.g. the words of the host filter it was uploaded
    /// from) and waits, without allocating.
    pub fn download_words(&self, out: &mut [u32]) -> Result<(), GpuError> {
        let n = self.words.len();
        output_holds(n, out.len())?;
        self.stream
            .raw()
            .memcpy_dtoh(&self.words, &mut out[..n])
            .map_err(|e| GpuError::cuda("cuMemcpyDtoH", self.byte_len(), e))?;
        self.stream.synchronize()
    }

    /// Zeroes the image's words, queued on the filter's stream.
    pub(crate) fn zero_words(&mut self) -> Result<(), GpuError> {
        let bytes = self.byte_len();
        self.stream
            .raw()
            .memset_zeros(&mut self.words)
            .map_err(|e| GpuError::cuda("cuMemsetD8Async", bytes, e))
    }

    bloomlanes_core::params_accessors!();
    /// Size of the image in bytes (every generation of a window).
    pub fn byte_len(&self) -> u64 {
        self.words.len() as u64 * 4
    }
    /// The filter's own stream (what the synchronous calls use).
    pub fn stream(&self) -> &GpuStream {
        &self.stream
    }
    /// Keys per chunk when streaming from host memory (rounded up to a multiple of 64).
    pub fn set_chunk_keys(&mut self, keys: usize) {
        self.chunk_keys = keys.max(64).next_multiple_of(64);
    }

    /// Chooses how inserts (and a cell filter's updates) of device-resident u64 keys and hashes
    /// run (results are identical); the default is [`InsertKernel::Auto`]. For a cell filter,
    /// [`InsertKernel::Atomic`] and [`InsertKernel::BulkReduce`] both mean the direct
    /// compare-and-swap kernels.
    pub fn set_insert_kernel(&mut self, kernel: InsertKernel) {
        self.insert_kernel = kernel;
    }

    /// The choice made with [`GpuImage::set_insert_kernel`].
    pub fn insert_kernel(&self) -> InsertKernel {
        self.insert_kernel
    }

    /// Sets the partitioned paths' target partition size in bytes (0 = automatic: a third of the
    /// device's L2 cache, at most 24 MiB). At most 2048 partitions are used, so partitions of
    /// very large filters may be bigger.
    pub fn set_partition_bytes(&mut self, bytes: u64) {
        self.partitioner.set_partition_bytes(bytes);
    }

    /// The partitioned paths' target partition size in bytes.
    pub fn partition_bytes(&self) -> u64 {
        self.partitioner.partition_bytes()
    }

    /// Number of partitions a partitioned insert splits this filter into (1 to 2048), by the
    /// bytes it sweeps (the image, and a cell filter's cells).
    pub fn partitions(&self) -> u32 {
        self.partitioner.partitions_for_bytes(self.footprint)
    }

    /// Caps the partitioning scratch of partitioned inserts and lookups at `keys` keys (8 bytes
    /// each, 12 with the positions of a lookup; at least 64). By default it is sized to the batch
    /// (up to 2^32 − 1 keys), so the filter is swept once per batch; larger batches than the cap
    /// go through in chunks of at most this many keys, one sweep each. A buffer already allocated
    /// larger is kept (see `release_scratch`).
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

    /// Refuses raw keys for a filter of caller-supplied hashes.
    pub(crate) fn check_hash(&self, hashes: bool) -> Result<(), GpuError> {
        if !hashes && self.params.hash != HashId::Xxh64 {
            return Err(GpuError::HashMismatch(
                "this filter holds caller-supplied hashes; pass Keys::Hashes",
            ));
        }
        Ok(())
    }

    /// Checks device keys (shape, hash kind, string offsets on the device) and returns them as
    /// kernel arguments.
    pub(crate) fn device_args<'a>(&self, keys: DeviceKeys<'a>) -> Result<KeyArgs<'a>, GpuError> {
        keys.check_shape()?;
        self.check_hash(keys.are_hashes())?;
        keys.to_args(&self.k, self.check_stream.raw())
    }

    /// The geometry of inserts into generation `gen` (0 for a static image).
    pub(crate) fn geometry(&self, gen: u32) -> Geometry {
        Geometry {
            gens: self.gens,
            gen,
        }
    }

    // ---- lookups ------------------------------------------------------------------------------

    device_lookups! {
        /// Looks up device-resident keys into `out` (one byte per key, 1 = maybe present),
        /// queued on `stream`.
        contains_device_async(u8) => Contains;
        /// Looks up device-resident keys into a packed bitmap (bit `i % 64` of word `i / 64`),
        /// queued on `stream`. Bits past the last key in its word are zero.
        contains_bitmap_device_async(u64) => Bitmap;
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

    /// Chooses how [`GpuImage::lookup_device_async`] probes the filter (answers are identical);
    /// the default is [`LookupKernel::Auto`].
    pub fn set_lookup_kernel(&mut self, kernel: LookupKernel) {
        self.lookup.kernel = kernel;
    }

    /// The choice made with [`GpuImage::set_lookup_kernel`].
    pub fn lookup_kernel(&self) -> LookupKernel {
        self.lookup.kernel
    }

    /// Sets the rule by which [`LookupKernel::Auto`] partitions lookups (over the image's bytes).
    pub fn set_lookup_auto(&mut self, rule: LookupAuto) {
        self.lookup.auto = rule;
    }

    /// The rule by which [`LookupKernel::Auto`] partitions lookups.
    pub fn lookup_auto(&self) -> LookupAuto {
        self.lookup.auto
    }

    /// Whether a lookup of `keys` device-resident keys through [`GpuImage::lookup_device_async`]
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
        let args = self.device_args(keys)?;
        let mut target = LookupTarget {
            kernels: &self.k,
            params: &self.params,
            geo: Geometry {
                gens: self.gens,
                gen: 0,
            },
            words: &self.words,
            partitioner: &mut self.partitioner,
            state: &mut self.lookup,
        };
        target.lookup(args, out, stream.raw())
    }

    /// [`GpuImage::lookup_device_async`] on the filter's stream, waiting for the answers.
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

    /// Looks up keys from host memory: `out[i]` = 1 if key `i` may be present, else 0.
    pub fn contains(&self, keys: Keys<'_>, out: &mut [u8]) -> Result<(), GpuError> {
        let (needed, found) = (keys.len(), out.len());
        let words = &self.words;
        self.host_lookup(keys, needed, found, HostOp::Contains { words, out })
    }

    /// Looks up keys from host memory into a packed bitmap: bit `i % 64` of `out[i / 64]`.
    /// Bits past the last key are cleared.
    pub fn contains_bitmap(&self, keys: Keys<'_>, out: &mut [u64]) -> Result<(), GpuError> {
        let (needed, found) = (keys.len().div_ceil(64), out.len());
        let words = &self.words;
        self.host_lookup(keys, needed, found, HostOp::Bitmap { words, out })
    }

    /// Runs the lookup `op` of host `keys` through the pipeline, after checking the hash kind
    /// and that its output holds the `needed` answers (it holds `found`).
    fn host_lookup(
        &self,
        keys: Keys<'_>,
        needed: usize,
        found: usize,
        op: HostOp<'_>,
    ) -> Result<(), GpuError> {
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        if found < needed {
            return Err(GpuError::OutputTooShort { needed, found });
        }
        self.pipeline(0).run_host(keys, op)
    }

    /// Looks up u64 keys in pinned memory into a pinned result buffer (one byte per key).
    pub fn contains_pinned(
        &self,
        keys: &PinnedBuffer<u64>,
        out: &mut PinnedBuffer<u8>,
    ) -> Result<(), GpuError> {
        self.check_hash(false)?;
        output_holds(keys.len(), out.len())?;
        let words = &self.words;
        self.pipeline(0)
            .run_pinned(keys, PinnedOp::Contains { words, out })
    }

    /// The host pipeline of this image (inserts into generation `gen`), for lookups.
    fn pipeline(&self, gen: u32) -> Pipeline<'_> {
        Pipeline {
            ctx: &self.ctx,
            kernels: &self.k,
            params: &self.params,
            geo: self.geometry(gen),
            after: self.stream.raw(),
            chunk_keys: self.chunk_keys,
        }
    }
}
