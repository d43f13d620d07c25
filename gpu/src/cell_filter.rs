//! [`GpuCellFilter`]: a cell-based filter in GPU memory (`docs/ARCHITECTURE.md`, "The cell
//! pipeline"): the projection image and one 4-, 8- or 16-bit cell per image bit, packed into u32
//! words as core's [`bloomlanes_core::cell`] says, with the updates and reductions of the cell
//! algebra, bit-identical to core's [`CellsMut`](bloomlanes_core::CellsMut). The counting and
//! spatial filters are instances ([`crate::GpuCountingFilter`], [`crate::GpuSpatialFilter`]) and
//! dereference to it; it dereferences to its image ([`GpuImage`]), so every static lookup path
//! answers membership.
//!
//! An update applies one [`CellUpdate`] to every key of a batch (the updates of one operation
//! commute, so any order gives the core's result): directly with compare-and-swap loops on the
//! cells' words, or, for batches the partitioner groups (see [`GpuImage::partitioned_for`]), over
//! the grouped hashes slice by slice in shared memory ([`GpuCellFilter::set_shared_slices`]) or
//! with the same compare-and-swap loops on the L2-resident words. The operand (a spatial class)
//! is one per batch or one per key; grouped keys carry their positions to find theirs. A
//! reduction ([`CellReduce`]) writes one answer per key, directly or partitioned like the image's
//! lookups ([`GpuImage::set_lookup_kernel`], over the cells' bytes).

use std::sync::Arc;

use bloomlanes_core::cell::cell_words;
use bloomlanes_core::{CellBits, CellReduce, CellUpdate, Keys, Params};
use cudarc::driver::{CudaSlice, CudaStream, CudaView};

use crate::buffer::alloc_zeros;
use crate::cells::{
    reduce_cells, Answers, Bounds, CellAnswer, CellCall, CellDev, CellShape, Operand, SliceBudget,
    SlicePlan, Sliced,
};
use crate::error::output_holds;
use crate::hashed::HashScratch;
use crate::image::filter_wrapper;
use crate::image::{alloc_len, GpuImage};
use crate::launch::KeyArgs;
use crate::lookup::LookupKernel;
use crate::partition::{GroupBy, Partitioner};
use crate::pipeline::plan;
use crate::stage::{staged, Stager};
use crate::{DeviceBuffer, DeviceKeys, GpuError, GpuStream, InsertKernel, KernelModule};

/// A cell filter's pieces, borrowed apart for one batch: its arrays as the kernels take them,
/// the partitioner, the hash scratch, and the slice shape (if the batch uses it) with the
/// partitions to group into.
pub(crate) struct CellParts<'a> {
    pub(crate) dev: CellDev<'a>,
    pub(crate) partitioner: &'a mut Partitioner,
    pub(crate) hashes: &'a mut HashScratch,
    pub(crate) sliced: Option<Sliced<'a>>,
    pub(crate) parts: u32,
    pub(crate) seed: u64,
    pub(crate) insert_kernel: InsertKernel,
}

/// A cell-based filter in GPU memory (see the module documentation).
pub struct GpuCellFilter {
    image: GpuImage,
    /// The cells: `cell_words(params, bits)` words.
    pub(crate) cells: CudaSlice<u32>,
    bits: CellBits,
    pub(crate) keys: Option<u64>,
    hashes: HashScratch,
    pub(crate) stager: Stager,
    /// One chunk of host operands.
    operands: Option<CudaSlice<u32>>,
    /// Whether partitioned batches use the shared-memory slice kernels (else the CAS kernels).
    shared_slices: bool,
    /// The device's shared memory, as the slice kernels size their slices by it.
    slice_budget: SliceBudget,
    /// The partition bounds of the slice kernels.
    bounds: Bounds,
}

fn bad_shape(what: &'static str, needed: usize, found: usize) -> GpuError {
    GpuError::InputTooShort {
        what,
        needed,
        found,
    }
}

filter_wrapper!(GpuCellFilter, image: GpuImage, [keys]);

