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
//! It is the cell algebra's counting instance: a [`GpuCellFilter`] (to which it dereferences,
//! and through it to the image's lookups) whose inserts are [`CellUpdate::Increment`], whose
//! deletes are [`CellUpdate::Decrement`] with the core's refusals, and whose count query is
//! [`CellReduce::Min`]. Inserts and deletes of device-resident batches into filters whose image
//! and counters together are larger than half the L2 cache are partitioned under
//! [`InsertKernel::Auto`] (as the static filter's inserts). A partitioned batch is then applied
//! slice by slice in shared memory (one CTA copies a slice of whole blocks in, updates its
//! counters and image with shared-memory compare-and-swap loops, and copies it back; see
//! `cells/slices.rs`), or, with [`GpuCellFilter::set_shared_slices`]`(false)`, with the
//! compare-and-swap loops on the L2-resident counter words. On an H100 at 2 GiB of counters and 2^28 keys the slices are 1.9×
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
//! shared-memory atomics and the grouping, not by DRAM (8.6 G/s measured, `cells/slices.rs`).

use std::ops::Range;
use std::sync::Arc;

use bloomlanes_core::{
    CellReduce, CellUpdate, CounterBits, CountingFilter, Filter, FilterKind, Keys, Params,
};
use cudarc::driver::{CudaSlice, CudaStream, CudaViewMut};

use crate::buffer::alloc_zeros;
use crate::cell_filter::CellParts;
use crate::counting_delete::{
    attempt, delete_in_order, status_bytes, status_scatter, undo, DeleteReport, DeleteWork,
    DeviceSteps,
};
use crate::error::output_holds;
use crate::hashed::Hashed;
use crate::image::filter_wrapper;
use crate::launch::KeyArgs;
use crate::partition::GroupBy;
use crate::pipeline::plan;
use crate::{DeviceBuffer, DeviceKeys, GpuCellFilter, GpuError, GpuStream, InsertKernel};

/// Keys per chunk of an unpartitioned device delete (one status word each).
const DIRECT_DELETE_CHUNK_KEYS: usize = 1 << 26;

/// A counting filter in GPU memory: inserts, deletes, counts and lookups of batches,
/// bit-identical to [`CountingFilter`]. It dereferences to its [`GpuCellFilter`] (settings,
/// generic updates and reductions) and through it to its image's lookups.
pub struct GpuCountingFilter {
    cells: GpuCellFilter,
    work: DeleteWork,
    /// Per-key results of one chunk of a host-memory delete.
    out_chunk: Option<CudaSlice<u8>>,
}

filter_wrapper!(GpuCountingFilter, cells: GpuCellFilter, []);

/// Refuses parameters of another kind than a counting filter (before anything is allocated).
fn counting_kind(params: &Params) -> Result<(), GpuError> {
    match params.kind {
        FilterKind::Counting { .. } => Ok(()),
        other => Err(GpuError::WrongKind {
            expected: "counting",
            found: other.name(),
        }),
    }
}

impl GpuCountingFilter {
    /// An empty counting filter with these parameters (their kind must be
    /// [`FilterKind::Counting`]) on device 0.
    pub fn new(params: Params) -> Result<GpuCountingFilter, GpuError> {
        counting_kind(&params)?;
        Ok(GpuCountingFilter::over(GpuCellFilter::new(params)?))
    }

    /// A device copy of a host counting filter (a stable filter is refused: its inserts differ).
    pub fn upload(filter: &CountingFilter) -> Result<GpuCountingFilter, GpuError> {
        let params = *filter.params();
        counting_kind(&params)?;
        let (image, counters) = (filter.image_words(), filter.counter_words());
        let cells = GpuCellFilter::upload(params, image, counters, filter.key_count())?;
        Ok(GpuCountingFilter::over(cells))
    }

    fn over(cells: GpuCellFilter) -> GpuCountingFilter {
        GpuCountingFilter {
            cells,
            work: DeleteWork::default(),
            out_chunk: None,
        }
    }

    /// The filter copied back to the host: equal to the core's filter after the same operations.
    pub fn download(&self) -> Result<CountingFilter, GpuError> {
        let mut f = CountingFilter::new(*self.cells.params()).expect("counting parameters");
        {
            let mut view = f.as_view_mut();
            let (image, counters) = view.parts_mut();
            self.cells.download_into(image, counters)?;
        }
        f.set_key_count(self.cells.key_count());
        Ok(f)
    }

    /// The projection copied back to the host as a static filter (bit set iff its counter is
    /// positive): what exports to the static format, Parquet and the HDL banks.
    pub fn download_projection(&self) -> Result<Filter, GpuError> {
        let mut f = Filter::new(self.cells.params().with_kind(FilterKind::Static));
        self.cells.download_words(f.words_mut())?;
        f.set_key_count(self.cells.key_count());
        Ok(f)
    }

