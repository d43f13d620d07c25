//! [`GpuCountingFilter`]: a counting filter (deletions) in GPU memory, bit-identical to
//! [`bloomlanes_core::CountingFilter`] (image and counters).
//!
//! Storage is core's: the projection image (a static image, bit set iff its counter is positive)
//! and one 4- or 8-bit counter per image bit, packed into u32 words (`docs/FORMAT.md` §9).
//! Inserts add 1 to each of the key's L counters with a compare-and-swap loop on the counter's
//! 32-bit word (a counter at the maximum sticks there) and set the key's image bits; inserts
//! commute (a counter ends at `min(max, v + increments)`), so any order gives the core's result.
//! Deletes are refused unless all the key's counters are positive and give exactly the core's
//! key-by-key result in input order (see [`crate::counting_delete`] for how). Lookups are the
//! static filter's lookups on the image.
//!
//! Inserts and deletes of device-resident batches into filters whose image and counters together
//! are larger than half the L2 cache are partitioned under [`InsertKernel::Auto`] (as the static
//! filter's inserts). A partitioned batch is then applied slice by slice in shared memory (one
//! CTA copies a slice of whole blocks in, updates its counters and image with shared-memory
//! compare-and-swap loops, and copies it back; see `counting/slices.rs`), or, with
//! [`GpuCountingFilter::set_shared_slices`]`(false)`, with the compare-and-swap loops on the
//! L2-resident counter words. On an H100 at 2 GiB of counters and 2^28 keys the slices are 1.9×
//! (4-bit) and 2.1× (8-bit) faster for inserts and 1.4–1.5× for deletes (BENCHMARKS.md).
//!
//! # Memory traffic per key (insert)
//!
//! Direct: the key (8 bytes) and, per lane, one counter word read and CAS'd and one image word
//! OR'd, in one block's counters (for 8x32 with 4-bit counters a 128-byte line; random): a
//! read-modify-write of ~160 bytes of random lines per key from DRAM at 2 GiB of counters.
//! Partitioned: 8 + 16 bytes to group, 8 to read the grouped hash, and the image and counters
//! read and written once per sweep: `2 × (F_image + F_counters) / m` bytes per key for a batch of
//! `m` keys. At 2 GiB of 4-bit counters (512 MiB image) and `m = 2^28`: 32 + 2 × 2.5 GiB / 2^28
//! = 52 bytes per key, a bound of 3.35 TB/s ÷ 52 B ≈ 64 G ops/s on the H100, above the 10 G ops/s
//! target of issue #14 (which therefore stands as stated). The slice kernels add the reading of
//! each grouped hash by the ≈ 14 slices of its partition, from L2; they are bound by the
//! shared-memory atomics and the grouping, not by DRAM (8.6 G/s measured, `counting/slices.rs`).

use std::ops::Range;
use std::sync::Arc;

use bloomlanes_core::counting::counter_words;
use bloomlanes_core::{CounterBits, CountingFilter, Filter, FilterKind, HashId, Keys, Params};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, CudaViewMut};

mod lookups;
mod slices;

pub(crate) use slices::Sliced;
use slices::{Bounds, SliceBudget};

use crate::buffer::{alloc_zeros, check_free};
use crate::counting_delete::{
    delete_in_order, status_bytes, status_scatter, CountingDev, DeleteReport, DeleteWork,
    DeviceSteps,
};
use crate::hashed::{HashScratch, Hashed, MODE_HASHES};
use crate::launch::KeyArgs;
use crate::lookup::LookupState;
use crate::module::{kernels, Kernels};
use crate::partition::Partitioner;
use crate::pipeline::{plan, DEFAULT_CHUNK_KEYS};
use crate::stage::Stager;
use crate::{context, DeviceBuffer, DeviceKeys, GpuError, GpuStream, InsertKernel};

/// Keys per chunk of an unpartitioned device delete (one status word each).
const DIRECT_DELETE_CHUNK_KEYS: usize = 1 << 26;