impl GpuCellFilter {
    /// An empty cell filter with these parameters on device 0: their kind must have cells of
    /// 4, 8 or 16 bits (counting, stable, spatial).
    pub fn new(params: Params) -> Result<GpuCellFilter, GpuError> {
        let bits = params.kind.cell_bits();
        if bits == CellBits::One {
            return Err(GpuError::WrongKind {
                expected: "cell-based (counting, stable or spatial)",
                found: params.kind.name(),
            });
        }
        // As the core does: at least one block.
        let mut params = params;
        params.blocks = params.blocks.max(1);
        let cell_len = cell_words(&params, bits);
        let image = GpuImage::new(params, 1, cell_len * 4)?;
        // The cell kernels are compiled (or read from the cache) now, not on the first update.
        image.k.require(KernelModule::Cells)?;
        let stream = image.stream.raw().clone();
        let cells = alloc_zeros::<u32>(&stream, "cells", alloc_len("cells", cell_len, 4)?)?;
        image.stream.synchronize()?;
        Ok(GpuCellFilter {
            slice_budget: SliceBudget::new(&image.ctx),
            image,
            cells,
            bits,
            keys: Some(0),
            hashes: HashScratch::default(),
            stager: Stager::default(),
            operands: None,
            shared_slices: true,
            bounds: Bounds::default(),
        })
    }

    /// A device copy of a filter of `params` whose image and cells are `image` and `cells`
    /// (e.g. from core's `CellsMut::parts_mut` or the filters' `image_words` and `cell_words`),
    /// with `keys` keys.
    pub fn upload(
        params: Params,
        image: &[u32],
        cells: &[u32],
        keys: Option<u64>,
    ) -> Result<GpuCellFilter, GpuError> {
        let mut g = GpuCellFilter::new(params)?;
        let (wi, wc) = (g.image.words.len(), g.cells.len());
        if image.len() != wi || cells.len() != wc {
            return Err(bad_shape(
                "image and cell words",
                wi + wc,
                image.len() + cells.len(),
            ));
        }
        g.image.upload_words(image)?;
        let s = g.image.stream.raw().clone();
        s.memcpy_htod(cells, &mut g.cells)
            .map_err(|e| GpuError::cuda("cuMemcpyHtoD", wc as u64 * 4, e))?;
        g.image.stream.synchronize()?;
        g.keys = keys;
        Ok(g)
    }

    /// Copies the image and the cells into `image` and `cells` (exactly their lengths) and
    /// waits.
    pub fn download_into(&self, image: &mut [u32], cells: &mut [u32]) -> Result<(), GpuError> {
        let wc = self.cells.len();
        if cells.len() != wc || image.len() != self.image.words.len() {
            return Err(bad_shape(
                "image and cell words",
                image.len(),
                self.image.words.len(),
            ));
        }
        self.image.download_words(image)?;
        let s = self.image.stream.raw();
        s.memcpy_dtoh(&self.cells, cells)
            .map_err(|e| GpuError::cuda("cuMemcpyDtoH", wc as u64 * 4, e))?;
        self.image.stream.synchronize()
    }