    /// The counter width.
    pub fn counter_bits(&self) -> CounterBits {
        match self.cells.cell_bits() {
            bloomlanes_core::CellBits::Eight => CounterBits::Eight,
            _ => CounterBits::Four,
        }
    }
    /// Bytes of the counters.
    pub fn counter_bytes(&self) -> u64 {
        self.cells.cell_bytes()
    }
    /// Frees the scratch buffers (allocated again when needed).
    pub fn release_scratch(&mut self) {
        self.cells.release_scratch();
        self.work.release();
        self.out_chunk = None;
    }

    // ---- inserts and counts -------------------------------------------------------------------

    /// Inserts device-resident keys ([`CellUpdate::Increment`]), queued on `stream` (string
    /// offsets are checked on the device first, which waits).
    pub fn insert_device_async(
        &mut self,
        keys: DeviceKeys<'_>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        self.cells
            .insert_keys(keys, CellUpdate::Increment, None, stream.raw())
    }

    /// Inserts device-resident keys and waits.
    pub fn insert_device(&mut self, keys: DeviceKeys<'_>) -> Result<(), GpuError> {
        let s = self.cells.stream.clone();
        self.insert_device_async(keys, &s)?;
        s.synchronize()
    }

    /// Inserts keys from host memory (copied to the device chunk by chunk) and waits.
    pub fn insert(&mut self, keys: Keys<'_>) -> Result<(), GpuError> {
        self.cells.insert_host(keys, CellUpdate::Increment, None)
    }

    /// The count of each of device-resident `keys` into `out` ([`CellReduce::Min`] of its
    /// counters, as [`CountingFilter::count_hash`]: 0 = absent), and waits.
    pub fn count_device(
        &mut self,
        keys: DeviceKeys<'_>,
        out: &mut DeviceBuffer<u32>,
    ) -> Result<(), GpuError> {
        self.cells.reduce_device(keys, CellReduce::Min, out)
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
            output_holds(n, o.len())?;
        }
        let mut partitioned = self.cells.partitioned_for(n);
        let direct_chunk = (self.cells.partitioner.scratch_keys()).min(DIRECT_DELETE_CHUNK_KEYS);
        let CellParts {
            mut dev,
            partitioner,
            hashes,
            mut sliced,
            parts,
            seed,
            insert_kernel,
        } = self.cells.parts(partitioned, stream)?;
        let work = &mut self.work;
        let kernels = dev.shape.kernels;
        let hashed = hashes.hashed(kernels, seed, stream, args)?;
        // Every chunk finds its status buffer allocated (a partitioned chunk holds at most
        // min(n, scratch cap) keys, a direct one min(n, direct_chunk)): nothing allocates once a
        // chunk has started, so an out-of-memory error from the partitioned path means that
        // nothing was deleted yet (checked with `started` too) and the direct path may run.
        if partitioned {
            match work.buffers(stream, n.min(partitioner.scratch_keys())) {
                Ok(_) => {}
                Err(GpuError::OutOfMemory { .. }) if insert_kernel == InsertKernel::Auto => {
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
                let a = attempt(
                    &mut dev,
                    &first,
                    &mut status.slice_mut(..len),
                    stats,
                    slices,
                    stream,
                )?;
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
                undo(&mut dev, &first, status.slice_mut(..len), stream)?;
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
            let by = GroupBy::new(kernels, seed, parts, want_positions);
            let r = partitioner
                .for_each_group(by, &hashed, stream, |r, g, pos| chunk(r, Some((g, pos))));
            match r {
                Ok(()) => done = true,
                // The scratch could not be allocated and no chunk started: delete directly.
                Err(GpuError::OutOfMemory { .. })
                    if insert_kernel == InsertKernel::Auto && !started.get() => {}
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
        self.cells.keys = self.cells.keys.map(|k| k.saturating_sub(report.deleted));
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
        if let Some(o) = &out {
            output_holds(keys.len(), o.len())?;
        }
        let args = self.cells.device_args(keys)?;
        let stream = self.cells.stream.raw().clone();
        self.remove_args(args, out.map(|o| o.view_mut()), &stream)
    }

    /// Deletes keys from host memory (chunk by chunk, in order) with the semantics of
    /// [`GpuCountingFilter::remove_device`]; `out`, if given, receives one byte per key.
    pub fn remove(
        &mut self,
        keys: Keys<'_>,
        mut out: Option<&mut [u8]>,
    ) -> Result<DeleteReport, GpuError> {
        self.cells.check_hash(matches!(keys, Keys::Hashes(_)))?;
        if let Some(o) = &out {
            output_holds(keys.len(), o.len())?;
        }
        let stream = self.cells.stream.raw().clone();
        let mut stager = std::mem::take(&mut self.cells.stager);
        let mut out_chunk = self.out_chunk.take();
        let mut total = DeleteReport::default();
        let result = (|| -> Result<(), GpuError> {
            for r in plan(&keys, self.cells.chunk_keys) {
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
        self.cells.stager = stager;
        self.out_chunk = out_chunk;
        result.map(|()| total)
    }
}