/// A counting filter in GPU memory: inserts, deletes and lookups of batches, bit-identical to
/// [`CountingFilter`].
pub struct GpuCountingFilter {
    ctx: Arc<CudaContext>,
    stream: GpuStream,
    /// Where device string offsets are checked before a launch uses them.
    check_stream: GpuStream,
    k: Arc<Kernels>,
    /// The projection image: `params.u32_len()` words.
    image: CudaSlice<u32>,
    /// The counters: `counter_words(params, bits)` words.
    counters: CudaSlice<u32>,
    params: Params,
    bits: CounterBits,
    keys: Option<u64>,
    chunk_keys: usize,
    insert_kernel: InsertKernel,
    partitioner: Partitioner,
    hashes: HashScratch,
    stager: Stager,
    work: DeleteWork,
    lookup: LookupState,
    /// Per-key results of one chunk of a host-memory delete.
    out_chunk: Option<CudaSlice<u8>>,
    /// Whether partitioned batches use the shared-memory slice kernels (else the CAS kernels).
    shared_slices: bool,
    /// The device's shared memory, as the slice kernels size their slices by it.
    slice_budget: SliceBudget,
    /// The partition bounds of the slice kernels.
    bounds: Bounds,
}

impl std::fmt::Debug for GpuCountingFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuCountingFilter")
            .field("params", &self.params)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

/// Converts `len` words into a `usize` length for an allocation.
fn words_len(what: &'static str, len: u64) -> Result<usize, GpuError> {
    usize::try_from(len).map_err(|_| GpuError::TooManyElements {
        what,
        len,
        elem_bytes: 4,
    })
}

impl GpuCountingFilter {
    /// An empty counting filter with these parameters (their kind must be
    /// [`FilterKind::Counting`]) on device 0.
    pub fn new(params: Params) -> Result<GpuCountingFilter, GpuError> {
        let FilterKind::Counting { counter_bits: bits } = params.kind else {
            return Err(GpuError::WrongKind {
                expected: "counting",
                found: params.kind.name(),
            });
        };
        // As the core does: at least one block.
        let mut params = params;
        params.blocks = params.blocks.max(1);
        let ctx = context()?;
        let image_len = words_len("counting image", params.u32_len())?;
        let counter_len = words_len("counters", counter_words(&params, bits))?;
        check_free(
            &ctx,
            "counting filter",
            params.byte_len() + counter_len as u64 * 4,
        )?;
        let k = kernels(&ctx, params.layout)?;
        let stream = GpuStream::new()?;
        let image = alloc_zeros::<u32>(stream.raw(), "counting image", image_len)?;
        let counters = alloc_zeros::<u32>(stream.raw(), "counters", counter_len)?;
        stream.synchronize()?;
        Ok(GpuCountingFilter {
            partitioner: Partitioner::new(&ctx),
            slice_budget: SliceBudget::new(&ctx),
            shared_slices: true,
            bounds: Bounds::default(),
            ctx,
            stream,
            check_stream: GpuStream::new()?,
            k,
            image,
            counters,
            params,
            bits,
            keys: Some(0),
            chunk_keys: DEFAULT_CHUNK_KEYS,
            insert_kernel: InsertKernel::Auto,
            hashes: HashScratch::default(),
            stager: Stager::default(),
            work: DeleteWork::default(),
            lookup: LookupState::default(),
            out_chunk: None,
        })
    }

    /// A device copy of a host counting filter (a stable filter is refused: its inserts differ).
    pub fn upload(filter: &CountingFilter) -> Result<GpuCountingFilter, GpuError> {
        let mut g = GpuCountingFilter::new(*filter.params())?;
        let copy = |e| GpuError::cuda("cuMemcpyHtoD", g.params.byte_len(), e);
        let s = g.stream.raw().clone();
        s.memcpy_htod(filter.image_words(), &mut g.image)
            .map_err(copy)?;
        s.memcpy_htod(filter.counter_words(), &mut g.counters)
            .map_err(copy)?;
        g.stream.synchronize()?;
        g.keys = filter.key_count();
        Ok(g)
    }

    /// The filter copied back to the host: equal to the core's filter after the same operations.
    pub fn download(&self) -> Result<CountingFilter, GpuError> {
        let mut f = CountingFilter::new(self.params).expect("counting parameters");
        {
            let mut view = f.as_view_mut();
            let (image, counters) = view.parts_mut();
            let s = self.stream.raw();
            let copy = |e| GpuError::cuda("cuMemcpyDtoH", self.params.byte_len(), e);
            s.memcpy_dtoh(&self.image, image).map_err(copy)?;
            s.memcpy_dtoh(&self.counters, counters).map_err(copy)?;
            self.stream.synchronize()?;
        }
        f.set_key_count(self.keys);
        Ok(f)
    }