    /// The cell width.
    pub fn cell_bits(&self) -> CellBits {
        self.bits
    }
    /// Keys in the filter, if known (a generic [`update_device`](Self::update_device) makes it
    /// unknown; the kinds' own inserts and deletes keep it).
    pub fn key_count(&self) -> Option<u64> {
        self.keys
    }
    /// Bytes of the image.
    pub fn image_bytes(&self) -> u64 {
        self.image.byte_len()
    }
    /// Bytes of the cells.
    pub fn cell_bytes(&self) -> u64 {
        self.cells.len() as u64 * 4
    }
    /// Whether partitioned updates run over the cells in shared memory, one CTA per slice of
    /// whole blocks (`true`, the default: several times faster), or with compare-and-swap loops
    /// on the L2-resident cell words (`false`). Results are identical.
    pub fn set_shared_slices(&mut self, on: bool) {
        self.shared_slices = on;
    }
    /// The choice made with [`GpuCellFilter::set_shared_slices`].
    pub fn shared_slices(&self) -> bool {
        self.shared_slices
    }
    /// Partitions a partitioned update groups its batch into: the image's
    /// [`partitions`](GpuImage::partitions) for the compare-and-swap kernels; with shared-memory
    /// slices at least one per slice, up to 2048, so that each slice scans few hashes.
    pub fn batch_partitions(&self) -> u32 {
        self.slice_plan(true)
            .map_or(self.image.partitions(), |p| p.parts)
    }
    /// Frees the scratch buffers (allocated again when needed).
    pub fn release_scratch(&mut self) {
        self.image.release_scratch();
        self.hashes.release();
        self.stager.release();
        self.operands = None;
        self.bounds.release();
    }
    /// Zeroes image and cells (the key count becomes 0), and waits.
    pub fn clear(&mut self) -> Result<(), GpuError> {
        self.image.zero_words()?;
        self.image
            .stream
            .raw()
            .memset_zeros(&mut self.cells)
            .map_err(|e| GpuError::cuda("cuMemsetD8Async", self.cells.len() as u64 * 4, e))?;
        self.keys = Some(0);
        self.image.stream.synchronize()
    }

    /// The slices of a partitioned batch's shared-memory kernels, if it uses them.
    fn slice_plan(&self, partitioned: bool) -> Option<SlicePlan> {
        if !partitioned || !self.shared_slices {
            return None;
        }
        self.slice_budget
            .plan(&self.image.params, self.bits, self.image.partitions())
    }