    /// The projection copied back to the host as a static filter (bit set iff its counter is
    /// positive): what exports to the static format, Parquet and the HDL banks.
    pub fn download_projection(&self) -> Result<Filter, GpuError> {
        let mut f = Filter::new(self.params.with_kind(FilterKind::Static));
        self.stream
            .raw()
            .memcpy_dtoh(&self.image, f.words_mut())
            .map_err(|e| GpuError::cuda("cuMemcpyDtoH", self.params.byte_len(), e))?;
        self.stream.synchronize()?;
        f.set_key_count(self.keys);
        Ok(f)
    }

    /// The parameters (kind included).
    pub fn params(&self) -> &Params {
        &self.params
    }
    /// The counter width.
    pub fn counter_bits(&self) -> CounterBits {
        self.bits
    }
    /// Keys inserted minus keys deleted, if known.
    pub fn key_count(&self) -> Option<u64> {
        self.keys
    }
    /// Bytes of the image.
    pub fn image_bytes(&self) -> u64 {
        self.params.byte_len()
    }
    /// Bytes of the counters.
    pub fn counter_bytes(&self) -> u64 {
        counter_words(&self.params, self.bits) * 4
    }
    /// The filter's own stream (what the synchronous calls use).
    pub fn stream(&self) -> &GpuStream {
        &self.stream
    }
    /// Keys per chunk for host-memory batches (rounded up to a multiple of 64).
    pub fn set_chunk_keys(&mut self, keys: usize) {
        self.chunk_keys = keys.max(64).next_multiple_of(64);
    }
    /// Chooses between direct and partitioned inserts and deletes of device-resident batches:
    /// [`InsertKernel::Partitioned`] always partitions, [`InsertKernel::Atomic`] and
    /// [`InsertKernel::BulkReduce`] never (both mean the CAS kernels here), and
    /// [`InsertKernel::Auto`] (the default) partitions batches of at least 2^22 keys, at least
    /// one per 4 blocks, when the image and counters together exceed half the L2 cache, and
    /// falls back to the direct kernels if the scratch cannot be allocated. Results are identical.
    pub fn set_insert_kernel(&mut self, kernel: InsertKernel) {
        self.insert_kernel = kernel;
    }
    /// Whether partitioned inserts and deletes update the counters in shared memory, one CTA per
    /// slice of whole blocks (`true`, the default: several times faster), or with
    /// compare-and-swap loops on the L2-resident counter words (`false`). Results are identical.
    /// Deletes that must be split (see [`DeleteReport::retries`](crate::DeleteReport::retries))
    /// redo their halves with the compare-and-swap kernels in input order either way.
    pub fn set_shared_slices(&mut self, on: bool) {
        self.shared_slices = on;
    }
    /// The choice made with [`GpuCountingFilter::set_shared_slices`].
    pub fn shared_slices(&self) -> bool {
        self.shared_slices
    }
    /// The choice made with [`GpuCountingFilter::set_insert_kernel`].
    pub fn insert_kernel(&self) -> InsertKernel {
        self.insert_kernel
    }
    /// Sets the target partition size in bytes of image and counters (0 = automatic: a third of
    /// L2).
    pub fn set_partition_bytes(&mut self, bytes: u64) {
        self.partitioner.set_partition_bytes(bytes);
    }
    /// Partitions of this filter's image and counters (1 to 2048).
    pub fn partitions(&self) -> u32 {
        self.partitioner.partitions_for_bytes(self.footprint())
    }
    /// Partitions a partitioned insert or delete groups its batch into: [`partitions`]
    /// (`GpuCountingFilter::partitions`) for the compare-and-swap kernels; with shared-memory
    /// slices at least one per slice, up to 2048, so that each slice scans few hashes.
    ///
    /// [`partitions`]: GpuCountingFilter::partitions
    pub fn batch_partitions(&self) -> u32 {
        self.slice_plan(true).map_or(self.partitions(), |p| p.parts)
    }
    /// Caps the partitioning scratch at `keys` keys (at least 64; by default a batch's size).
    pub fn set_scratch_keys(&mut self, keys: usize) {
        self.partitioner.set_scratch_keys(keys);
    }
    /// Frees the scratch buffers (allocated again when needed).
    pub fn release_scratch(&mut self) {
        self.partitioner.release_scratch();
        self.hashes.release();
        self.stager.release();
        self.work.release();
        self.lookup.release();
        self.out_chunk = None;
        self.bounds.release();
    }
    /// Whether an insert or delete of `keys` device-resident keys is partitioned.
    pub fn partitioned_for(&self, keys: usize) -> bool {
        self.partitioner.wanted_for_bytes(
            self.insert_kernel,
            self.footprint(),
            self.params.blocks,
            keys,
        )
    }

    /// The slices of a partitioned batch's shared-memory kernels, if it uses them.
    fn slice_plan(&self, partitioned: bool) -> Option<slices::SlicePlan> {
        if !partitioned || !self.shared_slices {
            return None;
        }
        self.slice_budget
            .plan(&self.params, self.bits, self.partitions())
    }

    /// Bytes of image and counters.
    fn footprint(&self) -> u64 {
        self.image_bytes() + self.counter_bytes()
    }

    /// Zeroes image and counters (the key count becomes 0).
    pub fn clear(&mut self) -> Result<(), GpuError> {
        let s = self.stream.raw();
        let err = |e| GpuError::cuda("cuMemsetD8Async", 0, e);
        s.memset_zeros(&mut self.image).map_err(err)?;
        s.memset_zeros(&mut self.counters).map_err(err)?;
        self.keys = Some(0);
        self.stream.synchronize()
    }

    fn check_hash(&self, hashes: bool) -> Result<(), GpuError> {
        if !hashes && self.params.hash != HashId::Xxh64 {
            return Err(GpuError::HashMismatch(
                "this filter holds caller-supplied hashes; pass Keys::Hashes",
            ));
        }
        Ok(())
    }

    // ---- inserts ------------------------------------------------------------------------------

    /// Queues the insert of `args` on `stream`.
    fn insert_args(&mut self, args: KeyArgs<'_>, stream: &Arc<CudaStream>) -> Result<(), GpuError> {
        let n = args.len();
        let partitioned = self.partitioned_for(n);
        let plan = self.slice_plan(partitioned);
        let parts = plan.map_or(self.partitions(), |p| p.parts);
        let hashed = self
            .hashes
            .hashed(&self.k, self.params.seed, stream, args)?;
        let mut dev = CountingDev {
            kernels: &self.k,
            params: &self.params,
            bits: self.bits,
            image: &mut self.image,
            counters: &mut self.counters,
        };
        if partitioned {
            let mut sliced = match plan {
                Some(plan) => Some(Sliced {
                    plan,
                    bounds: self.bounds.get(stream)?,
                }),
                None => None,
            };
            let r = self.partitioner.for_each_group(
                &self.k,
                self.params.seed,
                parts,
                &hashed,
                false,
                stream,
                |_, grouped, _| {
                    let keys = Hashed {
                        keys: grouped,
                        mode: MODE_HASHES,
                    };
                    match sliced.as_mut() {
                        Some(s) => dev.insert_sliced(&keys, s, stream),
                        None => dev.insert(&keys, stream),
                    }
                },
            );
            match r {
                // Nothing was queued (the scratch is allocated first): insert directly.
                Err(GpuError::OutOfMemory { .. }) if self.insert_kernel == InsertKernel::Auto => {}
                other => return other,
            }
        }
        dev.insert(&hashed, stream)
    }

    /// Inserts device-resident keys, queued on `stream` (string offsets are checked on the
    /// device first, which waits).
    pub fn insert_device_async(
        &mut self,
        keys: DeviceKeys<'_>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        keys.check_shape()?;
        self.check_hash(matches!(keys, DeviceKeys::Hashes(_)))?;
        let args = keys.to_args(&self.k, self.check_stream.raw())?;
        let n = keys.len() as u64;
        self.insert_args(args, stream.raw())?;
        self.keys = self.keys.map(|k| k.saturating_add(n));
        Ok(())
    }

    /// Inserts device-resident keys and waits.
    pub fn insert_device(&mut self, keys: DeviceKeys<'_>) -> Result<(), GpuError> {
        let s = self.stream.clone();
        self.insert_device_async(keys, &s)?;
        s.synchronize()
    }

    /// Inserts keys from host memory (copied to the device chunk by chunk) and waits.
    pub fn insert(&mut self, keys: Keys<'_>) -> Result<(), GpuError> {
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        let stream = self.stream.raw().clone();
        let mut stager = std::mem::take(&mut self.stager);
        let result = (|| -> Result<(), GpuError> {
            for r in plan(&keys, self.chunk_keys) {
                let args = stager.stage(&stream, &keys, r)?;
                self.insert_args(args, &stream)?;
            }
            Ok(())
        })();
        self.stager = stager;
        result?;
        self.keys = self.keys.map(|k| k.saturating_add(keys.len() as u64));
        self.stream.synchronize()
    }