    /// The pieces of this filter borrowed apart for one batch: the slice shape's plan and
    /// bounds only if the batch is `partitioned` and uses the slice kernels.
    pub(crate) fn parts(
        &mut self,
        partitioned: bool,
        stream: &Arc<CudaStream>,
    ) -> Result<CellParts<'_>, GpuError> {
        let plan = self.slice_plan(partitioned);
        let parts = plan.map_or(self.image.partitions(), |p| p.parts);
        let sliced = match plan {
            Some(plan) => Some(Sliced {
                plan,
                bounds: self.bounds.get(stream)?,
            }),
            None => None,
        };
        let image = &mut self.image;
        Ok(CellParts {
            dev: CellDev {
                shape: CellShape {
                    kernels: &image.k,
                    params: &image.params,
                    bits: self.bits,
                },
                image: &mut image.words,
                cells: &mut self.cells,
            },
            partitioner: &mut image.partitioner,
            hashes: &mut self.hashes,
            sliced,
            parts,
            seed: image.params.seed,
            insert_kernel: image.insert_kernel,
        })
    }

    // ---- updates ------------------------------------------------------------------------------

    /// Applies `update` to every key of device-resident `keys` and waits: the cell algebra's
    /// write, bit-identical to [`CellsMut::update_hash`](bloomlanes_core::CellsMut) on each key
    /// in any order. The key count becomes unknown (the kinds' own inserts and deletes keep it).
    pub fn update_device(
        &mut self,
        keys: DeviceKeys<'_>,
        update: CellUpdate,
    ) -> Result<(), GpuError> {
        let s = self.image.stream.clone();
        let args = self.image.device_args(keys)?;
        self.update_args(update, args, None, s.raw())?;
        self.keys = None;
        s.synchronize()
    }

    /// Inserts device-resident `keys` with `update` (a kind's insert: the key count grows by
    /// their number), queued on `stream`, with `operands[i]` as key `i`'s operand if given.
    pub(crate) fn insert_keys(
        &mut self,
        keys: DeviceKeys<'_>,
        update: CellUpdate,
        operands: Option<CudaView<'_, u32>>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let args = self.image.device_args(keys)?;
        self.update_args(update, args, operands, stream)?;
        self.keys = self.keys.map(|k| k.saturating_add(keys.len() as u64));
        Ok(())
    }

    /// [`GpuCellFilter::insert_keys`] for keys in host memory, and waits.
    pub(crate) fn insert_host(
        &mut self,
        keys: Keys<'_>,
        update: CellUpdate,
        operands: Option<&[u32]>,
    ) -> Result<(), GpuError> {
        self.update_host(update, keys, operands)?;
        self.keys = self.keys.map(|k| k.saturating_add(keys.len() as u64));
        Ok(())
    }

    /// Queues `update` of `args` on `stream`, with `operands[i]` as key `i`'s operand if given
    /// (at least one per key): partitioned (in slices or with compare-and-swap loops) when the
    /// insert kernel says so, else direct; direct also when the partitioning scratch cannot be
    /// allocated under [`InsertKernel::Auto`].
    pub(crate) fn update_args(
        &mut self,
        update: CellUpdate,
        args: KeyArgs<'_>,
        operands: Option<CudaView<'_, u32>>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let n = args.len();
        if let Some(v) = &operands {
            if v.len() < n {
                return Err(bad_shape("operands", n, v.len()));
            }
        }
        let partitioned = self.image.partitioned_for(n);
        let mut c = self.parts(partitioned, stream)?;
        let kernels = c.dev.shape.kernels;
        let hashed = c.hashes.hashed(kernels, c.seed, stream, args)?;
        let operand = |r: std::ops::Range<usize>| match &operands {
            Some(v) => Operand::PerKey(v.slice(r)),
            None => Operand::One(0),
        };
        if partitioned {
            let (dev, sliced) = (&mut c.dev, &mut c.sliced);
            let by = GroupBy::new(kernels, c.seed, c.parts, operands.is_some());
            let r = c
                .partitioner
                .for_each_group(by, &hashed, stream, |r, grouped, pos| {
                    let mut call = CellCall::update(grouped, operand(r));
                    call.pos = pos;
                    match sliced.as_mut() {
                        Some(s) => dev.update_sliced(update, call, s, stream),
                        None => dev.update(update, call, stream),
                    }
                });
            match r {
                // Nothing was queued (the scratch is allocated first): update directly.
                Err(GpuError::OutOfMemory { .. }) if c.insert_kernel == InsertKernel::Auto => {}
                other => return other,
            }
        }
        let mut dev = c.dev;
        dev.update(update, CellCall::update(hashed, operand(0..n)), stream)
    }

    /// Applies `update` to keys from host memory (copied to the device chunk by chunk, with
    /// their operands if given: at least one per key) and waits.
    fn update_host(
        &mut self,
        update: CellUpdate,
        keys: Keys<'_>,
        operands: Option<&[u32]>,
    ) -> Result<(), GpuError> {
        self.image.check_hash(matches!(keys, Keys::Hashes(_)))?;
        if let Some(v) = operands {
            if v.len() < keys.len() {
                return Err(bad_shape("operands", keys.len(), v.len()));
            }
        }
        let stream = self.image.stream.raw().clone();
        let mut stager = std::mem::take(&mut self.stager);
        let mut staged_ops = self.operands.take();
        let result = (|| -> Result<(), GpuError> {
            for r in plan(&keys, self.image.chunk_keys) {
                let args = stager.stage(&stream, &keys, r.clone())?;
                let ops = match operands {
                    Some(v) => Some(staged(&mut staged_ops, &stream, "operand chunk", &v[r])?),
                    None => None,
                };
                self.update_args(update, args, ops, &stream)?;
            }
            Ok(())
        })();
        self.stager = stager;
        self.operands = staged_ops;
        result?;
        self.image.stream.synchronize()
    }

    // ---- reductions ---------------------------------------------------------------------------

    /// Combines the cells of each of device-resident `keys` with `reduce` (the cell algebra's
    /// read, [`bloomlanes_core::cell::reduce_cells`]) into `out[i]` (at least one per key; a
    /// `u8` answer takes cells of at most 8 bits), queued on `stream`: directly, or partitioned
    /// as the image's lookups are ([`GpuImage::set_lookup_kernel`], over the cells' bytes).
    pub fn reduce_device_async<T: CellAnswer>(
        &mut self,
        keys: DeviceKeys<'_>,
        reduce: CellReduce,
        out: &mut DeviceBuffer<T>,
        stream: &GpuStream,
    ) -> Result<(), GpuError> {
        let args = self.image.device_args(keys)?;
        self.reduce_args(reduce, args, T::answers(out.view_mut()), stream.raw())
    }

    /// [`GpuCellFilter::reduce_device_async`] on the filter's stream, waiting.
    pub fn reduce_device<T: CellAnswer>(
        &mut self,
        keys: DeviceKeys<'_>,
        reduce: CellReduce,
        out: &mut DeviceBuffer<T>,
    ) -> Result<(), GpuError> {
        let s = self.image.stream.clone();
        self.reduce_device_async(keys, reduce, out, &s)?;
        s.synchronize()
    }

    /// [`GpuCellFilter::reduce_device`] for keys in host memory (copied to the device chunk by
    /// chunk) into `out` (at least one per key).
    pub fn reduce<T: CellAnswer>(
        &mut self,
        keys: Keys<'_>,
        reduce: CellReduce,
        out: &mut [T],
    ) -> Result<(), GpuError> {
        self.image.check_hash(matches!(keys, Keys::Hashes(_)))?;
        output_holds(keys.len(), out.len())?;
        let stream = self.image.stream.raw().clone();
        let chunks = plan(&keys, self.image.chunk_keys);
        let most = chunks.iter().map(|r| r.len()).max().unwrap_or(0);
        let mut answers = alloc_zeros::<T>(&stream, "cell answers", most)?;
        let mut stager = std::mem::take(&mut self.stager);
        let result = (|| -> Result<(), GpuError> {
            for r in chunks {
                let args = stager.stage(&stream, &keys, r.clone())?;
                let mut view = answers.slice_mut(..r.len());
                self.reduce_args(reduce, args, T::answers(view.slice_mut(..)), &stream)?;
                stream
                    .memcpy_dtoh(&view, &mut out[r.clone()])
                    .map_err(|e| GpuError::cuda("cuMemcpyDtoH", r.len() as u64, e))?;
                // The staged keys and the answers are reused by the next chunk.
                stream
                    .synchronize()
                    .map_err(|e| GpuError::cuda("cuStreamSynchronize", 0, e))?;
            }
            Ok(())
        })();
        self.stager = stager;
        result
    }

    /// Queues the reduction of `args` into `out` on `stream`.
    fn reduce_args(
        &mut self,
        reduce: CellReduce,
        args: KeyArgs<'_>,
        mut out: Answers<'_>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), GpuError> {
        let n = args.len();
        if out.width() < 4 && u64::from(self.bits.max()) >> (8 * out.width()) != 0 {
            return Err(GpuError::Unsupported(
                "answers narrower than the cells: take u16 or u32 answers for 16-bit cells",
            ));
        }
        let bytes = self.cell_bytes();
        let image = &mut self.image;
        let partitioned =
            image
                .lookup
                .partitioned_for(bytes, image.partitioner.l2_or_fallback(), n);
        let auto = image.lookup.kernel == LookupKernel::Auto;
        let (kernels, seed) = (&*image.k, image.params.seed);
        let shape = CellShape {
            kernels,
            params: &image.params,
            bits: self.bits,
        };
        let hashed = self.hashes.hashed(kernels, seed, stream, args)?;
        let (words, cells) = (&image.words, &self.cells);
        if partitioned {
            let parts = image.partitioner.partitions_for_bytes(bytes);
            let by = GroupBy::new(kernels, seed, parts, true);
            let r = image
                .partitioner
                .for_each_group(by, &hashed, stream, |r, grouped, pos| {
                    let mut call = CellCall::reduce(grouped, out.slice_mut(r));
                    call.pos = pos;
                    reduce_cells(shape, words, cells, reduce, call, stream)
                });
            match r {
                // Nothing was queued (the scratch is allocated first): reduce directly.
                Err(GpuError::OutOfMemory { .. }) if auto => {}
                other => return other,
            }
        }
        reduce_cells(
            shape,
            words,
            cells,
            reduce,
            CellCall::reduce(hashed, out),
            stream,
        )
    }
}