    // ---- deletes ------------------------------------------------------------------------------

    /// Deletes `args` (see [`crate::counting_delete`]), writing per-key results into `out`
    /// (at least `args.len()` bytes) if given; runs on `stream` and waits.
    fn remove_args(
        &mut self,
        args: KeyArgs<'_>,
        mut out: Option<CudaViewMut<'_, u8>>,
        stream: &Arc<CudaStream>,
    ) -> Result<DeleteReport, GpuError> {
        let n = args.len();
        if let Some(o) = &out {
            if o.len() < n {
                return Err(GpuError::OutputTooShort {
                    needed: n,
                    found: o.len(),
                });
            }
        }
        let mut partitioned = self.partitioned_for(n);
        let plan = self.slice_plan(partitioned);
        let parts = plan.map_or(self.partitions(), |p| p.parts);
        let mut sliced = match plan {
            Some(plan) => Some(Sliced {
                plan,
                bounds: self.bounds.get(stream)?,
            }),
            None => None,
        };
        let direct_chunk = self
            .partitioner
            .scratch_keys()
            .min(DIRECT_DELETE_CHUNK_KEYS);
        let hashed = self
            .hashes
            .hashed(&self.k, self.params.seed, stream, args)?;
        let kernels: &Kernels = &self.k;
        let mut dev = CountingDev {
            kernels,
            params: &self.params,
            bits: self.bits,
            image: &mut self.image,
            counters: &mut self.counters,
        };
        let work = &mut self.work;
        // Every chunk finds its status buffer allocated (a partitioned chunk holds at most
        // min(n, scratch cap) keys, a direct one min(n, direct_chunk)): nothing allocates once a
        // chunk has started, so an out-of-memory error from the partitioned path means that
        // nothing was deleted yet (checked with `started` too) and the direct path may run.
        if partitioned {
            match work.buffers(stream, n.min(self.partitioner.scratch_keys())) {
                Ok(_) => {}
                Err(GpuError::OutOfMemory { .. }) if self.insert_kernel == InsertKernel::Auto => {
                    partitioned = false
                }
                Err(e) => return Err(e),
            }
        }
        work.buffers(stream, n.min(direct_chunk))?;
        let want_positions = out.is_some();
        let started = std::cell::Cell::new(false);
        let mut report = DeleteReport::default();
        // One chunk `r` of the batch: a parallel attempt over its keys (grouped by partition if
        // `grouped` holds the grouped hashes and, when results are asked for, their positions),
        // and if a counter underflowed, the exact undo and the in-order fallback.
        let mut chunk =
            |r: Range<usize>,
             grouped: Option<(Hashed<'_>, Option<cudarc::driver::CudaView<'_, u32>>)>|
             -> Result<(), GpuError> {
                started.set(true);
                let len = r.len();
                let (status, stats) = work.buffers(stream, len)?;
                let keys = hashed.slice(r.clone());
                let first = match &grouped {
                    Some((g, _)) => g.slice(0..len),
                    None => keys.slice(0..len),
                };
                let slices = match &grouped {
                    Some(_) => sliced.as_mut(),
                    None => None,
                };
                let a = dev.attempt(&first, &mut status.slice_mut(..len), stats, slices, stream)?;
                if a.underflows == 0 {
                    report.deleted += a.accepted;
                    if let Some(out) = out.as_mut() {
                        let mut o = out.slice_mut(r);
                        match &grouped {
                            Some((_, Some(pos))) => {
                                status_scatter(kernels, &status.slice(..len), pos, &mut o, stream)?
                            }
                            None => status_bytes(kernels, &status.slice(..len), &mut o, stream)?,
                            Some((_, None)) => {
                                return Err(GpuError::Cuda {
                                    op: "counting delete",
                                    bytes: 0,
                                    message: "grouped statuses without their positions".into(),
                                })
                            }
                        }
                    }
                    return Ok(());
                }
                dev.undo(&first, &status.slice(..len), stream)?;
                report.retries += 1;
                let mut steps = DeviceSteps {
                    dev: &mut dev,
                    keys: &keys,
                    status: &mut *status,
                    stats: &mut *stats,
                    stream,
                };
                let t = delete_in_order(&mut steps, 0..len, true)?;
                report.deleted += t.deleted;
                report.retries += t.retries;
                if let Some(out) = out.as_mut() {
                    status_bytes(kernels, &status.slice(..len), &mut out.slice_mut(r), stream)?;
                }
                Ok(())
            };
        let mut done = false;
        if partitioned {
            let r = self.partitioner.for_each_group(
                kernels,
                self.params.seed,
                parts,
                &hashed,
                want_positions,
                stream,
                |r, g, pos| {
                    let g = Hashed {
                        keys: g,
                        mode: MODE_HASHES,
                    };
                    chunk(r, Some((g, pos)))
                },
            );
            match r {
                Ok(()) => done = true,
                // The scratch could not be allocated and no chunk started: delete directly.
                Err(GpuError::OutOfMemory { .. })
                    if self.insert_kernel == InsertKernel::Auto && !started.get() => {}
                Err(e) => return Err(e),
            }
        }
        if !done {
            let mut a = 0;
            while a < n {
                let b = (a + direct_chunk).min(n);
                chunk(a..b, None)?;
                a = b;
            }
        }
        stream
            .synchronize()
            .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
        report.refused = n as u64 - report.deleted;
        self.keys = self.keys.map(|k| k.saturating_sub(report.deleted));
        Ok(report)
    }

    /// Deletes device-resident keys with the core's semantics (key by key, in input order; a key
    /// whose counters are not all positive when its turn comes is refused and changes nothing),
    /// and waits. `out`, if given, receives one byte per key: 1 = deleted, 0 = refused.
    pub fn remove_device(
        &mut self,
        keys: DeviceKeys<'_>,
        out: Option<&mut DeviceBuffer<u8>>,
    ) -> Result<DeleteReport, GpuError> {
        keys.check_shape()?;
        self.check_hash(matches!(keys, DeviceKeys::Hashes(_)))?;
        if let Some(o) = &out {
            if o.len() < keys.len() {
                return Err(GpuError::OutputTooShort {
                    needed: keys.len(),
                    found: o.len(),
                });
            }
        }
        let args = keys.to_args(&self.k, self.check_stream.raw())?;
        let stream = self.stream.raw().clone();
        self.remove_args(args, out.map(|o| o.view_mut()), &stream)
    }

    /// Deletes keys from host memory (chunk by chunk, in order) with the semantics of
    /// [`GpuCountingFilter::remove_device`]; `out`, if given, receives one byte per key.
    pub fn remove(
        &mut self,
        keys: Keys<'_>,
        mut out: Option<&mut [u8]>,
    ) -> Result<DeleteReport, GpuError> {
        self.check_hash(matches!(keys, Keys::Hashes(_)))?;
        if let Some(o) = &out {
            if o.len() < keys.len() {
                return Err(GpuError::OutputTooShort {
                    needed: keys.len(),
                    found: o.len(),
                });
            }
        }
        let stream = self.stream.raw().clone();
        let mut stager = std::mem::take(&mut self.stager);
        let mut out_chunk = self.out_chunk.take();
        let mut total = DeleteReport::default();
        let result = (|| -> Result<(), GpuError> {
            for r in plan(&keys, self.chunk_keys) {
                let args = stager.stage(&stream, &keys, r.clone())?;
                let dev_out = match &out {
                    Some(_) => {
                        if out_chunk.as_ref().is_none_or(|o| o.len() < r.len()) {
                            out_chunk = None;
                            out_chunk =
                                Some(alloc_zeros::<u8>(&stream, "delete results", r.len())?);
                        }
                        out_chunk.as_mut().map(|o| o.slice_mut(..r.len()))
                    }
                    None => None,
                };
                let rep = self.remove_args(args, dev_out, &stream)?;
                total.deleted += rep.deleted;
                total.refused += rep.refused;
                total.retries += rep.retries;
                if let (Some(out), Some(dev)) = (out.as_mut(), out_chunk.as_ref()) {
                    stream
                        .memcpy_dtoh(&dev.slice(..r.len()), &mut out[r.clone()])
                        .map_err(|e| GpuError::cuda("cuMemcpyDtoH", r.len() as u64, e))?;
                    stream
                        .synchronize()
                        .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
                }
            }
            Ok(())
        })();
        self.stager = stager;
        self.out_chunk = out_chunk;
        result.map(|()| total)
    }
}
